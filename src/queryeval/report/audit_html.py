"""The suite health page of ``queryeval audit --html FILE``: the summary (share of cases with
a finding, by kind) and every finding with its evidence and fix; everything escaped."""

from __future__ import annotations

import json
from typing import Any


def audit_page(report: Any, suite: str) -> str:
    from queryeval.report.html_page import esc, num_cell, page, table
    from queryeval.tasks.audit_model import KINDS

    s = report.summary
    head = (f"<h1>Suite health: {esc(suite)}</h1><p class=\"meta\">{s['cases_with_finding']} "
            f"of {s['cases']} cases ({s['share']:.1%}) have a finding, "
            f"{s['cases_with_defect']} a defect</p>")
    rows = [[f"<td>{esc(k)}</td>", f"<td>{esc(v['severity'])}</td>", num_cell(v["cases"], 0),
             num_cell(v["share"]), f"<td>{esc(KINDS.get(k, ('', ''))[1])}</td>"]
            for k, v in s["by_kind"].items()]
    rows += [[f"<td>{esc(k)}</td>", "<td>note</td>", num_cell(n, 0),
              num_cell(n / s["cases"] if s["cases"] else 0.0),
              f"<td>{esc(KINDS.get(k, ('', ''))[1])}</td>"] for k, n in s["notes"].items()]
    kinds = table(["kind", "severity", "cases", "share", "meaning"], rows, num_from=2)
    found = table(["case", "kind", "severity", "evidence", "fix"], [
        [f"<td>{esc(f.case_id)}</td>", f"<td>{esc(f.kind)}</td>", f"<td>{esc(f.severity)}</td>",
         f"<td><pre>{esc(json.dumps(f.evidence, indent=1, ensure_ascii=False, default=str))}"
         "</pre></td>", f"<td>{esc(f.fix)}</td>"] for f in report.findings], num_from=99,
        attrs=' id="cases"')
    return page(f"Suite health: {suite}",
                f"{head}<h2>By kind</h2>{kinds}<h2>Findings</h2>{found}")
