"""Seed 002: retrieval recall@k over chunks, with the reference's run-log layout.

A question is answered correctly at k when a chunk whose content's MD5 equals the question's
``content_hash`` is among the first k retrieved (after ``min_score`` drops low scores). One
retrieval pass at the largest k serves every k: the run is scored at the largest k and one
more batch (four files) is derived for each smaller k. See docs/retrieval.md.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from queryeval.engines.judge import JudgeOptions
from queryeval.errors import ConfigError
from queryeval.metrics.squad import DEFAULT_VERSION, SquadOption
from queryeval.suite.models import Case
from queryeval.suite.retrieval import content_hash
from queryeval.tasks import judging
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Flag, Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Figures, Groups, Overall, ReportItem, Workbook
from queryeval.tasks.retrieval.aggregate import MEAN_METRICS, AtK, DatasetAcc, chunk_scores
from queryeval.tasks.retrieval.answer import (
    ANSWER_KEY,
    AnswerJudge,
    answer_figures,
    parse_answer,
    score_answer,
)
from queryeval.tasks.retrieval.outputs import RetrievalOutputs
from queryeval.tasks.retrieval.scoring import (
    Cut,
    Matcher,
    has_relevant,
    record_identity,
    relevant_chunks,
    score_cuts,
    single_cut,
    single_rank,
    single_scores,
)
from queryeval.tasks.retrieval.select import RetrievalSelection


class ReadChunks(list):
    """A recorded line's chunks as :meth:`RetrievalTask.read_recorded_line` read them (the
    ``retrieved_chunks`` of :meth:`RetrievalTask.parse_output`): a list, marked read, so the
    runner's ``parse_output`` does not read them again. JSON writes it as a list."""

    __slots__ = ()


class ReadOutput(dict):
    """A recorded line's output with its answer, as :meth:`RetrievalTask.parse_output` gave
    it (see :class:`ReadChunks`)."""

    __slots__ = ()


class RetrievalOptions(TaskOptions):
    k: Annotated[list[int], Flag("Retrieval: comma-separated k values, e.g. 5,10,25.",
                                 type=str)] = Field(default_factory=lambda: [5, 10, 25])
    dataset: Annotated[list[str], Flag("Retrieval: keep this dataset (repeatable; 'all').",
                                       multiple=True)] = Field(default_factory=list)
    """Keep only these datasets (empty, or ``all``: every dataset)."""
    min_score: Annotated[float | None, Flag("Retrieval: drop chunks scoring below.")] = None
    """Drop retrieved chunks scoring below this, after the top-k cut (as the reference)."""
    sampling: Annotated[float | None, Flag("Retrieval: fraction to sample per dataset.")] = Field(
        default=None, gt=0)
    random_seed: Annotated[int | None, Flag("Seed for --sampling.")] = None
    corpus: Annotated[str | None, Flag("Retrieval: chunks (JSONL, CSV or Parquet).",
                                       path=True)] = None
    retriever: Annotated[str | None, Flag(
        "Retrieval: built-in retriever (default: bm25; dense needs the embeddings extra).",
        type=Literal["bm25", "dense"])] = None
    """The built-in retriever (``bm25`` when left out); a run of the user's own system or of
    recorded responses keeps it ``None``, so its log never says ``retriever: bm25``."""
    model: Annotated[str | None, Flag(
        "Retrieval: the dense model, a local sentence-transformers path.")] = None
    hash_case: Literal["any", "exact"] = "any"
    """How content hashes compare: ``any`` (default) ignores letter case, since an MD5 hex
    digest means the same in either case; ``exact`` is the reference's comparison, where an
    upper-case ``content_hash`` never matches (``--option hash_case=exact``)."""
    judge: Annotated[JudgeOptions | None, judging.JUDGE_FLAGS] = None
    """Send generated answers the exact match did not decide to this LLM judge (see
    :mod:`queryeval.tasks.retrieval.answer`)."""
    squad: SquadOption = DEFAULT_VERSION
    """The SQuAD script whose rules score a generated answer (``answer_exact_match``,
    ``answer_f1``): ``v2.0`` (the default) or ``v1.1`` (:mod:`queryeval.metrics.squad`)."""

    @field_validator("k", mode="before")
    @classmethod
    def _parse_k(cls, v):
        if isinstance(v, (int, str)):
            v = [v]
        out = []
        for item in v:
            for part in str(item).split(","):
                if part.strip():
                    out.append(int(part))
        if not out or min(out) < 1:
            raise ValueError("k must be positive integers, e.g. 5,10,25")
        return sorted(set(out))

    @field_validator("dataset", mode="before")
    @classmethod
    def _parse_dataset(cls, v):
        if v is None or v == "all" or v == ["all"]:
            return []
        return [v] if isinstance(v, str) else v


