"""Seed 002: retrieval recall@k over chunks, with the reference's run-log layout.

A question is answered correctly at k when a chunk whose content's MD5 equals the question's
``content_hash`` is among the first k retrieved (after ``min_score`` drops low scores). One
retrieval pass at the largest k serves every k: the run is scored at the largest k and one
more batch (four files) is derived for each smaller k. See docs/retrieval.md.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field, field_validator

from queryeval.errors import ConfigError
from queryeval.suite.models import Case
from queryeval.suite.retrieval import content_hash
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Figures, Groups, Overall, ReportItem, Workbook


class RetrievalOptions(TaskOptions):
    k: list[int] = Field(default_factory=lambda: [5, 10, 25])
    dataset: list[str] = Field(default_factory=list)
    """Keep only these datasets (empty, or ``all``: every dataset)."""
    min_score: float | None = None
    """Drop retrieved chunks scoring below this, after the top-k cut (as the reference)."""
    sampling: float | None = Field(default=None, gt=0)
    random_seed: int | None = None
    corpus: str | None = None
    retriever: str | None = None
    """The built-in retriever (``bm25`` when left out); a run of the user's own system or of
    recorded responses keeps it ``None``, so its log never says ``retriever: bm25``."""
    model: str | None = None
    hash_case: Literal["any", "exact"] = "any"
    """How content hashes compare: ``any`` (default) ignores letter case, since an MD5 hex
    digest means the same in either case; ``exact`` is the reference's comparison, where an
    upper-case ``content_hash`` never matches (``--option hash_case=exact``)."""

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


_MEAN_METRICS = ("mrr", "ndcg", "hit_rate", "precision", "map")
"""The per-question scores averaged in the figures, in the order they are reported."""


def _chunk_scores(chunks: list[dict]) -> list[float]:
    return [c["score"] for c in chunks if isinstance(c.get("score"), (int, float))]


class _DatasetAcc:
    """Running figures of one dataset (or of the run): counts and exact means."""

    __slots__ = ("correct", "cols", "missed", "size", "wrong")

    def __init__(self, n_metrics: int) -> None:
        self.size = self.correct = self.missed = 0
        self.cols = [Values() for _ in range(n_metrics)]
        self.wrong = Values()  # best score of each missed question that returned scores

    def add(self, values: list[float], hit: bool, best: float | None) -> None:
        self.size += 1
        for col, v in zip(self.cols, values, strict=True):
            col.add(v)
        if hit:
            self.correct += 1
        else:
            self.missed += 1
            if best is not None:
                self.wrong.add(best)

    def means(self) -> list[float | None]:
        return [c.mean() for c in self.cols]


class _AtK:
    """Running recall, MRR and nDCG at each smaller k, overall, and recall per dataset: the
    figures of the derived batches, so the run's own report shows every k asked for."""

    def __init__(self, ks: list[int]) -> None:
        self.ks = ks
        self.n = 0
        self.cols = {j: (Values(), Values(), Values()) for j in ks}  # recall, mrr, ndcg
        self.per_ds: dict[Any, list[int]] = {}  # dataset -> [size, hits at each k..., hits at K]

    def add(self, dataset: Any, ranks: list[int | None], hit_at_largest: bool) -> None:
        self.n += 1
        for j, rank in zip(self.ks, ranks, strict=True):
            recall, mrr, ndcg = self.cols[j]
            recall.add(1.0 if rank else 0.0)
            mrr.add(1.0 / rank if rank else 0.0)
            ndcg.add(1.0 / math.log2(rank + 1) if rank else 0.0)
        counts = self.per_ds.setdefault(dataset, [0] * (len(self.ks) + 2))
        counts[0] += 1
        for i, rank in enumerate(ranks, start=1):
            counts[i] += rank is not None
        counts[-1] += hit_at_largest

    def overall(self, k: int, fig: dict) -> dict:
        out: dict[str, Any] = {}
        for j in self.ks:
            recall, mrr, ndcg = self.cols[j]
            out.update({f"recall@{j}": recall.mean(), f"mrr@{j}": mrr.mean(), f"ndcg@{j}": ndcg.mean()})
        out[f"recall@{k}"] = fig["recall_at_k"]
        return out

    def dataset(self, ds: Any, k: int, fig: dict) -> dict:
        counts = self.per_ds[ds]
        out = {f"recall@{j}": counts[i] / counts[0] for i, j in enumerate(self.ks, start=1)}
        out[f"recall@{k}"] = fig["recall_at_k"]
        return out


