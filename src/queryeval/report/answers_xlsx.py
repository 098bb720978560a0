"""Seed 001's Excel report: sheet "Overview" (one row per question) and sheet "Statistics"
with the seed's two tables (overall PSAQ/ABQ/UASQ; ABQ by number of concepts) and the
per-concept (and per-level) figures. A judged run's Overview adds what decided each case and
the judge's verdict and reason, read from the record (``decided_by``, ``judge``)."""

from __future__ import annotations

from pathlib import Path

from queryeval.report import xlsx
from queryeval.tasks.judging import CSV_COLUMNS, judge_cells

PERCENT = "0.00%"


def _subs_text(record: dict) -> str:
    return "\n".join(
        f"{'✓' if s['matched'] else '✗'} @{s['name']}: expected [{s['expected']}], "
        f"got {'[' + s['extracted'] + ']' if s['extracted'] is not None else '(none)'}"
        for s in record["subquestions"]
    )


def write_answers_xlsx(path: str | Path, records: list[dict], metrics: dict) -> Path:
    wb, ws = xlsx.new_book("Overview")
    headers = ["id", "question", "concepts", "level", "sub-answers", "proportion correct",
               "all correct", "response", "status"]
    rep = xlsx.RepeatColumn(metrics)  # --repeats: which attempt each row is
    judged = any("judge" in r for r in records)  # a run with a judge records it on every case
    if judged:
        headers += [c.replace("_", " ") for c in CSV_COLUMNS]
    headers = rep.headers(headers)
    xlsx.write_header(ws, 1, headers)
    for i, r in enumerate(records, start=2):
        s = r["scores"] or {}
        if r["status"] == "error":
            status = f"error: {r['error']['kind']}"
        elif r["skipped"]:
            status = "missing (skipped)"
        elif not r["answered"]:
            status = "missing (scored 0)"
        else:
            status = "ok"
        text = r["response"] if r.get("reformatted") is None else (
            f"{r['reformatted']}\n\n--- original response ---\n{r['response']}")
        values = [r["case_id"], r["question"], ", ".join(r["concepts"]), r["level"],
                  _subs_text(r), s.get("proportion_correct"), s.get("all_correct"),
                  xlsx.cell_text(text or ""), status]
        if judged:
            values += [xlsx.cell_text(v) for v in judge_cells(r).values()]
        xlsx.write_row(ws, i, rep.values(values, r), wrap=rep.cols((2, 5, 8, 12)),
                       formats=rep.formats({6: PERCENT, 7: "0"}))
    xlsx.finish_sheet(ws, len(headers), len(records) + 1,
                      rep.widths({1: 8, 2: 60, 3: 28, 4: 9, 5: 50, 6: 12, 7: 10, 8: 60, 9: 18, 10: 12,
                                  11: 10, 12: 60}))

    st = wb.create_sheet("Statistics")
    o = metrics["overall_metrics"]
    row = xlsx.write_table(st, 1, ["PSAQ", "ABQ", "UASQ", "questions", "answered", "missing", "sub-questions"],
                           [[o["psaq"], o["abq"], o["uasq"], o["questions"], o["answered"], o["missing"],
                             o["subquestions"]]], title="Closed-form metrics")
    groups = metrics["group_metrics"]
    by_group = groups.get("concept_group", {})
    row = xlsx.write_table(
        st, row, ["1 concept", ">1 concepts", "Overall"],
        [[by_group.get("1", {}).get("abq"), by_group.get(">1", {}).get("abq"), o["abq"]]],
        title="ABQ by number of concepts",
    )
    stat_keys = ["questions", "subquestions", "abq", "psaq", "uasq"]
    for title, key in (("Per concept", "concept"), ("Per number of concepts", "concept_count"),
                       ("Per level", "level")):
        if groups.get(key):
            row = xlsx.write_table(st, row, [key, *stat_keys],
                                   ([name, *(g[k] for k in stat_keys)] for name, g in groups[key].items()),
                                   title=title)
    xlsx.format_floats(st, PERCENT)
    xlsx.set_widths(st, {1: 34, **{c: 14 for c in range(2, 8)}})
    return xlsx.save(wb, path)
