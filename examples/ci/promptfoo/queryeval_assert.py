"""promptfoo loads a Python assertion by file path: this file hands it queryeval's
(queryeval.integrations.promptfoo.get_assert; see docs/ci.md)."""

from queryeval.integrations.promptfoo import get_assert  # noqa: F401
