"""``queryeval rescore`` of a run with repeats printed the task's tables but not the repeats
table (pass rate, pass@k, pass^k, flaky cases) that ``queryeval run`` prints for the same
metrics (a newcomer's audit; the test failed on the code before its fix)."""

from __future__ import annotations

import json

import queryeval as qe
from queryeval.cli.app import main


def test_rescore_prints_the_repeats_table_as_run_does(tmp_path, capsys):
    suite = [{"id": "count", "conversation": [{"role": "user", "content": "How many?",
              "target": {"reference": {"answer": "42"}}}]}]
    answers = ["42", "41", "42"]

    def bot(request):
        return {"response": answers[request["repeat"]]}

    run = qe.evaluate(suite, system=bot, repeats=3, out=tmp_path / "runs", reports=False)
    assert run.metrics["repeats"]["overall"]["pass@3"]["mean"] == 1.0
    assert run.metrics["repeats"]["overall"]["pass^3"]["mean"] == 0.0
    code = main(["rescore", str(run.path), "--out", str(tmp_path / "re"), "--no-report"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    # single words, whatever the console's width: the table's title, figures, flaky case
    for word in ("Repeats:", "pass@3", "pass^3", "flaky", "PFP"):
        assert word in text, word
    metrics = json.loads(next((tmp_path / "re").rglob("metrics_*.json")).read_text())
    assert metrics["repeats"]["overall"] == run.metrics["repeats"]["overall"]