class RetrievalTask(Task):
    name = "retrieval"
    figures = Figures(
        settings=("k",), timings=("mean_retrieval_time_ms",),
        # the reference's names of the figures at the run's k, kept in the metrics file
        aliases={"recall_at_k": "recall@{k}", "mrr_at_k": "mrr@{k}", "ndcg_at_k": "ndcg@{k}"},
        unbounded=("avg_score_incorrect",),  # the retriever's similarity score (BM25: > 1)
        counts=("total_questions", "successful_retrievals", "incorrect_retrievals_count",
                "sample_size", "errors"))
    Options = RetrievalOptions

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        self._corpus = None
        self._by_id: dict[str, Any] = {}
        self._by_hash: dict[str, Any] | None = None
        self._builtin: Any = None  # the built-in system, for its run_info (ANN recall)
        self._questions: list[str] = []  # the selected cases' questions (run_info)

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

    # --- case selection (dataset filter, then stratified sampling) -------------------------------
    def select_cases(self, cases: list[Case]) -> list[Case]:
        chosen = self._select(cases)
        if isinstance(chosen, list):
            self._questions = [q for c in chosen for q in self._questions_of(c)]
            return chosen
        return self._remember(chosen)  # type: ignore[return-value] - a stream stays a stream

    def _questions_of(self, case: Case) -> list[str]:
        return [case.conversation[i].content for i in self.scored_turns(case)]

    def _remember(self, cases: Iterable[Case]) -> Iterable[Case]:
        """Pass the cases through, keeping their questions (for the system's run_info) once
        a pass is complete (a pass stopped part-way leaves the last complete one)."""
        questions: list[str] = []
        for c in cases:
            questions.extend(self._questions_of(c))
            yield c
        self._questions = questions

    def _select(self, cases: Iterable[Case]) -> Iterable[Case]:
        wanted = set(self.options.dataset)
        if wanted:
            cases = list(cases)
            known = {self._target(c).dataset for c in cases}
            unknown = [d for d in self.options.dataset if d not in known]
            if unknown:
                raise ConfigError(
                    f"--dataset {', '.join(map(repr, unknown))}: no case of the suite is in "
                    f"{'that dataset' if len(unknown) == 1 else 'those datasets'}; its datasets: "
                    f"{', '.join(map(repr, sorted(known))) or '(none)'}")
            cases = [c for c in cases if self._target(c).dataset in wanted]
        frac = self.options.sampling
        if frac is None or frac >= 1.0:
            return cases
        rng = random.Random(self.options.random_seed)  # noqa: S311 - reproducible sampling
        groups: dict[str, list[Case]] = defaultdict(list)
        for c in cases:
            groups[self._target(c).dataset].append(c)
        sampled: list[Case] = []
        for group in groups.values():
            sampled.extend(rng.sample(group, max(1, int(len(group) * frac))))
        rng.shuffle(sampled)
        return sampled

    # --- requests and outputs -------------------------------------------------------------------
    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        for req in out:
            req.update({"question": case.conversation[req["turn"]].content, "k": self.k,
                        "dataset": self._target(case).dataset})
        return out

    def parse_output(self, raw: Any) -> list[dict]:
        """``{"retrieved_chunks": [{chunk_id, score, content?, content_hash?}, ...]}`` or the
        bare list, best first. Each chunk needs its content, its content_hash, or a chunk_id
        found in ``--corpus``."""
        if isinstance(raw, dict):
            if "retrieved_chunks" not in raw:
                raise ValueError("output has no 'retrieved_chunks' key")
            raw = raw["retrieved_chunks"]
        if not isinstance(raw, list):
            raise ValueError(f"retrieved_chunks must be a list, got {type(raw).__name__}")
        self.corpus()
        out = []
        for i, ch in enumerate(raw):
            if not isinstance(ch, dict):
                raise ValueError(f"[{i}]: a chunk must be an object")
            chunk_id = "" if ch.get("chunk_id") is None else str(ch["chunk_id"])
            score = ch.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                raise ValueError(f"[{i}].score: must be a number")
            text = ch.get("content")
            digest = ch.get("content_hash")
            if isinstance(text, str):
                digest = content_hash(text)
            elif not isinstance(digest, str):
                known = self._by_id.get(chunk_id)
                if known is None:
                    raise ValueError(f"[{i}]: chunk {chunk_id!r} has no content or content_hash "
                                     "and is not in the corpus")
                text, digest = known.content, known.content_hash
            out.append({"chunk_id": chunk_id, "score": None if score is None else float(score),
                        "content": text, "content_hash": digest})
        return out

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        key = "qa_pair_id" if "qa_pair_id" in obj else "case_id"
        if key not in obj:
            raise ValueError("qa_pair_id: field required")
        if "retrieved_chunks" not in obj:
            raise ValueError("retrieved_chunks: field required")
        return str(obj[key]), obj.get("turn"), self.parse_output(obj["retrieved_chunks"])

    # --- scoring ---------------------------------------------------------------------------------
    def _cut(self, record: dict, k: int) -> tuple[list[dict], int | None, int]:
        """The chunks scored at ``k`` (the first k retrieved, then ``min_score``), the rank of
        the first correct one (or None) and the number of correct ones."""
        source = record.get("all_retrieved_chunks") or record["retrieved_chunks"]
        chunks = list(source)[:k]
        if self.options.min_score is not None:
            chunks = [c for c in chunks if c["score"] is not None and c["score"] >= self.options.min_score]
        expected = str(record["expected_chunk"]["content_hash"])
        hashes = [str(c["content_hash"]) for c in chunks]
        if self.options.hash_case == "any":
            expected, hashes = expected.lower(), [h.lower() for h in hashes]
        rank = hashes.index(expected) + 1 if expected in hashes else None
        return chunks, rank, sum(h == expected for h in hashes)

    def _evaluate(self, record: dict) -> dict:
        k = self.k
        source = record.get("all_retrieved_chunks") or record["retrieved_chunks"]
        if self.options.min_score is not None and (
                len(source) > k or any(c["score"] is None or c["score"] < self.options.min_score
                                       for c in source[:k])):
            record["all_retrieved_chunks"] = source  # keep what min_score drops, for rescoring
        chunks, rank, hits = self._cut(record, k)
        record["retrieved_chunks"] = chunks
        record["evaluation_result"] = {
            "correct_chunk_retrieved": rank is not None,
            "rank_if_found": rank,
            "retrieval_time_ms": record["evaluation_result"]["retrieval_time_ms"],
        }
        record["k"] = k
        record["scores"] = {
            f"recall@{k}": 1.0 if rank else 0.0,
            f"hit_rate@{k}": 1.0 if rank else 0.0,
            f"mrr@{k}": 1.0 / rank if rank else 0.0,
            f"ndcg@{k}": 1.0 / math.log2(rank + 1) if rank else 0.0,
            f"map@{k}": 1.0 / rank if rank else 0.0,
            f"precision@{k}": hits / k,
        }
        return record

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        (o,) = outcomes
        t = self._target(case)
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
            "retrieved_chunks": o.output or [],
        })
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
        return [f"{name}@{self.k}" for name in _MEAN_METRICS]

    def aggregate(self, records: Iterable[dict]) -> dict:
        """Overall, per-dataset and missed-question figures, read from ``records`` once.

        Each mean is an exact running sum (:class:`~queryeval.tasks.accum.Values`), overall and
        per dataset: nothing is kept per question, and the figures do not depend on the order
        of the records. Datasets appear in first-seen order."""
        k = self.k
        keys = self._metric_keys()
        tally = Tally(self)
        overall_acc = _DatasetAcc(len(keys))
        times = Values()
        per_ds: dict[Any, _DatasetAcc] = {}
        smaller = self.smaller_ks()
        at_k = _AtK(smaller)
        for r in tally.counted(records):
            ev = r["evaluation_result"]
            acc = per_ds.get(r["dataset"])
            if acc is None:
                acc = per_ds[r["dataset"]] = _DatasetAcc(len(keys))
            scores = r["scores"]
            values = [scores[key] for key in keys]
            hit = ev["correct_chunk_retrieved"]
            best = None
            if not hit:
                chunk_scores = _chunk_scores(r["retrieved_chunks"])
                best = max(chunk_scores) if chunk_scores else None
            for a in (overall_acc, acc):
                a.add(values, bool(hit), best)
            if smaller:
                at_k.add(r["dataset"], [self._cut(r, j)[1] for j in smaller], bool(hit))
            if ev["retrieval_time_ms"] is not None:
                times.add(ev["retrieval_time_ms"])

        n, n_missed = tally.counted_n, overall_acc.missed
        fig = self._figures(n, overall_acc.correct, overall_acc.wrong.mean(), overall_acc.means())
        missed = {ds: a.missed for ds, a in per_ds.items() if a.missed}
        analysis = {
            "incorrect_retrievals_count": n_missed,
            "avg_score_incorrect": fig["avg_score_incorrect"],
            "datasets_with_incorrect_retrievals": [d for d, _ in sorted(missed.items(), key=lambda x: (-x[1], x[0]))],
        }
        overall = {
            "recall_at_k": fig["recall_at_k"],
            "mean_retrieval_time_ms": times.mean(),
            "total_questions": n,
            "successful_retrievals": n - n_missed,
            "incorrect_retrievals_analysis": analysis,
            "k": k,
            f"recall@{k}": fig["recall_at_k"],
            **{key: fig[key] for key in (f"mrr@{k}", f"ndcg@{k}", f"hit_rate@{k}", f"precision@{k}", f"map@{k}")},
            **tally.error_summary(),
        }
        dataset_metrics = {ds: self._figures(a.size, a.correct, a.wrong.mean(), a.means())
                           for ds, a in per_ds.items()}
        groups = dataset_metrics
        if smaller:  # several k asked for: every k's figures, read from the one retrieval
            overall.update(at_k.overall(k, fig))
            groups = {ds: {**f, **at_k.dataset(ds, k, f)} for ds, f in dataset_metrics.items()}
        return {"overall_metrics": overall, "dataset_metrics": dataset_metrics,
                "incorrect_retrievals_analysis": analysis,
                "group_metrics": {"dataset": groups}}

    def smaller_ks(self) -> list[int]:
        """The k asked for below the run's own (largest) k, ascending."""
        return [j for j in self.options.k if j != self.k]

    def batch_info(self) -> dict:
        info = {"k_value": self.k, "dataset_filter": list(self.options.dataset)}
        if self._builtin is not None:  # e.g. ann_recall, measured on this run's questions
            info.update(self._builtin.run_info(self._questions, self.k))
        return info

    def variant_options(self) -> list[dict]:
        """One derived batch per smaller k (the run itself is scored at the largest k)."""
        return [{"k": [k]} for k in self.options.k if k != self.k]

    # --- flat outputs ----------------------------------------------------------------------------
    csv_columns = [
        "qa_pair_id", "question", "rank", "similarity_score", "retrieved_chunk_id",
        "retrieved_content", "retrieved_content_hash", "expected_chunk_content_hash",
        "expected_chunk_name", "expected_chunk_source", "expected_chunk_id", "is_correct_chunk",
        "evaluation_result_correct_chunk_retrieved", "evaluation_result_rank_if_found",
        "evaluation_result_retrieval_time_ms",
    ]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        exp = record["expected_chunk"]
        ev = record["evaluation_result"]
        base = {
            "qa_pair_id": record["qa_pair_id"], "question": record["question"],
            "expected_chunk_content_hash": exp["content_hash"], "expected_chunk_name": exp["name"],
            "expected_chunk_source": exp["source"], "expected_chunk_id": exp["chunk_id"],
            "evaluation_result_correct_chunk_retrieved": ev["correct_chunk_retrieved"],
            "evaluation_result_rank_if_found": ev["rank_if_found"],
            "evaluation_result_retrieval_time_ms": ev["retrieval_time_ms"],
        }
        if not record["retrieved_chunks"]:
            yield base
        for i, c in enumerate(record["retrieved_chunks"], start=1):
            yield {**base, "rank": i, "similarity_score": c["score"], "retrieved_chunk_id": c["chunk_id"],
                   "retrieved_content": c["content"], "retrieved_content_hash": c["content_hash"],
                   "is_correct_chunk": str(c["content_hash"]).lower() == exp["content_hash"].lower()}

    def summary(self, metrics: dict) -> list[Any]:
        k = self.k
        several = bool(self.smaller_ks())
        every_k = [f"recall@{j}" for j in self.options.k]
        groups = metrics["group_metrics"]["dataset"] if several else metrics["dataset_metrics"]
        if not several:  # the reference's layout names recall at the run's k recall_at_k
            groups = {name: {f"recall@{k}": g.get("recall_at_k"), **g} for name, g in groups.items()}
        return [
            Overall([*every_k, f"mrr@{k}", f"ndcg@{k}", f"precision@{k}", "total_questions",
                     "successful_retrievals", "errors"],
                    title=f"Overall (k={', '.join(map(str, self.options.k))})"),
            Overall(list(self.figures.timings), title="Timings", what="timing"),
            Groups(groups, "dataset", ["sample_size", *every_k, f"mrr@{k}", "avg_score_incorrect"]),
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
                out[f"recall@{j}"] = 1.0 if self._cut(record, j)[1] is not None else 0.0
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
            from queryeval.systems.retrievers.models import DEFAULT_MODEL

            return f"dense: {self.options.model or DEFAULT_MODEL}"
        return self.options.retriever or "bm25"

    def report_record(self, record: dict) -> dict:
        """The record with its expected chunk's text for the report: from a retrieved chunk
        with its content hash (one dropped by ``min_score`` too), else from ``--corpus``."""
        expected = record.get("expected_chunk") or {}
        if expected.get("content") is not None:
            return record
        want = str(expected.get("content_hash")).lower()
        for c in (record.get("all_retrieved_chunks") or []) + (record.get("retrieved_chunks") or []):
            if str(c.get("content_hash")).lower() == want and c.get("content") is not None:
                return {**record, "expected_chunk": {**expected, "content": c["content"]}}
        if not self.options.corpus:
            return record
        try:
            self.corpus()
        except Exception:  # noqa: BLE001 - a moved or broken corpus: the report goes without
            return record
        chunk = self._by_id.get(str(expected.get("chunk_id")))
        if chunk is None or chunk.content_hash.lower() != want:
            if self._by_hash is None:
                self._by_hash = self._corpus.hash_lookup()  # first chunk with that hash
            chunk = self._by_hash.get(want)
        if chunk is None:
            return record
        return {**record, "expected_chunk": {**expected, "content": chunk.content}}

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        return [Workbook("retrieval", {"ks": self.options.k, "found_at": self.found_at})]

    def found_at(self, record: dict, k: int) -> bool:
        """Whether the question's chunk is among its first ``k`` (``min_score`` applied)."""
        return self._cut(record, k)[1] is not None
