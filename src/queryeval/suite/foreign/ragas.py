"""ragas ``EvaluationDataset`` samples (``SingleTurnSample``), JSONL / CSV / JSON / Parquet /
a saved HF dataset, as a suite and as recorded outputs.

Fields: ``user_input`` (the question), ``reference_contexts`` (the texts that answer it:
the relevant chunks), ``reference`` (the reference answer), ``retrieved_contexts`` and
``response`` (what the system retrieved and answered: recorded outputs). As a suite, a
sample with ``reference_contexts`` is a retrieval question (its contexts matched to the
corpus, :mod:`~queryeval.suite.foreign.contexts`); one with only ``reference`` is an
answer-only sample (``target.reference``). DeepEval's fields map onto the same roles
(:mod:`~queryeval.suite.foreign.deepeval`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.foreign import build
from queryeval.suite.foreign.contexts import ChunkIndex, relevant_from_texts, retrieved_from_texts
from queryeval.suite.foreign.records import Record, text, text_list
from queryeval.suite.models import Case


@dataclass(frozen=True)
class Roles:
    """Which field plays which part."""

    question: str
    reference_contexts: str
    reference: str
    retrieved_contexts: str
    response: str
    joined: str = ""
    """The delimiter the writer joins a list of contexts with in a text (DeepEval's ``|`` in
    JSONL and CSV), "" when it writes lists as lists."""


RAGAS_ROLES = Roles("user_input", "reference_contexts", "reference", "retrieved_contexts",
                    "response")
RAGAS_V01_ROLES = Roles("question", "", "ground_truth", "contexts", "answer")
"""ragas 0.1's names (``question``, ``contexts``, ``answer``, ``ground_truth``): ``contexts``
are what the system retrieved, so as a suite a sample is answer-only (its ground truth)."""


def _question(rec: Record, path: Path, roles: Roles) -> str:
    value = text(rec, roles.question, path)
    if not value.strip():
        raise InputError("empty question", path=path, field=roles.question, **rec.where)
    return value


def contexts_of(rec: Record, field: str, path: Path, index: ChunkIndex | None,
                roles: Roles) -> list[str] | None:
    """A contexts field as a list of texts (:func:`~.records.text_list`), or None. A list
    joined into one text with ``roles.joined`` is refused when the corpus proves it may
    not split back: a chunk holding the delimiter lies within the text."""
    contexts = text_list(rec, field, path, joined=roles.joined)
    raw = rec.data.get(field)
    if roles.joined and index is not None and isinstance(raw, str) and roles.joined in raw \
            and not (rec.table and raw.strip().startswith("[")):
        chunk = index.holding(roles.joined, raw)
        if chunk is not None:
            raise InputError(
                f"a {roles.joined!r}-joined list that cannot be read unambiguously: the "
                f"corpus's chunk {chunk.chunk_id!r} holds {roles.joined!r} and lies within it, "
                f"so splitting at each {roles.joined!r} would cut it in two; save the file as "
                "JSON (save_as(file_type=\"json\") keeps lists)",
                path=path, field=field, **rec.where)
    return contexts


def sample_kind(rec: Record, path: Path, roles: Roles, task_kind: str) -> str:
    """The kind of a recorded sample for a run of ``task_kind`` (``retrieval`` or
    ``answer``): ``task_kind`` itself when the sample serves that run, else the other.

    A retrieval run is not served by an answer-only sample: one with no reference contexts
    and no retrieved contexts (absent, null, or an empty table cell: DeepEval's CSV writes
    an empty list and none alike). A free-form run is not served by a retrieval question
    (reference contexts: the suite reads it as one) nor by a sample with no response."""
    has_reference_contexts = bool(roles.reference_contexts and contexts_of(
        rec, roles.reference_contexts, path, None, roles))
    if task_kind == "retrieval":
        raw = rec.data.get(roles.retrieved_contexts)
        no_retrieval = raw is None or (rec.table and isinstance(raw, str) and not raw.strip())
        return "answer" if not has_reference_contexts and no_retrieval else "retrieval"
    if has_reference_contexts or rec.data.get(roles.response) is None:
        return "retrieval"
    return "answer"


def to_case(rec: Record, path: Path, index: ChunkIndex | None,
            roles: Roles = RAGAS_ROLES) -> Case:
    question = _question(rec, path, roles)
    reference = text(rec, roles.reference, path, required=False)
    contexts = contexts_of(rec, roles.reference_contexts, path, index, roles) \
        if roles.reference_contexts else None
    if contexts:
        relevant = relevant_from_texts(contexts, index, path=path, where=rec.where,
                                       field=roles.reference_contexts)
        target = build.retrieval_target(relevant, reference)
    elif reference:
        target = build.reference_target([reference])
    else:
        needs = (f"{roles.reference_contexts} (a retrieval question) or "
                 if roles.reference_contexts else "")
        raise InputError(f"nothing to score: a suite sample needs {needs}{roles.reference} "
                         "(an answer)", path=path, **rec.where)
    cid = build.case_id(rec.data.get("id"), question, reference)
    return build.make_case(cid, [{"role": "user", "content": question}], target, path=path,
                           where=rec.where)


def cases(records: list[Record], path: Path, index: ChunkIndex | None,
          roles: Roles = RAGAS_ROLES) -> list[tuple[Case, dict]]:
    return [(to_case(r, path, index, roles), r.where) for r in records]


def recorded_line(rec: Record, path: Path, index: ChunkIndex | None,
                  roles: Roles = RAGAS_ROLES) -> dict:
    """A sample as a recorded-outputs line: ``case_id`` (the suite's id of the same
    question and reference), ``retrieved_chunks`` (its retrieved contexts, matched to the
    corpus) and ``response``, each when the sample has it; with both, ``answer`` too (the
    retrieval task's generated answer, scored beside the retrieval)."""
    question = _question(rec, path, roles)
    reference = text(rec, roles.reference, path, required=False)
    line: dict = {"case_id": build.case_id(rec.data.get("id"), question, reference)}
    retrieved = contexts_of(rec, roles.retrieved_contexts, path, index, roles)
    if retrieved is not None:
        line["retrieved_chunks"] = retrieved_from_texts(retrieved, index)
    if rec.data.get(roles.response) is not None:
        line["response"] = text(rec, roles.response, path, required=False)
        if retrieved is not None:  # the generated answer beside the retrieval: scored by EM/F1
            line["answer"] = line["response"]
    if len(line) == 1:
        raise InputError(f"no output: a recorded sample needs {roles.retrieved_contexts} or "
                         f"{roles.response}", path=path, **rec.where)
    return line
