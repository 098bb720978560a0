"""``queryeval report`` names the files it wrote; a report's name holds the run log's batch id,
which a damaged or hostile log may fill with terminal controls: they are shown, not sent."""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.cli.app import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "retrieval"


def test_report_path_with_controls_in_the_batch_id_is_printed_escaped(tmp_path, capsys):
    assert main(["run", str(EXAMPLES / "questions.csv"), "--responses", str(EXAMPLES / "responses.jsonl"),
                 "--k", "3", "--no-report", "-q", "--out", str(tmp_path)]) == 0
    batch = next(tmp_path.glob("*/batch_*.json"))
    doc = json.loads(batch.read_text(encoding="utf-8"))
    doc["batch_id"] = "x\x1b[31mred\x9b"
    batch.write_text(json.dumps(doc), encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(batch), "--resamples", "10", "--no-xlsx"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("report: ")]
    assert line.endswith("report_x\\x1b[31mred\\x9b.html")
