"""DeepEval goldens and test cases (``EvaluationDataset.save_as(file_type="json")``: a JSON
array of ``{input, expected_output?, context?, retrieval_context?, actual_output?}``; JSONL
and CSV too).

The fields play ragas' parts (:mod:`~queryeval.suite.foreign.ragas`): ``input`` the
question, ``context`` the ground-truth contexts (relevant chunks), ``expected_output`` the
reference answer; ``retrieval_context`` and ``actual_output`` a test case's recorded
outputs. A golden without ``context`` is an answer-only sample (``target.reference``).
JSONL and CSV join the context lists with ``|`` (:data:`DEEPEVAL_ROLES`).
"""

from __future__ import annotations

from queryeval.suite.foreign.ragas import Roles

DEEPEVAL_ROLES = Roles("input", "context", "expected_output", "retrieval_context",
                       "actual_output", joined="|")
"""``save_as(file_type="jsonl"|"csv")`` writes ``context`` and ``retrieval_context`` as one
text joined with ``|`` (an empty list as ``""``), the JSON file as lists; a text is split at
each ``|`` as DeepEval's own readers do (docs/formats.md "List cells")."""
