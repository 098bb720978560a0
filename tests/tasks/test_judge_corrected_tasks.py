"""The judge-corrected rate (Rogan–Gladen, tasks/judging.py — the free-form task's one
implementation) in the answers task (``abq``) and the query task (``pass_rate``), against the
loopback fake judge and a recorded judge-check: hand-computed values on every surface that
shows the free-form one (metrics JSON, qe.Run, HTML, viewer, console), rates a rule decided
left as they are, and the warning when the correction is undefined (TPR + TNR <= 1)."""

from __future__ import annotations

import pytest

import queryeval as qe
from helpers.judge_fake import verdict_reply
from helpers.judge_fixtures import values_judge  # noqa: F401 - the fixture "fake", one per test
from helpers.judge_tasks import CASES, QCASES, QRESP, RESPONSES
from helpers.matrix_checks import check_corrected
from helpers.query_task import make_shop_db
from queryeval.engines.judge.checks import save_check
from queryeval.engines.judge.prompt import PROMPT_VERSION
from queryeval.tasks import judging

TPR, TNR = 0.8, 0.9
CONFUSION = [[45, 5], [10, 40]]  # [[TN, FP], [FN, TP]]: TNR 45/50, TPR 40/50


def rg(q: float) -> float:
    """Rogan–Gladen by hand, clipped to [0, 1]."""
    return min(1.0, max(0.0, (q + TNR - 1) / (TPR + TNR - 1)))


def _judge(fake, tmp_path, confusion=CONFUSION, **kw) -> dict:
    opts = fake.options(tmp_path, **kw)
    (tn, fp), (fn, tp) = confusion
    save_check({"model": "judge-test", "prompt_version": PROMPT_VERSION, "n": tn + fp + fn + tp,
                "tpr": {"value": tp / (tp + fn)}, "tnr": {"value": tn / (tn + fp)},
                "confusion": confusion}, opts["checks_dir"])
    return opts


def test_answers_abq_corrected_on_every_surface(fake, tmp_path):
    # c0 rules pass, c1 rules fail, c2 judge pass, c3 judge fail, c4 missing (scored 0):
    # 5 questions, 2 right; the judge decided 2 and passed 1 (q = 1/2)
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs",
                      judge=_judge(fake, tmp_path))
    want = (1 + 2 * rg(0.5)) / 5
    assert want == pytest.approx((1 + 2 * 0.4 / 0.7) / 5) == pytest.approx(3 / 7)
    check_corrected(run, "abq", want, raw=2 / 5, viewer_root=tmp_path / "runs")
    assert judging.CORRECTED not in run.overall              # the answers task corrects abq


def test_answers_missing_skip_leaves_the_skipped_question_out(fake, tmp_path):
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs", missing="skip",
                      judge=_judge(fake, tmp_path))
    assert run.overall["questions"] == 4
    check_corrected(run, "abq", (1 + 2 * rg(0.5)) / 4, raw=2 / 4)


def test_answers_without_a_check_or_a_coin_judge_has_no_corrected_figure(fake, tmp_path):
    key = judging.corrected_key("abq")
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "none",
                      judge=fake.options(tmp_path / "none"))
    assert key not in run.overall and not any(k.startswith(key) for k in run.overall)
    # TPR 0.5 + TNR 0.4 <= 1: undefined, and the console says why
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "coin",
                      judge=_judge(fake, tmp_path / "coin", [[20, 30], [25, 25]]))
    assert key not in run.overall and run.overall["abq"] == pytest.approx(2 / 5)
    lines = [getattr(x, "plain", "") for x in run.summary()]
    assert any(line.startswith("no abq corrected for the judge's known errors: its "
                               "judge-check's TPR + TNR = 0.900 <= 1") for line in lines)


def test_answers_without_a_judge_unchanged(tmp_path):
    run = qe.evaluate(CASES, responses=RESPONSES, out=tmp_path / "runs")
    assert list(run.overall)[:3] == ["psaq", "abq", "uasq"]


@pytest.fixture
def shop(tmp_path):
    return make_shop_db(tmp_path / "shop.sqlite")


def test_query_pass_rate_corrected_on_every_surface(fake, tmp_path, shop):
    # when=always: the judge decides both cases, failing 'ok' (execution would pass it) and
    # passing 'goldbad' (its gold failed): raw pass rate 1/2, q = 1/2
    fake.script = lambda n, body: verdict_reply("fail" if "WHERE price <= 0.5" in
                                                body["messages"][1]["content"] else "pass")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs",
                      judge=_judge(fake, tmp_path, when="always"))
    assert run.overall["cases"] == 1 and run.overall["perfect_match"] == 1.0  # as before
    check_corrected(run, "pass_rate", rg(0.5), raw=0.5, viewer_root=tmp_path / "runs")


def test_query_rules_decided_cases_stay_as_they_are(fake, tmp_path, shop):
    # when=inconclusive: 'ok' passes by execution, the judge fails 'goldbad' (q = 0):
    # corrected (1 + 1 * rg(0)) / 2, rg(0) = (0 + 0.9 - 1) / 0.7 clipped to 0
    fake.script = lambda n, body: verdict_reply("fail", "wrong table")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs",
                      judge=_judge(fake, tmp_path))
    assert run.overall["judge_decided"] == 1
    check_corrected(run, "pass_rate", (1 + rg(0.0)) / 2, raw=0.5)
    assert rg(0.0) == 0.0


def test_query_pass_rate_counts_a_case_the_judge_left_without_a_verdict(fake, tmp_path, shop):
    # a malformed reply: 'goldbad' is an error, counted and not passed (as --repeats and the
    # report's pass column count it); the judge decided nothing, so nothing is corrected
    from helpers.judge_fake import completion

    fake.script = lambda n, body: completion("no idea")
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs",
                      judge=_judge(fake, tmp_path, malformed_retries=0))
    assert run.overall["pass_rate"] == 0.5 and run.overall["judge_decided"] == 0
    assert judging.CORRECTED not in run.overall
    assert sorted(c.verdict for c in run.results.cases) == ["error", "pass"]


def test_query_without_a_judge_has_no_pass_rate(tmp_path, shop):
    run = qe.evaluate(QCASES, responses=QRESP, database=str(shop), out=tmp_path / "runs")
    assert "pass_rate" not in run.overall and judging.CORRECTED not in run.overall


def test_the_note_says_when_the_correction_is_undefined():
    overall = {"pass_rate": 0.5, "judge_decided": 3, "judge_check_tpr": 0.6,
               "judge_check_tnr": 0.4}
    (note,) = judging.corrected_note(overall)
    assert note.level == "warning" and "TPR + TNR = 1.000 <= 1" in note.text
    assert judging.corrected_note({**overall, "judge_check_tnr": 0.45}) == []  # 1.05: defined
    assert judging.corrected_note({**overall, "judge_decided": 0}) == []       # nothing judged
