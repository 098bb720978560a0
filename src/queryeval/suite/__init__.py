"""Suites: typed cases and the readers for each native format."""

from queryeval.suite.loader import Suite, load_suite
from queryeval.suite.models import Case, Target, Turn

__all__ = ["Case", "Suite", "Target", "Turn", "load_suite"]
