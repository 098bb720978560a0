"""A run's SQL neighbour builds share one sandboxed build worker (docs/test-suite.md,
"Safety"): one worker start per run and dialect, not one per gold; the sets it builds are the
ones a build on its own worker makes, file for file."""

from __future__ import annotations

import hashlib

import queryeval as qe
from helpers.testsuite_hostile import _suite_predicting_the_gold  # noqa: E402
from helpers.testsuite_sql import records  # noqa: E402
from queryeval.engines.query.neighbours import sql_neighbours
from queryeval.engines.query.neighbours.runner import NeighbourRunner

GOLDS = {"a": "SELECT name FROM emp WHERE salary > 100", "b": "SELECT id FROM emp",
         "c": "SELECT count(*) FROM emp WHERE salary >= 120"}


def _digests(built) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in built.paths()]


def test_three_golds_one_build_worker(company, tmp_path, monkeypatch):
    from queryeval.tasks.query.testsuite import WORKERS

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    made = []
    init = NeighbourRunner.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(NeighbourRunner, "__init__", counted)
    suite, preds = _suite_predicting_the_gold(tmp_path, company, GOLDS)
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                      test_suite=4, concurrency=1)
    recs = records(run)
    assert [recs[k]["scores"]["test_suite_match"] for k in GOLDS] == [1.0, 1.0, 1.0]
    # the verdicts' pool and one builder (one builder per gold before: WORKERS + 3)
    assert len(made) == WORKERS + 1
    builder = [r for r in made if str(company) in r.roots]
    assert len(builder) == 1 and builder[0]._worker.starts == 1
    # the same sets as builds on a worker of their own, file for file
    for k, gold in GOLDS.items():
        shared = sql_neighbours(company, "sqlite", gold, 4, cache_dir=tmp_path / "cache" /
                                "testsuite")
        alone = sql_neighbours(company, "sqlite", gold, 4, cache_dir=tmp_path / "alone")
        assert shared.cached and not alone.cached
        assert _digests(shared) == _digests(alone), k
