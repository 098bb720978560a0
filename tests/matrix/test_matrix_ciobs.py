"""The cross-feature matrix for the CI and observability outputs (issue 29): plain, repeats,
errors (``on_error`` score and skip) runs; the run's own consumers (tests/helpers/matrix_checks.py
``check_consumers``) and the four CI ones (``check_ci``: JUnit, step summary, OTel events,
MLflow) give the same hand-computed per-case values and verdicts (tests/helpers/ci_lab.py)."""

from __future__ import annotations

import pytest

import queryeval as qe
from helpers.ci_lab import FAILING, PLAIN, REPEATED, REPEATED_RATE, make_lab
from helpers.matrix_checks import check_ci, check_consumers

PLAIN_V = {c: 1.0 if v == "pass" else 0.0 for c, v in PLAIN.items()}
KINDS = {  # kind -> (bot, evaluate options, per-case all_correct, verdicts, counted cases)
    "plain": ("plain", {}, PLAIN_V, PLAIN, None),
    "repeats": ("repeated", {"repeats": 4}, REPEATED_RATE, REPEATED, None),
    "errors": ("failing", {}, PLAIN_V, FAILING, None),
    "skip_errors": ("failing", {"on_error": "skip"}, PLAIN_V, FAILING,
                    ["c0", "c1", "c2", "c3", "c5"]),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp("matrix_ciobs"))


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_consumer_gives_the_same_verdicts(lab, kind, tmp_path):
    bot, opts, per_case, verdicts, counted = KINDS[kind]
    run = qe.evaluate(str(lab / "cases.jsonl"), system=f"python:{lab / 'bots.py'}:{bot}",
                      out=tmp_path / "runs", reports=True, retries=0, backoff=0.0, name=kind,
                      **opts)
    check_consumers(run, "all_correct", per_case, overall="psaq", counted=counted)
    check_ci(run, "all_correct", per_case, verdicts, tmp_path)


def test_ci_consumers_read_the_run_models_verdict(lab, tmp_path, monkeypatch):
    """Patch the run model's verdict to a sentinel (every verdict turned round): JUnit, the
    step summary, the OTel events and MLflow all follow, so none derives its own."""
    from queryeval.run.results import CaseResult

    run = qe.evaluate(str(lab / "cases.jsonl"), system=f"python:{lab / 'bots.py'}:plain",
                      out=tmp_path / "runs", reports=False, retries=0, backoff=0.0)
    turned = {c: "fail" if v == "pass" else "pass" for c, v in PLAIN.items()}
    monkeypatch.setattr(CaseResult, "verdict", property(lambda self: turned[self.case_id]))
    check_ci(run, "all_correct", PLAIN_V, turned, tmp_path)