def missing_rule(missing: int, no_relevant: int, on_error: str) -> dict:
    """The overall figures that say how the means treat judged queries the run lacks and
    queries judged only non-relevant (docs/retrieval.md, "Missing queries").

    ``missing_queries``: attempts without a response (error kind ``missing``, failed calls);
    ``missing_query``: ``zero`` (they score 0 and count, as failed calls under
    ``on_error=score``: trec_eval -c, ``queryeval trec --missing-query zero``) or ``skip``
    (left out under ``on_error=skip``: pytrec_eval, ``--missing-query skip``);
    ``queries_without_relevant``: counted questions with no relevant chunk, each 0 on every
    ranking figure and counted in both rules (trec_eval and pytrec_eval count them)."""
    return {"missing_queries": missing, "missing_query": "zero" if on_error == "score" else "skip",
            "queries_without_relevant": no_relevant}


def missing_note(overall: dict) -> list:
    """The summary line naming missing queries and queries judged only non-relevant, with the
    rule the means followed (none when there are neither)."""
    from queryeval.tasks.content import Note

    missing, none = overall.get("missing_queries") or 0, overall.get("queries_without_relevant") or 0
    if not missing and not none:
        return []
    parts = []
    if missing:
        fate = ("each scores 0 and counts (--on-error score; trec --missing-query zero)"
                if overall.get("missing_query") == "zero" else
                "left out of the means (--on-error skip; trec --missing-query skip)")
        parts.append(f"{missing} judged {'query has' if missing == 1 else 'queries have'} "
                     f"no response: {fate}")
    if none:
        parts.append(f"{none} {'query is' if none == 1 else 'queries are'} judged only "
                     "non-relevant: 0 on every ranking figure, counted")
    return [Note("; ".join(parts) + ".", "warning" if missing else "info")]


