"""The cross-feature matrix for retrieval at scale: the streamed corpus with an HNSW index.

Runs of the seed-002 example (65 chunks, 67 questions) through the ANN path — the corpus
opened streamed, a dense retriever with ``index="hnsw"`` on cheap hashed vectors — in the
run kinds that apply: plain (the built-in system), cached (the same system as a Python
callable, the second run served from the call cache) and an exact dense run to compare
with. The oracle is brute force by hand: every chunk scored against the question, ranked by
score then corpus order; recall@5 of a case is 1 when its chunk is in that top 5. The graph
is given candidate lists longer than the corpus, so its measured recall (``ann_recall`` in
the batch file, computed by the run on its own questions) must be 1.0 and the ANN run must
agree with the oracle case by case.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import queryeval as qe
from helpers.matrix_checks import check_compare, check_consumers, run_file
from queryeval.engines.retrievers import DenseRetriever, HashingEncoder

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "retrieval"
K = 5


def _engine(cache: Path, index: str) -> DenseRetriever:
    return DenseRetriever(encoder=HashingEncoder(dim=256, trigrams=True), cache=cache, index=index,
                          ef_construction=200, ef_search=200)


def _oracle() -> dict[str, float]:
    """recall@5 per case id, by brute force over the hashed vectors (no retriever code)."""
    import hashlib

    chunks = [json.loads(line) for line in (SUITE / "corpus.jsonl").read_text().splitlines() if line.strip()]
    enc = HashingEncoder(dim=256, trigrams=True)

    def unit(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.float64)
        n = np.linalg.norm(v)
        return v / n if n else v

    docs = [unit(enc.encode([c["content"]])[0]) for c in chunks]
    hashes = [hashlib.md5(c["content"].encode()).hexdigest() for c in chunks]  # noqa: S324
    out: dict[str, float] = {}
    with open(SUITE / "questions.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            q = unit(enc.encode([row["question"]])[0])
            scores = [float(np.float32(q @ d)) for d in docs]
            top = sorted(range(len(docs)), key=lambda j: (-scores[j], j))[:K]
            from queryeval.suite.retrieval import qa_pair_id

            cid = qa_pair_id(row["dataset"], row["question"], row["answer"])
            out[cid] = float(any(hashes[j] == row["content_hash"].lower() for j in top))
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = tmp_path_factory.mktemp("scale")
    shutil.copy(SUITE / "questions.csv", lab / "questions.csv")
    (lab / "bots.py").write_text(
        "from pathlib import Path\n"
        "from queryeval.suite.corpus_stream import open_corpus\n"
        "from queryeval.systems.retrieval import BuiltinRetrievalSystem\n"
        "from queryeval.engines.retrievers import DenseRetriever, HashingEncoder\n"
        "_SYSTEM = None\n"
        "def ann(request):\n"
        "    global _SYSTEM\n"
        "    if _SYSTEM is None:\n"
        f"        engine = DenseRetriever(encoder=HashingEncoder(dim=256, trigrams=True), "
        f"cache=Path({str(lab / 'emb')!r}), index='hnsw', ef_construction=200, ef_search=200)\n"
        f"        _SYSTEM = BuiltinRetrievalSystem(open_corpus({str(SUITE / 'corpus.jsonl')!r}), "
        "engine=engine)\n"
        "    return _SYSTEM.call(request, None)\n")
    return lab


def _builtin_run(lab: Path, index: str, name: str) -> qe.Run:
    import queryeval.engines.retrievers as retrievers

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(retrievers, "make_retriever", lambda kind, **_: _engine(lab / "emb", index))
        return qe.evaluate(str(lab / "questions.csv"), corpus=str(SUITE / "corpus.jsonl"), k=[K],
                           retriever="dense-hnsw" if index == "hnsw" else "dense",
                           out=lab / "runs" / name, reports=True, name=name)


@pytest.fixture(scope="module")
def runs(lab):
    plain = _builtin_run(lab, "hnsw", "plain")
    exact = _builtin_run(lab, "exact", "exact")
    spec = f"python:{lab / 'bots.py'}:ann"
    opts = {"corpus": str(SUITE / "corpus.jsonl"), "k": [K], "cache": True,
            "cache_dir": lab / "callcache", "system_version": "v1", "reports": True, "retries": 0}
    qe.evaluate(str(lab / "questions.csv"), system=spec, out=lab / "runs" / "warm", **opts)
    cached = qe.evaluate(str(lab / "questions.csv"), system=spec, out=lab / "runs" / "cached", **opts)
    return {"plain": plain, "exact": exact, "cached": cached}


def test_ann_recall_is_measured_on_the_runs_questions(runs) -> None:
    batch = json.loads(runs["plain"].path.read_text())
    info = batch["evaluation_config"]["ann_recall"]
    assert info["k"] == K and info["queries"] == 67 and info["index"] == "hnsw"
    assert info["recall"] == 1.0  # candidate lists longer than the corpus: nothing missed
    assert "ann_recall" not in json.loads(runs["exact"].path.read_text())["evaluation_config"]


@pytest.mark.parametrize("kind", ["plain", "exact", "cached"])
def test_scale_runs_agree_with_the_oracle_everywhere(runs, lab, kind) -> None:
    per_case = _oracle()
    assert 0 < sum(per_case.values()) < len(per_case)  # the oracle is not trivial
    run = runs[kind]
    if kind == "cached":
        assert run.metrics["cache"]["hits"] == len(per_case)  # every call served from the cache
    check_consumers(run, f"recall@{K}", per_case, csv_file=False, viewer_root=lab / "runs" / kind)


def test_ann_and_exact_runs_compare_equal(runs, tmp_path) -> None:
    per_case = _oracle()
    check_compare(runs["plain"], runs["exact"], f"recall@{K}", per_case, per_case, tmp_path)
    assert run_file(runs["plain"], "metrics", ".json").exists()
