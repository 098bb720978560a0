"""Seed 000's Excel report: sheet "Overview" (one row per case, the seed's details cell) and
sheet "Statistics" ("Data Query Metrics", then per-dimension, per-dataset and per-tag tables)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from queryeval.report import xlsx


def _terms(title: str, terms: list) -> list[str]:
    return [f"{title} [{len(terms)}]", *(f"  * {i}: {n}" for i, n in terms)]


def dimension_block(d: dict) -> list[str]:
    """One dimension in the seed's cell format."""
    lines = [f"{d['dataset_id']} / {d['dimension']}"]
    if d["in_target"]:
        lines.append(f"[recall: {d['recall']:.2f}, precision: {d['precision']:.2f}]")
        lines += _terms("True Positives", d["tp"])
        lines += _terms("False Negatives", d["fn"])
    lines += _terms("False Positives", d["fp"])
    return lines


def turn_details(turn: dict) -> str:
    blocks: list[str] = []
    if turn.get("error"):
        blocks.append(f"ERROR ({turn['error']['kind']}): {turn['error']['message']}")
    dims = turn["scores"]["dimensions"]
    in_target = [d for d in dims if d["in_target"]]
    extra = [d for d in dims if not d["in_target"]]
    blocks += ["\n".join(dimension_block(d)) for d in in_target]
    if not dims:
        blocks.append("(nothing expected, nothing selected)")
    if extra:
        blocks.append("dimensions not in target\n" + "\n\n".join("\n".join(dimension_block(d)) for d in extra))
    return "\n\n".join(blocks)


def details_text(record: dict) -> str:
    """The "indicator selection details" cell of a case (every scored turn)."""
    turns = record["turns"]
    if len(turns) == 1:
        return turn_details(turns[0])
    return "\n\n".join(
        f"=== turn {t['turn']}: {t.get('question', '')}\n{turn_details(t)}" for t in turns
    )


def write_selection_xlsx(path: str | Path, records: list[dict], metrics: dict, *,
                         verdict: Callable[[dict], str]) -> Path:
    """Column "result" beside the call "status": ``pass`` / ``fail`` / ``error`` by the task's
    own ``verdict`` (``SelectionTask.case_verdict``: macro recall and macro precision both 1,
    no failed call), the same status the HTML report shows."""
    wb, ws = xlsx.new_book("Overview")
    headers = ["id", "name", "tags", "macro recall", "macro precision",
               "indicator selection details", "status", "result"]
    rep = xlsx.RepeatColumn(metrics)  # --repeats: which attempt each row is
    headers = rep.headers(headers)
    xlsx.write_header(ws, 1, headers)
    for i, r in enumerate(records, start=2):
        values = [r["case_id"], r["name"], ", ".join(r["tags"]), r["scores"]["macro_recall"],
                  r["scores"]["macro_precision"], xlsx.cell_text(details_text(r)),
                  "error: " + ", ".join(r["error_kinds"]) if r["status"] == "error" else "ok",
                  verdict(r)]
        xlsx.write_row(ws, i, rep.values(values, r), wrap=rep.cols((2, 6)),
                       formats=rep.formats({4: xlsx.FIGURE, 5: xlsx.FIGURE}))
    xlsx.finish_sheet(ws, len(headers), len(records) + 1,
                      rep.widths({1: 38, 2: 40, 3: 18, 4: 14, 5: 16, 6: 80, 7: 14, 8: 10}),
                      freeze="A2")

    st = wb.create_sheet("Statistics")
    o = metrics["overall_metrics"]
    overall_rows = [
        ("macro precision", o["macro_precision"]), ("macro recall", o["macro_recall"]),
        ("micro precision", o["micro_precision"]), ("micro recall", o["micro_recall"]),
        ("cases", o["total_cases"]), ("scored cases", o["scored_cases"]),
        ("scored turns", o["scored_turns"]), ("cases with errors", o["errors"]),
        ("cases with dimensions not in target", o["cases_with_dimensions_not_in_target"]),
    ]
    row = xlsx.write_figures(st, 1, "Data Query Metrics", overall_rows, name_alignment=xlsx.TOP)
    groups = metrics["group_metrics"]
    dim_headers = ["in target", "not in target", "TP", "FP", "FN", "mean precision",
                   "mean recall", "micro precision", "micro recall"]
    dim_keys = ["in_target", "not_in_target", "tp", "fp", "fn", "mean_precision",
                "mean_recall", "micro_precision", "micro_recall"]
    for title, key in (("Per dimension", "dimension"), ("Per dataset", "dataset")):
        row = xlsx.write_table(
            st, row, [key, *dim_headers],
            ([name, *(g[k] for k in dim_keys)] for name, g in groups[key].items()),
            figure_cols=range(7, 11), title=title,
        )
    xlsx.write_table(
        st, row, ["tag", "cases", "macro precision", "macro recall"],
        ([tag, g["cases"], g["macro_precision"], g["macro_recall"]] for tag, g in groups["tag"].items()),
        figure_cols=(3, 4), title="Per tag",
    )
    st.freeze_panes = "A3"
    xlsx.set_widths(st, {1: 36, **{c: 15 for c in range(2, 11)}})
    return xlsx.save(wb, path)