class RetrievalTask(RetrievalSelection, RetrievalOutputs, Task):
    name = "retrieval"
    figures = Figures(
        settings=("k",), timings=("mean_retrieval_time_ms",),
        # the reference's names of the figures at the run's k, kept in the metrics file
        # (recall_at_k is the hit rate; with several relevant chunks per question it differs
        # from recall@k, and the reports then list both)
        aliases={"recall_at_k": "recall@{k}", "mrr_at_k": "mrr@{k}", "ndcg_at_k": "ndcg@{k}"},
        labels={"recall_at_k": "hit rate"},  # the seed's name of the hit rate, so labelled
        headline=("recall@{k}", "hit_rate@{k}", "mrr@{k}", "ndcg@{k}"),
        unbounded=("avg_score_incorrect",),  # the retriever's similarity score (BM25: > 1)
        counts=("total_questions", "successful_retrievals", "incorrect_retrievals_count",
                "sample_size", "errors", "answered_questions", "missing_queries",
                "queries_without_relevant", *judging.COUNTS))
    Options = RetrievalOptions

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        self._corpus = None
        self._by_id: dict[str, Any] = {}
        self._by_hash: dict[str, Any] | None = None
        self._builtin: Any = None  # the built-in system, for its run_info (ANN recall)
        self._questions: list[str] = []  # the selected cases' questions (run_info)
        self._judge = AnswerJudge(self.options.judge) if self.options.judge else None

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
        super().close()

    @property
    def k(self) -> int:
        return max(self.options.k)

    # --- corpus and default system ---------------------------------------------------------
    def corpus(self):
        if self._corpus is None and self.options.corpus:
            from queryeval.suite.corpus_stream import open_corpus

            # streamed: ids, hashes and spans in memory, a chunk read back when asked for
            self._corpus = open_corpus(self.options.corpus)
            self._by_id = self._corpus  # .get(chunk_id) reads the chunk back
        return self._corpus

    def default_system(self):
        if not self.options.corpus:
            raise ConfigError("retrieval needs --corpus CHUNKS (built-in retriever), --system or --responses")
        from queryeval.systems.retrieval import BuiltinRetrievalSystem

        self._builtin = BuiltinRetrievalSystem(self.corpus(), self.options.retriever or "bm25",
                                               self.options.model)
        return self._builtin

    # --- requests and outputs -------------------------------------------------------------------
    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        for req in out:
            req.update({"question": case.conversation[req["turn"]].content, "k": self.k,
                        "dataset": self.target_of(case).dataset})
        return out

    def parse_output(self, raw: Any) -> dict:
        """``{"retrieved_chunks": [{chunk_id, score, content?, content_hash?}, ...],
        "answer"?: "..."}`` or the bare list, best first. Each chunk needs its content, its
        content_hash, or a chunk_id found in ``--corpus``. Returns ``{"retrieved_chunks":
        [...], "answer": text or None}``.

        What :meth:`read_recorded_line` read (a :class:`ReadChunks` or :class:`ReadOutput`,
        this method's own result, built by no system) is not read again: it is returned as a
        fresh copy (new chunk dicts, as a reading gives), so a recorded answer is parsed once."""
        kind = type(raw)
        if kind is ReadChunks:
            return {"retrieved_chunks": [dict(c) for c in raw], ANSWER_KEY: None}
        if kind is ReadOutput:
            return {"retrieved_chunks": [dict(c) for c in raw["retrieved_chunks"]],
                    ANSWER_KEY: raw[ANSWER_KEY]}
        answer = None
        if isinstance(raw, dict):
            if "retrieved_chunks" not in raw:
                raise ValueError("output has no 'retrieved_chunks' key")
            answer = parse_answer(raw)
            raw = raw["retrieved_chunks"]
        if not isinstance(raw, list):
            raise ValueError(f"retrieved_chunks must be a list, got {type(raw).__name__}")
        self.corpus()
        out = []
        for i, ch in enumerate(raw):
            if not isinstance(ch, dict):
                raise ValueError(f"[{i}]: a chunk must be an object")
            get = ch.get
            chunk_id = get("chunk_id")
            if chunk_id is None:
                chunk_id = ""
            elif type(chunk_id) is not str:
                chunk_id = str(chunk_id)
            score = get("score")
            if score is not None and type(score) is not float:  # JSON's numbers are float or int
                if isinstance(score, bool) or not isinstance(score, (int, float)):
                    raise ValueError(f"[{i}].score: must be a number")
                score = float(score)
            text = get("content")
            digest = get("content_hash")
            if isinstance(text, str):
                digest = content_hash(text)
            elif not isinstance(digest, str):
                known = self._by_id.get(chunk_id)
                if known is None:
                    where = ("is not in the corpus" if self._corpus is not None else
                             "no --corpus was given to look its id up")
                    raise ValueError(f"[{i}]: chunk {chunk_id!r} has no content or content_hash "
                                     f"and {where}")
                text, digest = known.content, known.content_hash
            if not chunk_id and self._corpus is not None:  # text alone: the corpus's id for it
                chunk_id = getattr(self._corpus.find_hash(digest), "chunk_id", "")
            out.append({"chunk_id": chunk_id, "score": score, "content": text, "content_hash": digest})
        return {"retrieved_chunks": out, ANSWER_KEY: answer}

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        key = "qa_pair_id" if "qa_pair_id" in obj else "case_id"
        if key not in obj:
            raise ValueError("qa_pair_id: field required")
        if "retrieved_chunks" not in obj:
            raise ValueError("retrieved_chunks: field required")
        if obj.get(ANSWER_KEY) is None:  # the seed's line: its chunks (checked as output[i])
            chunks = self.parse_output(obj["retrieved_chunks"])["retrieved_chunks"]
            return str(obj[key]), obj.get("turn"), ReadChunks(chunks)
        return str(obj[key]), obj.get("turn"), ReadOutput(self.parse_output(
            {"retrieved_chunks": obj["retrieved_chunks"], ANSWER_KEY: obj[ANSWER_KEY]}))

    # --- scoring ---------------------------------------------------------------------------------
    def _ranking(self, record: dict, k: int) -> list[dict]:
        """The chunks scored at ``k``: the first k retrieved, then ``min_score``."""
        return self._top(record.get("all_retrieved_chunks") or record["retrieved_chunks"], k)

    def _top(self, source: list[dict], k: int) -> list[dict]:
        """:meth:`_ranking` of the record's uncut ranking ``source``."""
        chunks = source[:k] if type(source) is list else list(source)[:k]
        min_score = self.options.min_score
        if min_score is not None:
            chunks = [c for c in chunks if c["score"] is not None and c["score"] >= min_score]
        return chunks

    def _cut(self, record: dict, k: int) -> Cut:
        """The question's ranking at ``k`` and its figures
        (:func:`~queryeval.tasks.retrieval.scoring.score_cut`)."""
        return self._cuts([record], k)[0]

    def _cuts(self, records: list[dict], k: int) -> list[Cut]:
        """:meth:`_cut` of many records in one pass of the engine."""
        exact = self.options.hash_case == "exact"
        if len(records) == 1 and (identity := record_identity(records[0], exact)) is not None:
            return [single_cut(self._ranking(records[0], k), identity, k, exact)]  # as score_cuts
        return score_cuts([(self._ranking(r, k), relevant_chunks(r)) for r in records], k, exact)

    def matcher(self, record: dict) -> Matcher:
        """Which retrieved chunks are the record's relevant ones (the CSV, xlsx and HTML mark)."""
        return Matcher(relevant_chunks(record), self.options.hash_case == "exact")

    def _evaluate(self, record: dict) -> dict:
        options = self.options
        k = max(options.k)  # self.k
        source = record.get("all_retrieved_chunks") or record["retrieved_chunks"]
        min_score = options.min_score
        if min_score is not None and (
                len(source) > k or any(c["score"] is None or c["score"] < min_score
                                       for c in source[:k])):
            record["all_retrieved_chunks"] = source  # keep what min_score drops, for rescoring
        exact = options.hash_case == "exact"
        identity = record_identity(record, exact)
        if identity is not None:  # one relevant chunk of relevance 1: _cut's figures, directly
            chunks = self._top(source, k)  # self._ranking(record, k)
            rank = single_rank(chunks, identity, exact)
            found, scores = int(rank is not None), single_scores(rank, k)
        else:
            cut = self._cuts([record], k)[0]
            chunks, rank, found, scores = cut.chunks, cut.rank, cut.found, cut.scores
        record["retrieved_chunks"] = chunks
        result = {
            "correct_chunk_retrieved": rank is not None,
            "rank_if_found": rank,
            "retrieval_time_ms": record["evaluation_result"]["retrieval_time_ms"],
        }
        if record.get("expected_chunks"):  # several relevant chunks: how many were found
            result["relevant_found"] = found
            result["relevant_total"] = sum(int(r.get("relevance", 1)) > 0 for r in record["expected_chunks"])
        record["evaluation_result"] = result
        record["k"] = k
        answer = record.get("answer_scores")
        record["scores"] = {**scores, **answer} if answer else scores
        return record

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        (o,) = outcomes
        t = self.target_of(case)
        record = self.base_record(case, outcomes)
        record.update({
            "qa_pair_id": case.id,
            "question": case.conversation[o.turn].content,
            "expected_answer": t.answer,
            "dataset": t.dataset,
            "expected_chunk": {"name": t.document_name, "source": t.dataset,
                               "chunk_id": t.chunk_id, "content_hash": t.content_hash},
            "evaluation_result": {"retrieval_time_ms": o.latency_ms},
            "error": o.error,
            "attempts": o.attempts,
            "retrieved_chunks": (o.output or {}).get("retrieved_chunks") or [],
        })
        if t.relevant:
            several = [{"chunk_id": r.chunk_id, "content_hash": r.content_hash, "relevance": r.relevance}
                       for r in t.relevant]
            record["expected_chunks"] = several
            # the seed's one expected chunk, for its columns: every relevant chunk, '|'-joined
            record["expected_chunk"].update({
                "chunk_id": "|".join(r["chunk_id"] for r in several),
                "content_hash": ("|".join(r["content_hash"] for r in several)
                                 if any(r["content_hash"] for r in several) else "")})
        score_answer(record, t.answer, (o.output or {}).get(ANSWER_KEY), self._judge,
                     self.options.squad)
        return self._evaluate(record)

    def rescore_record(self, record: dict) -> dict:
        return self._evaluate(dict(record))

    # --- aggregation -----------------------------------------------------------------------------
    def _figures(self, n: int, correct: int, wrong_mean: float | None, means: list[float | None]) -> dict:
        """One dataset's (or the run's) figures from its counts and means: recall is the share
        of questions whose chunk was found (``None`` for no questions), ``avg_score_incorrect``
        the mean best score of the missed questions that returned scored chunks."""
        out = {
            "recall_at_k": correct / n if n else None,
            "sample_size": n,
            "avg_score_incorrect": wrong_mean,
        }
        out.update(zip(self._metric_keys(), means, strict=True))
        return out

    def _metric_keys(self) -> list[str]:
        return [f"{name}@{self.k}" for name in MEAN_METRICS]

    def aggregate(self, records: Iterable[dict]) -> dict:
        """Overall, per-dataset and missed-question figures, read from ``records`` once.

        Each mean is an exact running sum (:class:`~queryeval.tasks.accum.Values`), overall and
        per dataset: nothing is kept per question, and the figures do not depend on the order
        of the records. Datasets appear in first-seen order. ``recall_at_k`` (the seed's name)
        is the hit rate; ``recall@k`` the mean share of each question's relevant chunks found:
        the two differ only when a question has several relevant chunks. The records are fed
        one by one to :meth:`accumulator` (which a caller holding them one at a time, e.g.
        the finishing pass writing a derived batch, feeds itself)."""
        acc = self.accumulator()
        add = acc.add
        for r in records:
            add(r)
        return acc.result()

    def accumulator(self) -> RetrievalAccumulator:
        """:meth:`aggregate` fed record by record: ``add(record)`` each, then ``result()``
        (the same figures, bit for bit: it is the code :meth:`aggregate` runs)."""
        return RetrievalAccumulator(self)

    def _add_smaller(self, at_k: AtK, records: list[dict]) -> None:
        """Each record's figures at each smaller k, added to ``at_k`` (then cleared)."""
        if records:
            direct = self.options.min_score is None  # the cut at j is then the first j chunks
            at_k.add_block(records, self._cuts, self.options.hash_case == "exact", direct)
            records.clear()

    def smaller_ks(self) -> list[int]:
        """The k asked for below the run's own (largest) k, ascending."""
        return [j for j in self.options.k if j != self.k]

    def batch_info(self) -> dict:
        info = {"k_value": self.k, "dataset_filter": list(self.options.dataset)}
        if self._builtin is not None:  # e.g. ann_recall, measured on this run's questions
            info.update(self._builtin.run_info(self._questions, self.k))
        if self.options.judge is not None:  # what the run log records about its judge
            from queryeval.engines.judge import judge_info

            info["judge"] = judge_info(self.options.judge)
        return info

    def variant_options(self) -> list[dict]:
        """One derived batch per smaller k (the run itself is scored at the largest k)."""
        return [{"k": [k]} for k in self.options.k if k != self.k]

    def summary(self, metrics: dict) -> list[Any]:
        k = self.k
        several = bool(self.smaller_ks())
        every_k = [f"recall@{j}" for j in self.options.k]
        groups = metrics["group_metrics"]["dataset"] if several else metrics["dataset_metrics"]
        if not several:  # the reference's layout names recall at the run's k recall_at_k
            groups = {name: {f"recall@{k}": g.get("recall_at_k"), **g} for name, g in groups.items()}
        overall = metrics["overall_metrics"]
        # several relevant chunks per question (recall@k in dataset_metrics): the hit rate and
        # MAP differ from recall and MRR, so they are shown too; answer scores when present
        multi = any(f"recall@{k}" in g for g in metrics["dataset_metrics"].values())
        extra = [f"hit_rate@{k}", f"map@{k}"] if multi else []
        answer = [key for key in ("answer_exact_match", "answer_f1", "answer_correct",
                                  "answered_questions") if key in overall]
        return [
            Overall([*every_k, *extra, f"mrr@{k}", f"ndcg@{k}", f"precision@{k}", *answer,
                     "total_questions", "successful_retrievals", "errors"],
                    title=f"Overall (k={', '.join(map(str, self.options.k))})"),
            Overall(list(self.figures.timings), title="Timings", what="timing"),
            Groups(groups, "dataset", ["sample_size", *every_k, f"mrr@{k}", "avg_score_incorrect"]),
            *missing_note(overall),
            *judging.note_for(self.options.judge, overall),
        ]

    # --- what the reports show ----------------------------------------------------------------
    def case_metrics(self, record: dict) -> dict[str, float]:
        """Per-case figures for the reports and comparisons: the record's scores at the run's
        k, and ``recall@k`` at each smaller k asked for (so those get confidence intervals and
        can be compared case by case)."""
        scores = record.get("scores") or {}
        out = {k: float(v) for k, v in scores.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
        if record.get("expected_chunk"):
            for j in self.smaller_ks():
                out[f"recall@{j}"] = self._cut(record, j).scores[f"recall@{j}"]
        return out

    def case_verdict(self, record: dict) -> str:
        """``error`` when the call failed, ``pass`` when the expected chunk is in the top k
        of the run's own (largest) k, else ``fail``."""
        if record.get("status") == "error":
            return "error"
        found = (record.get("evaluation_result") or {}).get("correct_chunk_retrieved")
        return "pass" if found else "fail"

    def system_label(self) -> str:
        """The built-in retriever a run without --system/--responses used."""
        if self.options.retriever == "dense":
            from queryeval.engines.retrievers.models import DEFAULT_MODEL

            return f"dense: {self.options.model or DEFAULT_MODEL}"
        return self.options.retriever or "bm25"

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        return [Workbook("retrieval", {"ks": self.options.k, "found_at": self.found_at,
                                       "is_relevant": self.is_relevant})]

    def found_at(self, record: dict, k: int) -> bool:
        """Whether a relevant chunk is among the question's first ``k`` (``min_score`` applied)."""
        return self._cut(record, k).rank is not None

    def is_relevant(self, record: dict, chunk: dict) -> bool:
        """Whether a retrieved ``chunk`` is one of the record's relevant chunks."""
        return self.matcher(record).is_relevant(chunk)


class RetrievalAccumulator:
    """The running figures of :meth:`RetrievalTask.aggregate`: ``add`` each record (in run
    order), then ``result`` once. Keeps no record beyond the current block of 512 whose
    smaller-k figures are computed together."""

    def __init__(self, task: RetrievalTask) -> None:
        self.task = task
        self.k = k = task.k
        self.keys = task._metric_keys()
        self.values_of = operator.itemgetter(*self.keys)  # a tuple: MEAN_METRICS has five
        self.recall_key = f"recall@{k}"
        self.tally = Tally(task)
        self.times = Values()
        self.per_ds: dict[Any, DatasetAcc] = {}
        self.smaller = task.smaller_ks()
        self.at_k = AtK(self.smaller)
        self.answers: dict[str, Values] = {}
        self.pending: list[dict] = []  # records whose smaller-k figures are computed in blocks
        self.several = False
        self.judge = judging.JudgeTally()  # the answer judge's cases (tasks/judging.py)
        self.no_relevant = 0  # counted questions judged only non-relevant (they score 0)

    def add(self, r: dict) -> None:
        self.judge.see(r)
        if not self.tally.count(r):
            return
        ev = r["evaluation_result"]
        self.no_relevant += not has_relevant(r)
        acc = self.per_ds.get(r["dataset"])
        if acc is None:
            acc = self.per_ds[r["dataset"]] = DatasetAcc(len(self.keys))
        scores = r["scores"]
        values = self.values_of(scores)
        hit = ev["correct_chunk_retrieved"]
        self.several = self.several or bool(r.get("expected_chunks"))
        best = None
        if not hit:
            found_scores = chunk_scores(r["retrieved_chunks"])
            best = max(found_scores) if found_scores else None
        acc.add(values, scores.get(self.recall_key, 1.0 if hit else 0.0), bool(hit), best)
        if self.smaller:
            self.pending.append(r)
            if len(self.pending) >= 512:
                self.task._add_smaller(self.at_k, self.pending)
        answer = r.get("answer_scores")
        if answer:
            for name, value in answer.items():
                self.answers.setdefault(name, Values()).add(value)
        if ev["retrieval_time_ms"] is not None:
            self.times.add(ev["retrieval_time_ms"])

    def result(self) -> dict:
        task, k, keys, at_k, per_ds = self.task, self.k, self.keys, self.at_k, self.per_ds
        several, tally = self.several, self.tally
        task._add_smaller(at_k, self.pending)
        overall_acc = DatasetAcc.merged(per_ds.values(), len(keys))  # the run: its datasets' sums
        n, n_missed = tally.counted_n, overall_acc.missed
        fig = task._figures(n, overall_acc.correct, overall_acc.wrong.mean(), overall_acc.means())
        recall_k = overall_acc.recall.mean() if several else fig["recall_at_k"]
        missed = {ds: a.missed for ds, a in per_ds.items() if a.missed}
        analysis = {
            "incorrect_retrievals_count": n_missed,
            "avg_score_incorrect": fig["avg_score_incorrect"],
            "datasets_with_incorrect_retrievals": [d for d, _ in sorted(missed.items(), key=lambda x: (-x[1], x[0]))],
        }
        overall = {
            "recall_at_k": fig["recall_at_k"],
            "mean_retrieval_time_ms": self.times.mean(),
            "total_questions": n,
            "successful_retrievals": n - n_missed,
            "incorrect_retrievals_analysis": analysis,
            "k": k,
            f"recall@{k}": recall_k,
            **{key: fig[key] for key in (f"mrr@{k}", f"ndcg@{k}", f"hit_rate@{k}", f"precision@{k}", f"map@{k}")},
            **answer_figures(self.answers),
            **tally.error_summary(),
            **missing_rule(tally.kinds.get("missing", 0), self.no_relevant, task.options.on_error),
            **self.judge.overall(task.options.judge),
        }
        dataset_metrics = {}
        for ds, a in per_ds.items():
            dataset_metrics[ds] = task._figures(a.size, a.correct, a.wrong.mean(), a.means())
            if several:  # the share of relevant chunks found differs from the hit rate
                dataset_metrics[ds][f"recall@{k}"] = a.recall.mean()
        groups = dataset_metrics
        if self.smaller:  # several k asked for: every k's figures, read from the one retrieval
            overall.update(at_k.overall(k, recall_k, several))
            groups = {ds: {**f, **at_k.dataset(ds, k, f.get(f"recall@{k}", f["recall_at_k"]))}
                      for ds, f in dataset_metrics.items()}
        return {"overall_metrics": overall, "dataset_metrics": dataset_metrics,
                "incorrect_retrievals_analysis": analysis,
                "group_metrics": {"dataset": groups}}
