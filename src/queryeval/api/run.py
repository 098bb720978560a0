"""A run log seen from Python: metrics, one row per scored case or turn, groups, reports."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from queryeval.api.text import render_text
from queryeval.errors import InputError


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Numbers, booleans and text of nested dicts as ``{"a.b": value}``; lists are left out."""
    out: dict[str, Any] = {}
    if not isinstance(value, dict):
        return out
    for key, v in value.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(v, dict):
            out.update(_flat(v, name))
        elif v is None or isinstance(v, (bool, int, float, str)):
            out[name] = v
    return out


def _error_text(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, dict):
        return f"{error.get('kind', 'error')}: {error.get('message', '')}"
    return str(error)


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _fmt(value: Any) -> str:
    from queryeval.report.numbers import figure

    return figure(value)


class Run:
    """One batch of a run log (``batch_<id>.json`` and the files beside it).

    Returned by :func:`queryeval.evaluate`, :func:`queryeval.resume` and
    :func:`queryeval.load`. Records are read from disk on first use. A run evaluated with
    ``out=None`` lives in a temporary folder that is removed when the last Run using it goes.
    """

    def __init__(self, batch: str | Path, *, warnings: list[str] | None = None,
                 keep: Any = None, fail_under: Any = None) -> None:
        self.path = Path(batch)
        """The run's ``batch_<id>.json``."""
        self.warnings: list[str] = list(warnings or [])
        """Warnings of the run (e.g. unused recorded responses)."""
        self.fail_under: dict[str, float] = dict(fail_under or {})
        """Gates given to :func:`queryeval.evaluate` (``fail_under``), checked by
        :meth:`check_gates`."""
        self._keep = keep  # a TemporaryDirectory: removed once no Run refers to it
        self._loaded: Any = None
        self._figs: Any = None

    # --- the log --------------------------------------------------------------------------
    def _load(self) -> Any:
        """The run log read back (its records only when first asked for)."""
        if self._loaded is None:
            from queryeval.run.results import RunResults

            self._loaded = RunResults.open(self.path)
        return self._loaded

    @property
    def folder(self) -> Path:
        """The folder holding the run's files."""
        return self.path.parent

    @property
    def batch(self) -> dict:
        """The batch document (metadata and configuration)."""
        return self._load().batch

    @property
    def batch_id(self) -> str:
        return self._load().batch_id

    @property
    def task_name(self) -> str | None:
        return self._load().task_name

    @property
    def task(self) -> Any:
        """The :class:`~queryeval.tasks.base.Task` of the run (None if not installed)."""
        return self._load().task

    @property
    def config(self) -> dict:
        """The run's ``evaluation_config`` (suite, system, task options, …)."""
        return dict(self.batch.get("evaluation_config", {}))

    @property
    def status(self) -> str | None:
        return self.batch.get("status")

    @property
    def metrics(self) -> dict:
        """The metrics document, the same dict as ``metrics_<id>.json``: ``overall_metrics``
        and the task's group figures (``group_metrics``, retrieval's ``dataset_metrics``)."""
        metrics = self._load().metrics
        if metrics is None:
            raise InputError("the run has no metrics yet (not finished; resume it)",
                             path=self.path)
        return metrics

    @property
    def calls(self) -> dict:
        """Calls to the system the records hold: ``{"total": N, "failed": M}``."""
        calls = self.metrics.get("calls") or {}
        return {"total": int(calls.get("total", 0)), "failed": int(calls.get("failed", 0))}

    @property
    def error_summary(self) -> list[dict]:
        """Failed calls per error kind, in order of first appearance: ``kind``, ``count``,
        ``first_message``, ``case`` (empty when no call failed)."""
        return list(self.metrics.get("error_summary") or [])

    def check_calls(self, max_error_rate: float | None = None) -> None:
        """Raise :class:`~queryeval.run.finish.CallsFailed` (``queryeval run``'s exit code 3)
        when every call failed, or more than ``max_error_rate`` of them (default: the run's
        own ``max_error_rate``, 1.0 unless set); calls to the system and calls to the judge
        (``metrics["judge_calls"]``) are each held to it."""
        from queryeval.run.finish import check_error_rate

        limit = self.config.get("max_error_rate", 1.0) if max_error_rate is None else max_error_rate
        check_error_rate(self.calls["total"], self.calls["failed"], float(limit))
        judge = self.metrics.get("judge_calls") or {}  # judge calls count the same way
        check_error_rate(int(judge.get("total", 0)), int(judge.get("failed", 0)), float(limit),
                         to="the judge")

    def check_golds(self) -> None:
        """Raise :class:`~queryeval.errors.InputError` (exit code 2) when the suite's golds
        all failed, so that no case could be scored: the line names how many and the first
        case's gold error (a query task whose every gold query is refused or does not run).
        A run with some scored cases passes; its failed golds are counted in the metrics
        (``gold_failures``)."""
        from queryeval.errors import InputError

        overall = self.overall
        failures = overall.get("gold_failures")
        if not isinstance(failures, int) or failures <= 0 or overall.get("cases"):
            return
        first = next((r for r in self.records if "gold_query" in (r.get("error_kinds") or [])),
                     None)
        if first is None:
            return
        info = first.get("gold_execution")
        reason = (info.get("reason") or info.get("status")) if isinstance(info, dict) else None
        suite = (self.batch.get("suite_info") or {}).get("path")
        raise InputError(f"every gold query failed ({failures} of {failures} cases), so no "
                         f"case was scored; the first: {reason or 'it did not run'}",
                         path=suite, record=str(first.get("case_id")), field="gold")

    def check_gates(self, fail_under: Any = None) -> list:
        """Raise :class:`~queryeval.errors.GateFailure` naming every missed threshold of
        ``fail_under`` (default: the ones given to :func:`queryeval.evaluate`); return the
        results when all pass."""
        from queryeval.report.gates import check_thresholds

        return check_thresholds(self.metrics, dict(fail_under or self.fail_under))

    @property
    def overall(self) -> dict:
        """``metrics["overall_metrics"]``."""
        return self.metrics.get("overall_metrics", {})

    @property
    def records(self) -> list[dict]:
        """The result records (one per case), in the suite's order."""
        return self._load().records

    @property
    def derived(self) -> list[Run]:
        """Batches derived from this one (e.g. retrieval's smaller k), one Run each."""
        out = []
        for batch_id in self.batch.get("derived_batches", {}).values():
            out.append(Run(self.folder / f"batch_{batch_id}.json", keep=self._keep))
        return out

    # --- tables -----------------------------------------------------------------------------
    @property
    def results(self) -> Any:
        """The run model (:class:`~queryeval.run.results.RunResults`): every case with its
        attempts reduced once (means, passes, verdict), what every comparison reads."""
        return self._load()

    @property
    def label(self) -> str:
        """The run's label (``name=`` / ``--name``, else stable for the same system)."""
        return self._load().label

    def case_rows(self) -> list[dict]:
        """The rows of :meth:`to_pandas` as dicts, read from the run model: per attempt (with
        ``repeat`` and the case's ``verdict`` when the run has repeats), per scored turn for
        multi-turn tasks."""
        loaded = self._load()
        records = loaded.records
        repeated = loaded.repeats > 1
        rows = []
        for case in loaded.cases:
            for att in case.attempts:
                rec = records[att.index]
                base = {"id": case.case_id, "name": case.name,
                        "tags": list(rec.get("tags") or [])}
                if repeated:
                    base.update(repeat=att.repeat, verdict=att.verdict)
                turns = rec.get("turns")
                if isinstance(turns, list) and turns and all(isinstance(t, dict) for t in turns):
                    for t in turns:
                        rows.append({**base, "turn": t.get("turn"),
                                     "status": "error" if t.get("error") else "ok",
                                     "error": _error_text(t.get("error")),
                                     **_flat(t.get("scores"))})
                    continue
                errors = [e for e in [rec.get("error")] if e] or \
                    [{"kind": k, "message": ""} for k in rec.get("error_kinds") or []]
                rows.append({**base, "turn": rec.get("turn"), "status": rec.get("status"),
                             "error": _error_text(errors[0]) if errors else None,
                             **_flat(rec.get("scores")), **att.values})
        return rows

    def case_table(self) -> Any:
        """One row per case (index ``id``): each figure's mean over the case's attempts,
        ``attempts``, ``passes`` and ``verdict`` (pass, fail, error, flaky): the per-case
        values every comparison pairs on."""
        import pandas as pd

        rows = list(self._load().rows("case"))
        frame = pd.DataFrame(rows)
        return frame.set_index("case_id") if rows else frame

    def to_pandas(self) -> Any:
        """One row per scored case (per scored turn for multi-turn tasks): ``id``, ``name``,
        ``tags``, ``turn``, ``status``, ``error`` and every per-case metric (nested scores
        as dotted names, e.g. ``fields.item.recall``)."""
        import pandas as pd

        rows = self.case_rows()
        columns = ["id", "name", "tags", "turn", "status", "error"]
        for row in rows:
            columns += [k for k in row if k not in columns]
        return pd.DataFrame(rows, columns=columns)

    @property
    def groups(self) -> dict[str, Any]:
        """Group figures as DataFrames, one per group key (``tag``, ``dimension``, ``field``,
        ``dataset``, ``concept``, …) that has a member, one row per group member."""
        import pandas as pd

        metrics = self.metrics
        sources: dict[str, Any] = dict(metrics.get("group_metrics") or {})
        for key, value in metrics.items():
            if key.endswith("_metrics") and key not in ("overall_metrics", "group_metrics") \
                    and isinstance(value, dict):
                sources.setdefault(key[: -len("_metrics")], value)
        from queryeval.report.html import figure_kinds, own_names
        from queryeval.report.html_figures import count_columns

        # an older name (recall_at_k) under the figure's own name (recall@10), as the task
        # declares it (Task.figures) and the HTML report shows it
        kinds = figure_kinds(self.task)
        run_k = {"k": (metrics.get("overall_metrics") or {}).get("k")}
        out = {}
        for key, members in sources.items():
            if not isinstance(members, dict) or not any(isinstance(v, dict)
                                                        for v in members.values()):
                continue  # an empty group kind (no case has a concept) is not shown
            frame = pd.DataFrame.from_dict(count_columns(
                {str(m): own_names(_flat(v), kinds, run_k, counts=False)
                 for m, v in members.items() if isinstance(v, dict)}, kinds), orient="index")
            frame.index.name = key
            out[key] = frame
        return out

    # --- reports ----------------------------------------------------------------------------
    def report(self, folder: str | Path | None = None, *, html_path: str | Path | None = None,
               xlsx: bool = True, resamples: int = 10_000, seed: int = 0) -> list[Path]:
        """Write the HTML report and the task's Excel report; return the files written.

        ``folder``: where to write them (default: beside the run log); ``html_path``: the HTML
        file itself (overrides ``folder`` for it)."""
        from queryeval.io.writing import writing
        from queryeval.report.html import write_html_report
        from queryeval.report.task_reports import write_task_reports
        from queryeval.run.log import RunPaths

        loaded = self._load()
        paths = loaded.log.paths
        if folder is not None:
            target = Path(folder)
            with writing(target):
                target.mkdir(parents=True, exist_ok=True)
            paths = RunPaths(target, loaded.batch_id)
        if html_path is None and folder is not None:
            html_path = paths.folder / f"report_{loaded.batch_id}.html"
        with writing(html_path or paths.folder / f"report_{loaded.batch_id}.html"):
            written = [write_html_report(loaded, html_path, resamples=resamples, seed=seed)]
        if xlsx and loaded.task is not None and loaded.metrics is not None:
            with writing(paths.report_xlsx):
                written += write_task_reports(loaded.task, paths, loaded.records, loaded.metrics)
        return [Path(p) for p in written]

    def compare(self, baseline: Run | str | Path, **kwargs: Any) -> Any:
        """``queryeval.compare(baseline, self, **kwargs)``: this run as B."""
        from queryeval.api.compare import compare

        return compare(baseline, self, **kwargs)

    # --- display ----------------------------------------------------------------------------
    def summary(self) -> Any:
        """The rich renderables ``queryeval run`` prints."""
        from queryeval.report.console import overall_table, render_summary

        task = self.task
        from queryeval.io.safetext import console_line

        out = [console_line(f"run: {self.label}", "bold")]  # a label's newline ends here
        from queryeval.report.html_figures import figure_kinds

        out += (render_summary(task.summary(self.metrics), self.metrics, figure_kinds(task))
                if task is not None
                else [overall_table(self.metrics)])
        if "repeats" in self.metrics:
            from queryeval.report.console import repeats_tables

            out = [*out, *repeats_tables(self.metrics["repeats"])]
        if isinstance(self.metrics.get("sequential"), dict):  # --stop-when-decided
            from queryeval.run.sequential import summary_line

            out.append(console_line(summary_line(self.metrics["sequential"])))
        return out

    def __str__(self) -> str:
        if self._load().metrics is None:
            return f"run {self.batch_id} ({self.task_name}): not finished"
        return render_text(self.summary())

    def __repr__(self) -> str:
        return f"<queryeval.Run {self.label} {self.task_name} {self.path}>"

    WORST_CASES = 5
    """Cases the notebook view lists under "worst cases"."""

    def _report_figures(self) -> Any:
        """The HTML report's figures (:func:`queryeval.report.html.report_figures`, its
        default 10,000 resamples, seed 0: the same intervals), computed once per Run."""
        if getattr(self, "_figs", None) is None:
            from queryeval.report.html import report_figures

            self._figs = report_figures(self._load())
        return self._figs

    def _repr_html_(self) -> str:
        """The notebook view: the pass/fail counts, the headline figures with their 95%
        intervals (or the reason there is none), the worst cases (the HTML report's order:
        errors, fails, flaky, then the farthest from the gold, each with the JUnit report's
        reason), then every figure (folded), the groups and the repeats section."""
        e = html.escape
        head = (f"<b>queryeval run</b> <b>{e(self.label)}</b> · task "
                f"<code>{e(str(self.task_name))}</code> · batch "
                f"<code>{e(self.batch_id[:8])}</code> · status {e(str(self.status))}")
        if self._load().metrics is None:
            return f"<div class='queryeval-run'>{head}</div>"
        from queryeval.report.html import (
            case_order,
            figure_kinds,
            no_interval,
            overall_figures,
            overall_rows,
            overall_timings,
            repeats_section,
        )
        from queryeval.report.junit import case_outcome

        # the HTML report's split: settings in the heading, older names under their own
        kinds = figure_kinds(self.task)
        figures, settings = overall_figures(self.overall, kinds)
        timings = overall_timings(self.overall, kinds)
        head += f" · {e(settings)}" if settings else ""
        loaded = self._load()
        cases = loaded.cases
        counts = {v: sum(1 for c in cases if c.verdict == v)
                  for v in ("pass", "fail", "error", "flaky")}
        tally = (f"<p class='counts'><b>{len(cases)} cases</b>: "
                 + ", ".join(f"<b>{n}</b> {v}" for v, n in counts.items() if n or v != "flaky")
                 + "</p>")
        fig = self._report_figures()
        lead = []
        for key, value, ci in overall_rows(loaded, fig.metrics, fig.cis):
            if kinds.kind(key) != "metric" or isinstance(value, (bool, str)) or \
                    isinstance(value, int) or len(lead) >= 6:
                continue
            interval = (f"[{ci.low:.4f}, {ci.high:.4f}]" if ci is not None else
                        f"— ({no_interval(key, value, fig.cis, kinds) or 'no interval'})")
            lead.append(f"<tr><td>{e(str(key))}</td><td style='text-align:right'>"
                        f"{e(_fmt(value))}</td><td style='text-align:right'>{e(interval)}</td></tr>")
        headline = (f"<table class='headline'><tr><th>headline</th><th>value</th><th>95% CI "
                    f"of the case mean</th></tr>{''.join(lead)}</table>" if lead else "")
        order = case_order([dict(c.means) for c in cases], [c.verdict for c in cases])
        worst = [cases[i] for i in order if cases[i].verdict != "pass"][:self.WORST_CASES]
        bad = "".join(
            f"<tr><td>{e(str(c.name or c.case_id))}</td><td><code>{e(c.case_id)}</code></td>"
            f"<td>{e(c.verdict)}</td><td>{e(_cut(case_outcome(loaded.records, c)[1]))}</td></tr>"
            for c in worst)
        worst_html = (f"<p><b>worst cases</b> ({len(worst)} of "
                      f"{sum(1 for c in cases if c.verdict != 'pass')} that did not pass)</p>"
                      f"<table class='worst'><tr><th>case</th><th>id</th><th>verdict</th>"
                      f"<th>why</th></tr>{bad}</table>" if worst else "<p>every case passed</p>")
        rows = "".join(
            f"<tr><td>{e(str(k))}</td><td style='text-align:right'>{e(_fmt(v))}</td></tr>"
            for k, v in {**figures, **timings}.items())
        groups = ", ".join(f"{e(k)} ({len(v)})" for k, v in self.groups.items() if len(v))
        more = f"<p>groups: {groups}</p>" if groups else ""
        # --repeats: the metrics' own repeats section (pass rate, pass@k, pass^k, flaky
        # cases), rendered as the HTML report renders it, never recomputed here
        more += repeats_section(self.metrics.get("repeats"))
        return (f"<div class='queryeval-run'><p>{head}</p>{tally}{headline}{worst_html}"
                f"<details><summary>every figure</summary><table><tr><th>metric</th>"
                f"<th>value</th></tr>{rows}</table></details>{more}<p><code>{e(str(self.path))}"
                "</code></p></div>")

    def to_json(self) -> str:
        """The metrics document as JSON text."""
        return json.dumps(self.metrics, ensure_ascii=False, indent=2)
