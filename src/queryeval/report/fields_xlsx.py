"""Seed 004's Excel report: sheet "Questions" (one row per question and field: N, recall, MRR,
passed, found and missing values, what was retrieved) and sheet "Summary" (the overall
figures and one row per field)."""

from __future__ import annotations

from pathlib import Path

from queryeval.metrics.fields import join_ground_truth
from queryeval.report import xlsx

PERCENT = "0.00%"
RATIO = "0.0000"


def write_fields_xlsx(path: str | Path, records: list[dict], metrics: dict) -> Path:
    """Write the report; values are the run's own figures, never rounded (formats only)."""
    wb, ws = xlsx.new_book("Questions")
    headers = ["id", "question", "field", "N", "recall", "MRR", "passed", "depth",
               "ground truth", "found", "missing", "retrieved (top N)", "question passed",
               "status"]
    rep = xlsx.RepeatColumn(metrics)  # --repeats: which attempt each row is
    headers = rep.headers(headers)
    xlsx.write_header(ws, 1, headers)
    row = 2
    for r in records:
        for t in r["turns"]:
            status = f"error: {t['error']['kind']}" if t["error"] else "ok"
            for f, s in t["scores"]["fields"].items():
                ranked = (t["output"] or {}).get(f, [])
                values = [r["case_id"], t["question"], f, s["n"], s["recall"], s["mrr"],
                          "yes" if s["passed"] else "no", s["depth"],
                          xlsx.cell_text(join_ground_truth(t["target"][f])),
                          xlsx.cell_text(join_ground_truth(s["found"])),
                          xlsx.cell_text(join_ground_truth(s["missing"])),
                          xlsx.cell_text(join_ground_truth(ranked[: s["n"]])),
                          "yes" if t["scores"]["passed"] else "no", status]
                xlsx.write_row(ws, row, rep.values(values, r), wrap=rep.cols((2, 9, 10, 11, 12)),
                               formats=rep.formats({5: RATIO, 6: RATIO}))
                row += 1
    xlsx.finish_sheet(ws, len(headers), row - 1,
                      rep.widths({1: 8, 2: 50, 3: 16, 4: 6, 5: 9, 6: 9, 7: 8, 8: 7, 9: 30, 10: 30,
                                  11: 30, 12: 40, 13: 10, 14: 14}))

    st = wb.create_sheet("Summary")
    o = metrics["overall_metrics"]
    keys = ["passed", "questions", "pass_rate", "avg_recall", "mrr", "errors"]
    nxt = xlsx.write_table(st, 1, keys, [[o.get(k) for k in keys]], title="Overall")
    fkeys = ["n", "model", "questions", "passed", "pass_rate", "avg_recall", "mrr"]
    # the N column: the one N (a number), or the range's text where N varied per question
    xlsx.write_table(st, nxt, ["field", *fkeys],
                     ([name, *(g.get("n_range") if k == "n" and g.get("n") is None else g.get(k)
                               for k in fkeys)]
                      for name, g in metrics["group_metrics"]["field"].items()),
                     title="Per field")
    xlsx.format_floats(st, RATIO)
    xlsx.set_widths(st, {1: 22, **{c: 12 for c in range(2, 9)}})
    return xlsx.save(wb, path)
