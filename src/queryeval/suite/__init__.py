"""Suites: typed cases and the readers for each native format."""

from queryeval.suite.common import Suite
from queryeval.suite.loader import load_suite
from queryeval.suite.models import Case, Target, Turn

__all__ = ["Case", "Suite", "Target", "Turn", "load_suite"]
