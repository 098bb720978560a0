"""The run log's types: the batch file, one record of the results JSONL (a union by task
kind) and the metrics file, as pydantic models (docs/run-log.md, "Models").

What they are for: :mod:`queryeval.run.log` reads every batch and metrics file through
:class:`Batch` and :class:`Metrics` (one reader each, one line naming the file and field when
a file is not a run log), ``queryeval schema --run-log`` publishes their JSON Schema
(:func:`run_log_json_schema`), and a finished log's records can be read typed
(:meth:`queryeval.run.log.RunLog.typed_records`). The files are still written from the
plain dicts the tasks build, so every byte written is what it was; the models describe
them and are checked against every shipped example's log (tests/run/test_run_log_model.py).

Every model keeps fields it does not declare (``extra="allow"``): a field a newer writer
adds, or a task option a custom task stores, is read and kept, never lost or refused. What a
model declares is what every writer of this schema version writes, checked for its type;
what older writers of the same version (``queryeval.runlog/1``) did not write yet is
optional (``started_at``, ``error_summary``, ``inputs``, ``label``, ...).

A record line does not name its task kind: the kind is the batch's ``task`` (one results
file holds one kind). :data:`RECORD_MODELS` maps each built-in kind to its record model and
:func:`record_model` picks it (a registered custom task gets :class:`Record`, the fields
every kind writes); :data:`BatchRecords` is the union of a batch's records, discriminated by
that kind.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    TypeAdapter,
    create_model,
    field_validator,
)

LOG_SCHEMA = "queryeval.runlog/1"
"""The version every batch and metrics file carries; a reader refuses any other."""


class LogModel(BaseModel):
    """A part of the run log: undeclared fields are kept (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow")


class LogFile(LogModel):
    """A JSON file of the run log (batch, metrics): the typed model, and the document as it
    was read (:attr:`doc`: key order and number forms kept, what a rewrite writes back)."""

    _doc: dict = PrivateAttr(default_factory=dict)

    @classmethod
    def from_doc(cls, doc: dict) -> Self:
        """``doc`` validated (``ValidationError`` when it is not this file), kept as read."""
        model = cls.model_validate(doc)
        model._doc = doc
        return model

    @property
    def doc(self) -> dict:
        """The document as read (the same dict object, not a copy)."""
        return self._doc


# --- batch_<id>.json -------------------------------------------------------------------------
class EvaluationConfig(LogModel):
    """How the run was configured (absolute paths; task options as the task validated them)."""

    suite: str | None = None
    labels: str | None = None
    task: str | None = None
    system: Any = None
    """``--system`` as given (a spec string), or a description of an in-process system."""
    responses: str | None = None
    out: str | None = None
    concurrency: int | None = None
    timeout: float | None = None
    retries: int | None = None
    backoff: float | None = None
    task_options: dict[str, Any] = Field(default_factory=dict)
    max_error_rate: float | None = None
    repeats: int | None = None
    num_samples: int | None = None
    sequential: dict[str, Any] | None = None
    """``--stop-when-decided``: baseline, alpha, margin, metric, seed."""


class SuiteInfo(LogModel):
    path: str | None = None
    hash: str | None = None
    """``sha256:`` over the suite's files."""
    files: list[str] = Field(default_factory=list)
    cases: int | None = None


class SoftwareInfo(LogModel):
    package_version: str | None = None
    git_commit: str | None = None
    python: str | None = None
    platform: str | None = None


class PinnedFile(LogModel):
    hash: str
    """``blake2b:`` and the hex digest."""
    size: int


class Inputs(LogModel):
    """Every input file, hashed when the run started (checked again on resume)."""

    pinned_at: str | None = None
    files: dict[str, PinnedFile] = Field(default_factory=dict)


class InputChange(LogModel):
    """An input that changed under ``--resume --force`` (run/evaluate.py ``_repin``): its
    hash when the run was pinned and now (``blake2b:`` and the hex digest; None where the
    file was new, or is gone)."""

    path: str
    was: str | None = None
    now: str | None = None


class Resume(LogModel):
    """One ``--resume``: when, the options it changed, what changed under ``--force``."""

    at: str
    options: dict[str, Any] | None = None
    inputs_changed: list[InputChange] | None = None
    suite_hash_was: str | None = None


class Batch(LogFile):
    """``batch_<id>.json``: configuration, software and suite, pinned inputs, status."""

    log_schema: Literal["queryeval.runlog/1"]
    batch_id: str
    timestamp: str | None = None
    status: Literal["running", "interrupted", "complete"]
    task: str
    label: str | None = None
    """``--name``, else the default label (older logs have none)."""
    evaluation_config: EvaluationConfig = Field(default_factory=EvaluationConfig)
    suite_info: SuiteInfo | None = None
    software_info: SoftwareInfo | None = None
    inputs: Inputs | None = None
    resumed_at: list[str] = Field(default_factory=list)
    resumes: list[Resume] = Field(default_factory=list)
    interrupted_at: list[str] = Field(default_factory=list)
    completed_at: str | None = None
    derived_from: str | None = None
    """The parent's batch id, in a derived batch (retrieval's smaller k)."""
    derived_batches: dict[str, str] = Field(default_factory=dict)
    """A parent's derived batches: their options (JSON text) -> batch id."""
    sequential: dict[str, Any] | None = None

    @field_validator("batch_id")
    @classmethod
    def _file_name_safe(cls, v: str) -> str:
        if not v or any(c in v for c in "/\\\0"):
            raise ValueError("batch_id must be a file-name-safe string (not empty, no /, \\ or NUL)")
        return v


# --- metrics_<id>.json -----------------------------------------------------------------------
class Calls(LogModel):
    total: int
    """One call per scored turn."""
    failed: int


class ErrorKind(LogModel):
    """One entry of ``error_summary``: an error kind, in order of first appearance."""

    kind: str
    count: int
    first_message: str
    case: str


class Metrics(LogFile):
    """``metrics_<id>.json``: the task's aggregate (``overall_metrics``, ``group_metrics``
    and, per task, more sections), the calls and the errors."""

    log_schema: Literal["queryeval.runlog/1"]
    batch_id: str
    timestamp: str
    task: str | None = None
    overall_metrics: dict[str, Any]
    group_metrics: dict[str, Any] = Field(default_factory=dict)
    calls: Calls | None = None
    error_summary: list[ErrorKind] = Field(default_factory=list)
    repeats: dict[str, Any] | None = None
    """``--repeats``: pass rate, pass@k, pass^k, flaky cases (docs/repeats.md)."""
    sequential: dict[str, Any] | None = None


# --- one line of results_<id>.jsonl ----------------------------------------------------------
class CallError(LogModel):
    """What a failed call (or scoring step) left: its kind (``timeout``, ``connection``,
    ``missing``, ``malformed``, ...) and message."""

    kind: str
    message: str | None = None


class Record(LogModel):
    """The fields every task kind writes (:meth:`queryeval.tasks.base.Task.base_record`),
    ``scores`` and the run's own: ``repeat`` (with ``--repeats``, the second key) and
    ``started_at`` (epoch seconds of the case's first call; older runs have none)."""

    case_id: str
    repeat: int | None = Field(default=None, ge=0)
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    cluster: str | None = None
    status: Literal["ok", "error"]
    error_kinds: list[str] = Field(default_factory=list)
    scores: dict[str, Any] | None = None
    """The case's figures (None: not scored, e.g. a gold query that failed)."""
    started_at: float | None = None


class TurnRecord(LogModel):
    """One scored turn of a multi-turn task (selection, fields): target and output kept, so
    the log can be re-scored."""

    turn: int
    question: str | None = None
    target: Any = None
    output: Any = None
    error: CallError | None = None
    attempts: int = 0
    latency_ms: float | None = None
    scores: dict[str, Any]


class SelectionTurn(TurnRecord):
    target: list[dict[str, Any]]
    """The expected dimensions and their values."""


class SelectionRecord(Record):
    """``indicator_selection`` (seed 000): each scored turn's selection and its macro
    precision and recall; the case's scores are their means."""

    turns: list[SelectionTurn]
    scores: dict[str, Any]


class FieldsTurn(TurnRecord):
    target: dict[str, list[str]]
    """Each field's expected values."""


class FieldsRecord(Record):
    """``fields`` (seed 004): each turn's ranked values per field, recall, MRR, passed."""

    turns: list[FieldsTurn]
    scores: dict[str, Any]


class SingleTurnRecord(Record):
    """What a single-turn task writes about its one call."""

    error: CallError | None = None
    attempts: int | None = None
    latency_ms: float | None = None


class Subquestion(LogModel):
    name: str
    expected: str
    extracted: str | None = None
    matched: bool


class AnswersRecord(SingleTurnRecord):
    """``answers`` (seed 001): the response, each ``@name[value]`` sub-answer expected,
    extracted and matched; ``scores`` is None for a missing answer under ``--missing skip``."""

    turn: int
    question: str
    concepts: list[Any] = Field(default_factory=list)
    level: str | None = None
    response: str | None = None
    reformatted: str | None = None
    expected: list[tuple[str, str]]
    answered: bool
    skipped: bool
    extracted: dict[str, Any]
    subquestions: list[Subquestion]
    judge: dict[str, Any] | None = None
    decided_by: str | None = None
    rules_verdict: Literal["pass", "fail"] | None = None


class ExpectedChunk(LogModel):
    name: str | None = None
    source: str | None = None
    chunk_id: str | None = None
    content_hash: str | None = None


class RetrievalRecord(SingleTurnRecord):
    """``retrieval`` (seed 002): the chunks retrieved (cut at ``k``), the expected chunk(s)
    and the evaluation at ``k``; with an answer, its scores."""

    qa_pair_id: str
    question: str
    expected_answer: str | None = None
    dataset: str | None = None
    expected_chunk: ExpectedChunk
    expected_chunks: list[dict[str, Any]] | None = None
    """Every relevant chunk (graded) of a case with several."""
    evaluation_result: dict[str, Any]
    retrieved_chunks: list[dict[str, Any]]
    all_retrieved_chunks: list[dict[str, Any]] | None = None
    """What ``min_score`` dropped too, for re-scoring."""
    k: int
    generated_answer: str | None = None
    answer_scores: dict[str, Any] | None = None
    answer_judge: dict[str, Any] | None = None


class QueryRecord(SingleTurnRecord):
    """``query`` (seed 003): gold and predicted query, their executions, the comparison of
    the result tables and what explains it; a test suite's refutations when asked."""

    question: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    language: str | None = None
    gold_query: str | None = None
    gold_alternatives: list[str] | None = None
    gold_tables: list[dict[str, Any]] | None = None
    modes: dict[str, Any] = Field(default_factory=dict)
    predicted_query: Any = None
    gold_execution: dict[str, Any] | None = None
    predicted_execution: dict[str, Any] | None = None
    comparison: dict[str, Any] | None = None
    mapping: list[Any] | None = None
    mapping_exact: bool | None = None
    order_score: float | None = None
    gold_matched: int | None = None
    result_sample: dict[str, Any] | None = None
    test_suite: dict[str, Any] | None = None
    execution: Any = None
    explanation: list[dict[str, Any]] | None = None
    touched: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    decided_by: str | None = None
    scoring_error: CallError | None = None


class FreeformRecord(SingleTurnRecord):
    """``freeform``: the deterministic ladder's rule and verdict, a judge's verdict for the
    rest, and what decided the case."""

    turn: int
    question: str
    response: str | None = None
    reference: dict[str, Any]
    judge: dict[str, Any] | None = None
    rule: str
    rule_verdict: str | None = None
    detail: str | None = None
    decided_by: str
    passed: bool


RECORD_MODELS: dict[str, type[Record]] = {
    "indicator_selection": SelectionRecord,
    "fields": FieldsRecord,
    "answers": AnswersRecord,
    "retrieval": RetrievalRecord,
    "query": QueryRecord,
    "freeform": FreeformRecord,
}
"""Each built-in task kind's record model."""

OTHER_KIND = "*"
"""The tag of a task kind that is not built in (a registered custom task)."""


def record_model(task: str | None) -> type[Record]:
    """The record model of the task kind ``task`` (the batch's ``task``)."""
    return RECORD_MODELS.get(task or "", Record)


def _kind_tag(value: Any) -> str:
    """The union's discriminator: the task kind when it is built in, else ``*``."""
    task = value.get("task") if isinstance(value, dict) else getattr(value, "task", None)
    return task if isinstance(task, str) and task in RECORD_MODELS else OTHER_KIND


def _records_of(kind: str, model: type[Record]) -> type[BaseModel]:
    lit = Literal[kind] if kind != OTHER_KIND else str  # type: ignore[valid-type]
    return create_model(f"{model.__name__}s", task=(lit, ...), records=(list[model], ...),
                        __doc__=f"The records of one batch of task kind {kind!r}.")


_KINDS = {**RECORD_MODELS, OTHER_KIND: Record}
BatchRecords = Annotated[
    Union[tuple(Annotated[_records_of(k, m), Tag(k)] for k, m in _KINDS.items())],  # noqa: UP007
    Discriminator(_kind_tag),
]
"""The records of one batch, ``{"task": KIND, "records": [...]}``: a union discriminated by
the task kind (``*`` for a kind not built in), so each record is validated by its kind's
model."""

BATCH_RECORDS: TypeAdapter = TypeAdapter(BatchRecords)


def validate_records(task: str | None, records: list) -> list[Record]:
    """``records`` (dicts, as read from the JSONL) as the typed records of a batch of task
    kind ``task``, in one call (:data:`BatchRecords`). Raises ``ValidationError`` (``loc``
    starts ``(kind, "records", index)``)."""
    return BATCH_RECORDS.validate_python({"task": task or "", "records": records}).records


# --- the published JSON Schema ---------------------------------------------------------------
def run_log_json_schema() -> dict:
    """The JSON Schema of the run log (``queryeval schema --run-log``): ``batch``,
    ``record`` and ``metrics`` under ``properties`` (each file's schema), every model under
    ``$defs``. ``record`` is the union over task kinds (``anyOf``); its ``x-discriminator``
    says where the kind is read (the batch's ``task``) and maps each kind to its model; a
    kind not listed (a custom task) follows ``Record``."""
    from pydantic.json_schema import models_json_schema

    models = [Batch, Metrics, Record, *RECORD_MODELS.values()]
    refs, defs = models_json_schema([(m, "validation") for m in models],
                                    ref_template="#/$defs/{model}")
    ref = {m: refs[(m, "validation")]["$ref"] for m in models}
    mapping = {kind: ref[m] for kind, m in RECORD_MODELS.items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"queryeval run log ({LOG_SCHEMA})",
        "description": (
            "The files of one batch: batch_<id>.json (batch), each line of "
            "results_<id>.jsonl (record: the model of the batch's task kind) and "
            "metrics_<id>.json (metrics). Fields not declared are allowed."),
        "type": "object",
        "properties": {
            "batch": {"$ref": ref[Batch]},
            "record": {
                "anyOf": [*({"$ref": r} for r in mapping.values()), {"$ref": ref[Record]}],
                "x-discriminator": {"source": "batch_<id>.json: task", "mapping": mapping,
                                  "default": ref[Record]},
            },
            "metrics": {"$ref": ref[Metrics]},
        },
        "$defs": defs["$defs"],
    }
