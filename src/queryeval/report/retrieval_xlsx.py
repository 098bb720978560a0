"""Seed 002's Excel report: sheet "Questions" (one row per question: whether and where its
chunk was found at each k, the expected chunk, the top retrieved chunks) and sheet
"Statistics" (recall@k for every k asked for, overall and per dataset, then the run's other
overall figures)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from queryeval.report import xlsx

TOP_SHOWN = 3
"""Retrieved chunks listed per question (the CSV holds every one)."""


def _status(record: dict) -> str:
    if record.get("status") == "error":
        err = record.get("error") or {}
        return f"error: {err.get('kind', ', '.join(record.get('error_kinds') or []))}"
    return "found" if (record.get("evaluation_result") or {}).get("correct_chunk_retrieved") \
        else "missed"


def _top(record: dict, is_relevant: Callable[[dict, dict], bool]) -> str:
    lines = []
    for rank, c in enumerate((record.get("retrieved_chunks") or [])[:TOP_SHOWN], start=1):
        mark = "✓" if is_relevant(record, c) else "✗"
        score = c.get("score")
        shown = "—" if score is None else f"{score:.4f}"
        text = " ".join(str(c.get("content") or "").split())[:160]
        lines.append(f"{mark} {rank}. {c.get('chunk_id')} ({shown}): {text}")
    return "\n".join(lines)


def write_retrieval_xlsx(path: str | Path, records: list[dict], metrics: dict,
                         ks: list[int], found_at: Callable[[dict, int], bool],
                         is_relevant: Callable[[dict, dict], bool]) -> Path:
    """``ks``: every k asked for; ``found_at(record, k)``: whether a relevant chunk is
    among the question's first k (the task's own rule, ``min_score`` included);
    ``is_relevant(record, chunk)``: whether a retrieved chunk is one of its relevant chunks."""
    wb, ws = xlsx.new_book("Questions")
    largest = max(ks)
    headers = ["qa_pair_id", "dataset", "question", "expected chunk", "status", "rank",
               *(f"found@{k}" for k in ks), "retrieval ms", f"top {TOP_SHOWN} retrieved"]
    n = len(headers)  # the columns below are numbered without the repeat column
    rep = xlsx.RepeatColumn(metrics)  # --repeats: which attempt each row is
    headers = rep.headers(headers)
    xlsx.write_header(ws, 1, headers)
    for i, r in enumerate(records, start=2):
        exp = r.get("expected_chunk") or {}
        ev = r.get("evaluation_result") or {}
        values = [r.get("qa_pair_id", r.get("case_id")), r.get("dataset"),
                  xlsx.cell_text(str(r.get("question") or "")),
                  f"{exp.get('chunk_id')} ({exp.get('name')})", _status(r),
                  ev.get("rank_if_found"),
                  *("yes" if found_at(r, k) else "no" for k in ks),
                  ev.get("retrieval_time_ms"), xlsx.cell_text(_top(r, is_relevant))]
        xlsx.write_row(ws, i, rep.values(values, r), wrap=rep.cols((3, n)),
                       formats=rep.formats({n - 1: xlsx.FIGURE}))
    xlsx.finish_sheet(ws, len(headers), len(records) + 1,
                      rep.widths({1: 38, 2: 18, 3: 60, 4: 28, 5: 12, 6: 7,
                                  **{7 + j: 9 for j in range(len(ks))}, 7 + len(ks): 12,
                                  8 + len(ks): 80}))

    st = wb.create_sheet("Statistics")
    o = metrics["overall_metrics"]
    groups = (metrics.get("group_metrics") or {}).get("dataset") or metrics.get("dataset_metrics", {})

    def recall(figures: dict, k: int):
        return figures.get(f"recall@{k}", figures.get("recall_at_k") if k == largest else None)

    rows = [["(all)", o.get("total_questions"), *(recall(o, k) for k in ks)]]
    rows += [[name, g.get("sample_size"), *(recall(g, k) for k in ks)] for name, g in groups.items()]
    row = xlsx.write_table(st, 1, ["dataset", "questions", *(f"recall@{k}" for k in ks)], rows,
                           figure_cols=range(3, 3 + len(ks)), title="recall@k")
    flat = [[key, value] for key, value in o.items() if not isinstance(value, (dict, list))]
    xlsx.write_table(st, row, ["metric", "value"], flat, figure_cols=(2,), title="Overall")
    xlsx.set_widths(st, {1: 30, 2: 14, **{c: 12 for c in range(3, 3 + len(ks))}})
    return xlsx.save(wb, path)
