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


def test_rescore_with_judge_when_never_keeps_the_runs_judge(tmp_path, capsys):
    """docs/freeform.md: a re-score ignores the stored verdicts under ``when=never``; the
    option had to repeat the judge's model and URL (``--option 'judge={"when": "never"}'``
    stopped with "task option judge.model: Field required")."""
    from helpers.judge_fake import FakeJudgeServer

    suite = [{"id": cid, "conversation": [{"role": "user", "content": f"{cid}?",
              "target": {"reference": {"answer": ref}}}]}
             for cid, ref in (("capital", "Paris"), ("reason", "a supply shortage"))]
    replies = {"capital": "paris.", "reason": "it was a supply shortage"}
    fake = FakeJudgeServer()  # passes reason: the response holds the reference
    try:
        run = qe.evaluate(suite, system=lambda r: {"response": replies[r["case_id"]]},
                          judge={"model": "judge-test", "base_url": fake.url,
                                 "cache_dir": str(tmp_path / "jc")},
                          out=tmp_path / "runs", reports=False)
        asked = len(fake.requests)
        code = main(["rescore", str(run.path), "--option", 'judge={"when": "never"}',
                     "--out", str(tmp_path / "re"), "--no-report", "-q"])
    finally:
        fake.close()
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert run.overall["pass_rate"] == 1.0 and asked == 1 and len(fake.requests) == 1
    metrics = json.loads(next((tmp_path / "re").rglob("metrics_*.json")).read_text())
    assert metrics["overall_metrics"]["pass_rate"] == 0.5  # reason: inconclusive, not passed
    assert metrics["overall_metrics"]["judge_when"] == "never"
    batch = json.loads(next((tmp_path / "re").rglob("batch_*.json")).read_text())
    judge = batch["evaluation_config"]["task_options"]["judge"]
    assert (judge["model"], judge["base_url"], judge["when"]) == ("judge-test", fake.url, "never")
