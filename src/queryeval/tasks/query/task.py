"""Seed 003: text-to-query cases scored on their result tables.

The system returns a query; the gold and predicted queries both run on the same engine
(embedded pyoxigraph store, SPARQL endpoint, sqlite or DuckDB — read-only, updates refused,
timeouts and row limits), and the two result tables are compared with arity, entity-set,
row-matching and exact-match F1 (:mod:`queryeval.metrics.tables`). See docs/tables.md and
docs/execution.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from queryeval.engines.judge import JudgeOptions
from queryeval.errors import ConfigError
from queryeval.metrics.touched import SCORE_KEYS
from queryeval.suite.models import Case, DataSource, RunTolerance
from queryeval.tasks import judging
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Flag, Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Figures, Groups, Note, Overall, ReportItem, Workbook
from queryeval.tasks.query import judge as query_judge
from queryeval.tasks.query.engines import QueryEngines, _lang_of
from queryeval.tasks.query.testsuite import TestSuite, TestSuiteTally, summary_note, verdict

F1_KEYS = ("arity_f1", "entity_set_f1", "row_matching_f1", "exact_match_f1")
RATE_KEYS = ("syntax_ok", "returns_results", "perfect_match")
SCHEMA_KEYS = SCORE_KEYS  # what the query touched against the gold (tasks/query/explain.py)
SAMPLE_ROWS = 10
"""Rows of the gold and predicted tables kept in a record for the report (first N)."""
SAMPLE_CELL_CHARS = 200


def _plain_columns(table: dict) -> list[str]:
    """The column names :func:`_plain_rows` gives."""
    if "boolean" in table:
        return ["boolean"]
    if "head" in table:
        return list(table["head"].get("vars") or [])
    return [str(c) for c in table.get("columns") or []]


def _row_count(table: dict) -> int:
    if "boolean" in table:
        return 1
    if "head" in table:
        return len((table.get("results") or {}).get("bindings") or [])
    return len(table.get("rows") or [])


def _plain_rows(table: dict, first: int | None = None, only: list[str] | None = None
                ) -> tuple[list[str], list[tuple[str | None, ...]]]:
    """Column names and rows (tuples of cell text, None when unbound) of a result table,
    in either form the engines give (SPARQL JSON, or ``{"columns", "rows"}``); ``first``:
    only the first rows; ``only``: as columns (one list per named column), not rows."""
    if "boolean" in table:
        text = str(bool(table["boolean"])).lower()
        return ["boolean"], ([[text]] if only is not None else [(text,)])
    cols = _plain_columns(table)
    if "head" in table:
        bindings = (table.get("results") or {}).get("bindings") or []
        if first is not None:
            bindings = bindings[:first]

        held = getattr(table, "cells", None)  # a ResultJson: its cells, read once
        at = {c: i for i, c in enumerate(cols)}

        def column(c: str) -> list[str | None]:  # a cell's text; None when unbound
            if held is not None and c in at:
                return held[at[c]] if first is None else held[at[c]][:first]
            out: list[str | None] = []
            for term in [b.get(c) for b in bindings]:
                value = (term or {}).get("value")
                out.append(None if value is None else value if type(value) is str
                           else str(value))
            return out

        by_column = [column(c) for c in (only if only is not None else cols)]
        if only is not None:
            return cols, by_column
        return cols, list(zip(*by_column, strict=True)) if cols else [() for _ in bindings]
    rows = table.get("rows") or []
    if first is not None:
        rows = rows[:first]
    if only is not None:
        at = {c: i for i, c in enumerate(cols)}
        return cols, [[None if r[at[c]] is None else str(r[at[c]]) for r in rows] for c in only]
    return cols, [tuple(None if v is None else str(v) for v in row) for row in rows]


def result_sample(gold: dict, pred: dict | None, mapping: list[str] | None,
                  limit: int = SAMPLE_ROWS) -> dict:
    """The first ``limit`` rows of the gold and predicted tables for the report, each marked
    ``matched`` when the same row (its cells as text, predicted columns taken in the chosen
    mapping's order) is anywhere in the other table. The scores compare values under the
    task's rules; this mark is the plain-text view of that, for reading."""
    g_cols, g_rows = _plain_rows(gold)
    out: dict[str, Any] = {"limit": limit, "mapping": mapping,
                           "gold": {"columns": g_cols, "total": len(g_rows)}}
    p_cols = _plain_columns(pred) if pred is not None else []
    index = {c: i for i, c in enumerate(p_cols)}
    usable = mapping is not None and len(mapping) == len(g_cols) and all(c in index for c in mapping)
    # every predicted row is needed only in the mapped columns; whole, only the first `limit`
    projected = (list(zip(*_plain_rows(pred, only=list(mapping))[1], strict=True))
                 if usable and pred is not None else [])
    if usable and not g_cols:
        projected = [()] * _row_count(pred)
    p_rows = _plain_rows(pred, first=limit)[1] if pred is not None else []
    g_set, p_set = set(g_rows), set(projected)

    def cut(row: tuple[str | None, ...]) -> list[str | None]:
        return [v if v is None or len(v) <= SAMPLE_CELL_CHARS else v[:SAMPLE_CELL_CHARS - 1] + "…"
                for v in row]

    out["gold"]["rows"] = [cut(r) for r in g_rows[:limit]]
    out["gold"]["matched"] = [usable and r in p_set for r in g_rows[:limit]]
    if pred is not None:
        out["predicted"] = {"columns": p_cols, "total": _row_count(pred),
                            "rows": [cut(r) for r in p_rows[:limit]],
                            "matched": [usable and projected[i] in g_set
                                        for i in range(min(limit, len(p_rows)))]}
    return out


def _unscored(record: dict, exc: Exception) -> dict:
    """``record`` as an error on its case: its scoring overran (``exc``: a
    :class:`~queryeval.metrics.deadline.ScoringOverrun`). No scores (no figure from a
    comparison that did not finish); what was partly computed is dropped."""
    for key in ("mapping", "mapping_exact", "row_f1_bound", "order_score", "result_sample",
                "test_suite", "gold_matched"):
        record.pop(key, None)
    kind = getattr(exc, "kind", "deadline")
    record["status"] = "error"
    record["error_kinds"] = sorted({*record.get("error_kinds", []), "scoring"})
    record["scores"] = None
    record["scoring_error"] = {"kind": kind, "message": str(exc)}
    record["explanation"] = [{"kind": "unscored", "message": f"not scored: {exc}",
                              "detail": {"reason": kind}}]
    return record


class QueryOptions(TaskOptions):
    source: Annotated[DataSource | None,
                      Flag("Query: RDF file(s) to run queries on (embedded store).",
                           name="--graph", multiple=True, path=True),
                      Flag("Query: a sqlite (.sqlite/.db) or DuckDB file, or a postgresql:// "
                           "URL.", name="--database", type=str),
                      Flag("Query: a SPARQL 1.1 endpoint URL.", name="--endpoint", type=str)] = None
    """Default place to run queries: RDF file(s) (comma-separated), an endpoint URL, a
    sqlite (.sqlite/.db) or DuckDB (.duckdb) file, a ``postgresql://`` URL. A case's own ``target.query.source`` wins."""
    rules: Annotated[Literal["clean", "buildingqa"], Flag(
        "Query: table metric rules (default: clean).")] = "clean"
    timeout_s: float = 30.0
    max_rows: int = 100_000
    store_dir: str | None = None
    """Where embedded SPARQL stores persist between runs (default
    ``oxigraph`` under :func:`queryeval.io.caches.cache_root`, as the embedding cache)."""
    search_nodes: int = Field(default=200_000, ge=1)
    """Node budget of the column-mapping search (results say whether the search was exact)."""
    score_timeout_s: float | None = Field(default=120.0, gt=0, allow_inf_nan=False)
    """Deadline of one case's scoring (the comparison of its result tables, the result sample
    and the explanation; not the engines' execution): past it the case is an error (kind
    ``scoring``) and the run goes on. ``None``: no deadline (docs/execution.md)."""
    score_max_cells: int | None = Field(default=4_000_000, ge=1)
    """Memory cap of one case's scoring, as a cell budget: a gold or predicted result of more
    cells (rows × columns) is not converted or compared; the case is an error (kind
    ``scoring``). ``None``: no budget."""
    order: Literal["auto", "ignore"] = "auto"
    """auto: row order counts for exact match when the gold query has a top-level ORDER BY
    (a case's ``ordered: true|false`` wins); ignore: never (always so under buildingqa rules)."""
    abs_tol: RunTolerance = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Numbers within this absolute difference are equal (a case's ``abs_tol`` wins)."""
    rel_tol: RunTolerance = Field(default=0.0, ge=0, lt=1, allow_inf_nan=False)
    """Numbers within this relative difference are equal (a case's ``rel_tol`` wins)."""
    judge: Annotated[JudgeOptions | None, judging.JUDGE_FLAGS] = None
    """The LLM judge where execution cannot decide (tasks/query/judge.py, docs/judge.md)."""
    test_suite: Annotated[int, Flag(
        "Query: also compare on N neighbour databases/graphs (test_suite_match; "
        "docs/test-suite.md).")] = Field(default=0, ge=0, le=1000)
    """N > 0: also run gold and prediction on N neighbour databases/graphs (docs/test-suite.md)."""
    test_suite_seed: int = 0
    """Seed of the neighbour generation (same seed, same neighbours)."""
    compat: Annotated[Literal["none", "spider", "bird", "bird-soft-f1", "spider2"], Flag(
        "Query: spider or bird adds execution_accuracy as test-suite-sql-eval or BIRD "
        "computes it; bird-soft-f1 adds BIRD mini_dev's soft_f1; spider2 Spider 2.0's "
        "matching.")] = "none"
    """spider / bird: each case also gets ``execution_accuracy`` (1 or 0) as
    test-suite-sql-eval's ``eval_exec_match`` or BIRD's ``evaluation.py`` decides it;
    bird-soft-f1: ``soft_f1`` as BIRD mini_dev's ``evaluation_f1.py`` computes it; spider2:
    ``execution_accuracy`` by Spider 2.0's ``compare_multi_pandas_table``; the run gets the
    mean (:mod:`queryeval.tasks.query.execution`, docs/tables.md)."""


class QueryTask(QueryEngines, Task):
    name = "query"
    figures = Figures(settings=("rules", "test_suite", "test_suite_seed", "compat"), counts=(
        "cases", "total_cases", "gold_failures", "inexact_mapping_searches", "errors",
        "test_suite_refuted", "test_suite_unknown", "execution_unknown", *judging.COUNTS),
        unbounded=judging.UNBOUNDED)
    Options = QueryOptions
    #: The report's bootstrap CI of test_suite_accuracy: the mean of the known per-case
    #: test_suite_match verdicts (an unknown verdict has no value and is not counted).
    ci_sources: ClassVar[dict[str, Any]] = {"test_suite_accuracy": "test_suite_match"}

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        if self.options.rules == "buildingqa" and (self.options.abs_tol or self.options.rel_tol):
            raise ConfigError("abs_tol / rel_tol need --rules clean (the buildingqa rules "
                              "compare values as the reference does)")
        self._init_engines()
        self.case_judge = judging.CaseJudge(self.options.judge)
        if self.options.judge is not None:  # the judge's verdict and reason per case
            self.csv_columns = [*type(self).csv_columns, *judging.CSV_COLUMNS]
        self.test_suite = TestSuite(self.options.test_suite, self.options.test_suite_seed)
        self._exec_gold: dict = {}  # --compat: each gold query's rows (tasks/query/execution.py)
        if self.options.compat != "none":
            at = self.csv_columns.index("test_suite_match") + 1
            from queryeval.tasks.query.execution import figure

            self.csv_columns = [*self.csv_columns[:at], figure(self.options.compat),
                                *self.csv_columns[at:]]

    def close(self) -> None:
        self.case_judge.close()
        self._close_engines(*self.test_suite.release())

    def batch_info(self) -> dict:
        return self.case_judge.info()

    # --- requests and outputs ----------------------------------------------------------------
    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        t = self.target_of(case)
        source = t.source or self.options.source
        for req in out:
            req.update({"question": case.conversation[req["turn"]].content,
                        "language": t.language or (_lang_of(source) if source else "sparql"),
                        "source": source})
        return out

    def parse_output(self, raw: Any) -> str:
        """``{"query": "..."}`` or the query text itself."""
        if isinstance(raw, dict):
            if "query" not in raw:
                raise ValueError("output has no 'query' key")
            raw = raw["query"]
        if not isinstance(raw, str):
            raise ValueError(f"query must be text, got {type(raw).__name__}")
        return raw

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        """``{"case_id", "query"}``, or a BuildingQA predictions row (``query_id``,
        ``question_number``, ``building``, ``generated_sparql``)."""
        if "generated_sparql" in obj and "query_id" in obj:
            from queryeval.suite.buildingqa import case_id

            building = Path(str(obj.get("building") or "")).stem
            return case_id(building, str(obj["query_id"]), obj["question_number"]), None, \
                str(obj["generated_sparql"] or "")
        if "case_id" not in obj:
            raise ValueError("case_id: field required")
        if "query" not in obj:
            raise ValueError("query: field required")
        return str(obj["case_id"]), obj.get("turn"), self.parse_output(obj["query"])

    # --- scoring ---------------------------------------------------------------------------------
    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        (o,) = outcomes
        t = self.target_of(case)
        record = self.base_record(case, outcomes)
        record.update({
            "question": case.conversation[o.turn].content,
            "metadata": dict(case.metadata),
            "source": self._source(t),
            "language": t.language or _lang_of(self._source(t)),
            "gold_query": t.gold,
            **({"gold_alternatives": list(t.alternatives)} if t.alternatives else {}),
            **({"gold_tables": [g.model_dump() for g in t.gold_tables]} if t.gold_tables else {}),
            "modes": {k: getattr(t, k) for k in ("ordered", "abs_tol", "rel_tol", "columns")
                      if getattr(t, k) is not None},
            "predicted_query": o.output,
            "error": o.error,
            "attempts": o.attempts,
            "latency_ms": o.latency_ms,
        })
        return query_judge.settle(self, self._fill_scores(record))

    def _golds(self, record: dict) -> tuple[list[tuple[dict, str | None]], dict, str | None]:
        """Every gold of a case as (result table, gold query or None for a gold table), the
        first gold query's execution info, and the kind of failure of a gold query (None)."""
        queries = [record["gold_query"], *record.get("gold_alternatives", [])]
        golds: list[tuple[dict, str | None]] = []
        first_info: dict = {}
        for i, query in enumerate(queries):
            table, info = self._gold_result(record["source"], query)
            if i == 0:
                first_info = info
            if table is None:
                return [], info if i == 0 else {**info, "alternative": i}, "gold_query"
            golds.append((table, query))
        for t in record.get("gold_tables", []):
            golds.append(({"columns": t["columns"], "rows": t["rows"]}, None))
        return golds, first_info, None

    def _modes(self, record: dict, ordered: bool | None = None) -> dict:
        """Comparison options of one case against its gold query: suite options, then the
        case's own (``ordered``: already decided, else see :meth:`_ordered`)."""
        m = record.get("modes") or {}
        abs_tol = m.get("abs_tol") if m.get("abs_tol") is not None else self.options.abs_tol
        rel_tol = m.get("rel_tol") if m.get("rel_tol") is not None else self.options.rel_tol
        if self.options.rules == "buildingqa":  # the reference compares values as text; the
            abs_tol = rel_tol = 0.0  # record's comparison says so (a suite-wide tol is refused)
        if ordered is None:
            ordered = self._ordered(record, record["gold_query"])
        return {"ordered": ordered, "abs_tol": abs_tol, "rel_tol": rel_tol,
                "columns": m.get("columns")}

    def _ordered(self, record: dict, query: str | None) -> bool:
        """Whether row order counts against one gold (``query``: that gold's query, None for
        a gold given as a table): the case's ``ordered`` when it has one; else, under
        ``order=auto`` and clean rules, whether that gold query sorts at the top level. Each
        gold decides for itself; a gold table carries no order of its own."""
        from queryeval.metrics.tables import query_is_ordered

        explicit = (record.get("modes") or {}).get("ordered")
        if explicit is not None:
            return bool(explicit)
        if self.options.rules == "buildingqa" or self.options.order == "ignore" or query is None:
            return False
        return bool(query_is_ordered(query, record["language"]))

    def _fill_scores(self, record: dict) -> dict:
        """The case's scores and what explains them; a scoring that overruns its deadline or
        cell budget (:mod:`queryeval.metrics.deadline`) makes the case an error instead."""
        from queryeval.metrics.deadline import Deadline, ScoringOverrun
        from queryeval.metrics.tables.encode import forget_encoding

        try:
            return self._score_tables(record, Deadline(self.options.score_timeout_s))
        except ScoringOverrun as exc:
            return _unscored(record, exc)
        finally:
            forget_encoding()  # the case's tables are not held past its scoring

    def _score_tables(self, record: dict, deadline: Any) -> dict:
        from queryeval.metrics.deadline import ScoringOverrun, gc_paused
        from queryeval.metrics.tables import Budget, as_table, best_of_golds

        golds, gold_info, failure = self._golds(record)
        record["gold_execution"] = gold_info
        if gold_info.get("status") == "too_large":
            raise ScoringOverrun("cells", f"gold: {gold_info.get('reason')}")
        if failure is not None:
            record["status"] = "error"
            record["error_kinds"] = sorted({*record.get("error_kinds", []), failure})
            record["scores"] = None
            return record
        pred_query = record["predicted_query"]
        call_error = record.get("error")
        if pred_query is None and isinstance(call_error, dict):  # a timeout, an exception, ...
            kind = str(call_error.get("kind") or "error")
            message = str(call_error.get("message") or "").strip()
            pred, info = None, {"status": "no_query", "reason": (
                f"the call to the system failed ({kind})" + (f": {message}" if message else ""))}
        elif pred_query is None:
            pred, info = None, {"status": "no_query", "reason": "the system returned no query"}
        else:
            pred, info = self._execute(record["source"], pred_query)
        record["predicted_execution"] = info
        if info.get("status") == "too_large":
            raise ScoringOverrun("cells", f"prediction: {info.get('reason')}")
        scores = {k: 0.0 for k in (*F1_KEYS, *RATE_KEYS)}
        gold, index = golds[0][0], 0
        compared: tuple[Any, Any] | None = None  # (predicted, gold) tables, read once
        if pred is not None:
            engine = self.engine(record["source"])
            # Arity: the reference's regular expression reads the query text (buildingqa
            # rules); clean rules count the columns of the result the sandboxed worker
            # returned -- the same number, and the scorer never parses or runs a prediction.
            by_text = record["language"] == "sparql" and self.options.rules == "buildingqa"
            try:
                per_gold = [self._ordered(record, q) for _, q in golds]  # golds[0]: the gold
                modes = self._modes(record, ordered=per_gold[0])
                record["comparison"] = modes
                with deadline.active(), gc_paused():  # the case's scoring deadline; no cycles made
                    # each table read once (cells to text), for the scores and the explanation
                    p_table = as_table(pred, rules=self.options.rules)
                    g_tables = [as_table(g, rules=self.options.rules) for g, _ in golds]
                    index, ts = best_of_golds(
                        g_tables, p_table,
                        gold_queries=[q if by_text else None for _, q in golds],
                        rules=self.options.rules,
                        budget=Budget(max_nodes=self.options.search_nodes, max_seconds=None),
                        pred_query=pred_query if by_text else None,
                        prefixes=getattr(engine, "prefixes", None), **{**modes, "ordered": per_gold})
                    record["comparison"] = {**modes, "ordered": per_gold[index]}
                    compared = (p_table, g_tables[index])
            except ScoringOverrun:
                raise
            except Exception as exc:  # noqa: BLE001 - an unscorable result scores 0, recorded
                record["predicted_execution"] = {**info, "status": "unscorable",
                                                 "reason": f"{type(exc).__name__}: {exc}"}
                scores["syntax_ok"] = 1.0
                pred = None  # nothing compared: the explanation says why
        if pred is not None:
            gold = golds[index][0]
            if len(golds) > 1:
                record["gold_matched"] = index  # 0: gold, then alternatives, then gold tables
            scores.update({k: float(getattr(ts, k)) for k in F1_KEYS})
            scores["syntax_ok"] = 1.0
            scores["returns_results"] = 1.0 if ts.pred_rows > 0 else 0.0
            scores["perfect_match"] = 1.0 if ts.exact_match_f1 == 1.0 else 0.0
            record["mapping"] = list(ts.mapping) if ts.mapping is not None else None
            record["mapping_exact"] = ts.exact
            if not ts.exact:  # a proven ceiling: the optimum lies between row F1 and this
                record["row_f1_bound"] = ts.row_f1_bound
            if ts.order_score is not None:
                record["order_score"] = ts.order_score
            with deadline.active(), gc_paused():
                record["result_sample"] = result_sample(gold, pred, record["mapping"])
        elif record["predicted_execution"].get("status") != "unscorable":
            record["result_sample"] = result_sample(gold, None, None)
            scores["syntax_ok"] = 0.0 if (info.get("syntax_error") or info["status"] in ("refused", "no_query")) else 1.0
        if self.options.test_suite:
            scores["test_suite_match"] = verdict(self, record, golds, pred, info, result_sample,
                                                 deadline=deadline)
        else:  # re-scored without --test-suite: no verdict of an earlier scoring stays
            record.pop("test_suite", None)
        if self.options.compat != "none":  # the benchmark's own verdict (tasks/query/execution.py)
            from queryeval.tasks.query import execution as query_exec

            key = query_exec.figure(self.options.compat)
            scores[key], record["execution"] = query_exec.verdict(self, record)
        else:
            record.pop("execution", None)
        from queryeval.tasks.query import explain as qx  # why it differs, what it touched

        e_pred, e_gold = compared if compared is not None and pred is not None else (pred, gold)
        with deadline.active(), gc_paused():
            record["explanation"] = qx.explanation(record, e_pred, e_gold,
                                                   record.get("comparison", {}),
                                                   record.get("mapping"), self.options.rules)
        scores.update(qx.touched_fields(self, record, golds[index][1] or golds[0][1]))
        record["scores"] = scores
        return record

    def case_passed(self, record: dict) -> bool:
        """An attempt passes (``--repeats``) when its result table matches the gold one
        exactly (``exact_match_f1`` = 1) and no neighbour refuted it (``test_suite_match`` is
        not 0, under --test-suite); a failed call does not pass."""
        scores = record.get("scores") or {}
        judged = query_judge.judge_verdict(record)
        if judged is not None:
            return judged
        return record.get("status") != "error" and scores.get("exact_match_f1") == 1.0 \
            and scores.get("test_suite_match") != 0.0

    def rescore_record(self, record: dict) -> dict:
        out = dict(record)
        out["error_kinds"] = [k for k in record.get("error_kinds", [])
                              if k not in ("gold_query", "scoring")]  # both decided again
        out.pop("scoring_error", None)
        out["status"] = "error" if out["error_kinds"] else "ok"
        return query_judge.settle(self, self._fill_scores(out), ask=False)

    # --- aggregation -------------------------------------------------------------------------------
    @staticmethod
    def _means(cases: int, means: Iterable[float | None]) -> dict:
        """A group's (or the run's) figures: its scored cases and the mean of each score
        (``None`` for no cases)."""
        out: dict[str, Any] = {"cases": cases}
        out.update(zip((*F1_KEYS, *RATE_KEYS), means, strict=True))
        return out

    def aggregate(self, records: Iterable[dict]) -> dict:
        """Overall and per-group (the case's tags, and its ``question_source`` and
        ``building`` metadata) means of the scored cases, read from ``records`` once.

        A case whose gold query failed has no scores: it is counted in ``gold_failures`` (an
        error, so ``on_error: skip`` drops it anyway) and enters no mean. Per scored case it
        adds its seven scores to exact running means (:class:`~queryeval.tasks.accum.Values`),
        overall and in its groups: nothing is kept per case. Groups are reported sorted by name."""
        keys = (*F1_KEYS, *RATE_KEYS)
        tally = Tally(self)
        gold_failures = 0
        judge = judging.JudgeTally()

        def watch(rs: Iterable[dict]) -> Iterator[dict]:
            nonlocal gold_failures
            for r in judge.watch(rs):
                # no scores: its gold failed (a judge may have decided it after all); an
                # overrun of scoring has no scores either, and is no gold failure
                if r["scores"] is None and "scoring" not in (r.get("error_kinds") or []):
                    gold_failures += 1
                yield r

        cols = [Values() for _ in keys]
        groupings: dict[str, dict[Any, list[Values]]] = {"tag": {}, "question_source": {},
                                                         "building": {}}
        inexact = 0
        from queryeval.tasks.query.explain import DiagnosisTally

        diagnosis = DiagnosisTally()  # schema_* means, cases per kind of difference
        suite = TestSuiteTally()
        from queryeval.tasks.query.execution import ExecTally

        execution = ExecTally(self.options.compat) if self.options.compat != "none" else None
        # with a judge, pass_rate: the share of the counted cases that pass (case_passed, the
        # rule of the report's pass column and --repeats), and its judge-corrected figure
        corrected = judging.CorrectedTally() if self.options.judge is not None else None
        for r in tally.counted(watch(records)):
            scores = r["scores"]
            if corrected is not None:
                corrected.add(self.case_passed(r), query_judge.judge_verdict(r) is not None,
                              r.get("cluster"))
            if scores is None:
                continue
            diagnosis.add(r)
            suite.add(r)
            if execution is not None:
                execution.add(r)
            values = [scores[key] for key in keys]
            for col, v in zip(cols, values, strict=True):
                col.add(v)
            if r.get("mapping_exact") is False:
                inexact += 1
            meta = r.get("metadata", {})
            for name, groups in groupings.items():
                for value in (r.get("tags") or []) if name == "tag" else [meta.get(name)]:
                    if value:
                        gcols = groups.get(value)
                        if gcols is None:
                            gcols = groups[value] = [Values() for _ in keys]
                        for col, v in zip(gcols, values, strict=True):
                            col.add(v)

        overall = self._means(len(cols[0]), [c.mean() for c in cols])
        if corrected is not None:
            overall["pass_rate"] = corrected.passes / corrected.cases if corrected.cases else None
            overall.update(corrected.figures(self.options.judge))
        overall.update({
            "total_cases": tally.total,
            "gold_failures": gold_failures,
            "inexact_mapping_searches": inexact,
            "rules": self.options.rules,
            **tally.error_summary(),
            **judge.overall(self.options.judge),
            **diagnosis.overall(),
        })
        if self.options.test_suite:
            overall.update({**suite.figures(), "test_suite": self.options.test_suite,
                            "test_suite_seed": self.options.test_suite_seed})
        if execution is not None:
            overall.update({**execution.figures(), "compat": self.options.compat})
        group_metrics = {
            name: {value: self._means(len(gcols[0]), [c.mean() for c in gcols])
                   for value, gcols in sorted(groups.items())}
            for name, groups in groupings.items() if groups}
        return {"overall_metrics": overall, "group_metrics": group_metrics,
                "differences": diagnosis.differences()}

    # --- outputs -----------------------------------------------------------------------------------
    csv_columns = ["case_id", "question", *F1_KEYS, *RATE_KEYS, "test_suite_match", *SCHEMA_KEYS,
                   "mapping_exact", "row_f1_bound", "order_score", "why", "touched",
                   "gold_matched", "gold_rows", "gold_columns",
                   "predicted_rows", "predicted_columns", "predicted_status", "predicted_reason",
                   "gold_query", "predicted_query", "error"]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        g = record.get("gold_execution") or {}
        p = record.get("predicted_execution") or {}
        yield {
            "case_id": record["case_id"], "question": record["question"],
            **(record["scores"] or {}),
            "mapping_exact": record.get("mapping_exact"),
            "why": " | ".join(str(i.get("message")) for i in record.get("explanation") or []),
            "touched": (record.get("touched") or {}).get("message"),
            "row_f1_bound": record.get("row_f1_bound"),
            "order_score": record.get("order_score"),
            "gold_matched": record.get("gold_matched"),
            "gold_rows": g.get("rows"), "gold_columns": g.get("columns"),
            "predicted_rows": p.get("rows"), "predicted_columns": p.get("columns"),
            "predicted_status": p.get("status"), "predicted_reason": p.get("reason"),
            "gold_query": record["gold_query"], "predicted_query": record["predicted_query"],
            "error": (f"{record['error']['kind']}: {record['error']['message']}" if record.get("error")
                      else f"scoring: {record['scoring_error']['message']}"
                      if record.get("scoring_error") else ""),
            **(judging.judge_cells(record) if self.options.judge is not None else {}),
        }

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        return [Workbook("table", {"columns": self.csv_columns, "rows": self.csv_rows})]

    def summary(self, metrics: dict) -> list[Any]:
        keys = [*F1_KEYS, *RATE_KEYS, *(k for k in SCHEMA_KEYS if k in metrics["overall_metrics"]),
                "cases", "gold_failures", "errors"]
        if "pass_rate" in metrics["overall_metrics"]:  # a judged run (tasks/query/judge.py)
            keys.insert(len(F1_KEYS) + len(RATE_KEYS), "pass_rate")
        if "test_suite_accuracy" in metrics["overall_metrics"]:
            at = len(F1_KEYS) + len(RATE_KEYS)
            keys[at:at] = ["test_suite_accuracy", "test_suite_refuted", "test_suite_unknown"]
        from queryeval.tasks.query.execution import summary_keys

        at = len(F1_KEYS) + len(RATE_KEYS)
        keys[at:at] = summary_keys(metrics["overall_metrics"])
        if metrics["overall_metrics"].get("inexact_mapping_searches"):
            # exact: false — the search budget ran out; the figures are lower bounds
            keys.append("inexact_mapping_searches")
        out: list[Any] = [Overall(keys)]
        inexact = metrics["overall_metrics"].get("inexact_mapping_searches")
        if inexact:  # a mean per attempt with --repeats: written as a figure
            out.append(Note(f"exact: false for {inexact:g} case(s): the column-mapping search ran "
                            "out of its budget (search_nodes); their entity and row F1 are those "
                            "of the best mapping found, possibly below the optimum, which "
                            "row_f1_bound (CSV, xlsx, HTML) bounds from above.", "warning"))
        if "test_suite_accuracy" in metrics["overall_metrics"]:
            out.append(summary_note(metrics["overall_metrics"]))
        out += judging.corrected_note(metrics["overall_metrics"])
        out += judging.note_for(self.options.judge, metrics["overall_metrics"])
        for name, groups in metrics["group_metrics"].items():
            out.append(Groups(groups, name, ["cases", *F1_KEYS]))
        from queryeval.tasks.query.explain import summary_notes

        return out + summary_notes(metrics)
