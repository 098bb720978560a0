"""The viewer over hostile run folders: files named by a batch's inner id, symlinks and
FIFOs beside a batch, malformed batches and records, mixed-type sorting, the compare cap and
the Host allow-list of a bound loopback address. Each case here was a 500, a hang or a read
outside the folder before."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from queryeval.run.config import RunConfig  # noqa: E402
from queryeval.run.evaluate import start_run  # noqa: E402
from queryeval.viewer.server import MAX_COMPARE, create_app  # noqa: E402

BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, examples_dir) -> Path:
    out = tmp_path_factory.mktemp("hostile") / "src"
    batch = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                                responses=str(examples_dir / "sdmx" / "responses.jsonl"),
                                out=str(out), reports=False)).log.paths.batch
    return batch.parent


def _copy(run_dir: Path, dest: Path) -> tuple[Path, str]:
    shutil.copytree(run_dir, dest)
    batch = next(dest.glob("batch_*.json"))
    return batch, batch.stem[len("batch_"):]


def _edit(batch: Path, **fields) -> None:
    doc = json.loads(batch.read_text())
    doc.update(fields)
    batch.write_text(json.dumps(doc))


def test_inner_batch_id_cannot_name_files_outside(run_dir, tmp_path):
    """A batch whose inner batch_id differs from its file name would make RunResults.open open
    results_<inner>.jsonl: symlinks to outside files under that name are never read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = {"case_id": "SECRET", "turns": [], "status": "ok", "scores": {}}
    (outside / "private.jsonl").write_text(json.dumps(secret) + "\n")
    (outside / "conf.json").write_text('{"overall_metrics": {"leak": 1.5}}')
    root = tmp_path / "V"
    evil = root / "evil"
    evil.mkdir(parents=True)
    src = next(run_dir.glob("batch_*.json"))
    shutil.copy(src, evil / "batch_evil.json")
    _edit(evil / "batch_evil.json", batch_id="x")
    os.symlink(outside / "private.jsonl", evil / "results_x.jsonl")
    os.symlink(outside / "conf.json", evil / "metrics_x.json")
    client = TestClient(create_app(root), base_url=BASE)
    rows = client.get("/api/runs").json()["runs"]
    assert [(r["id"], r["status"]) for r in rows] == [("evil", "unreadable")]
    assert "differs from the file name" in rows[0]["error"]
    for path in ("/api/runs/evil", "/api/runs/evil/cases", "/api/runs/evil/cases/SECRET"):
        resp = client.get(path)
        assert resp.status_code == 422, path
        assert "SECRET" not in resp.text and "leak" not in resp.text


def test_results_csv_link_outside_leaves_the_run_out(run_dir, tmp_path):
    root = tmp_path / "V"
    batch, bid = _copy(run_dir, root / "r")
    csv = batch.with_name(f"results_{bid}.csv")
    shutil.copy(csv, tmp_path / "outside.csv")
    csv.unlink()
    os.symlink(tmp_path / "outside.csv", csv)
    client = TestClient(create_app(root), base_url=BASE)
    assert client.get("/api/runs").json()["runs"] == []
    assert client.get(f"/api/runs/{bid}").status_code == 404


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_results_is_unreadable_not_a_hang(run_dir, tmp_path):
    root = tmp_path / "V"
    batch, bid = _copy(run_dir, root / "r")
    results = batch.with_name(f"results_{bid}.jsonl")
    results.unlink()
    os.mkfifo(results)
    done: dict = {}

    def go() -> None:
        client = TestClient(create_app(root), base_url=BASE)
        done["index"] = client.get("/api/runs").json()["runs"]
        done["run"] = client.get(f"/api/runs/{bid}").status_code

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the reader so the test process can end
        fd = os.open(results, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("the viewer blocked on a FIFO")
    assert done["run"] == 422
    errors = [r.get("error") or "" for r in done["index"]]
    assert errors == [f"results_{bid}.jsonl: is a FIFO (named pipe), not a regular file; "
                      "give a file"], errors


@pytest.mark.parametrize("name, mutate", [
    ("list", lambda b, d: b.write_text("[1, 2]")),
    ("config", lambda b, d: _edit(b, evaluation_config="x")),
    ("utf8", lambda b, d: b.write_bytes(b.read_bytes().replace(b'"task"', b'"t\xffask"', 1))),
    ("records", lambda b, d: d.write_text("[1, 2]\n")),
    ("no_case_id", lambda b, d: d.write_text('{"turns": [], "status": "ok"}\n')),
])
def test_one_bad_run_is_listed_unreadable_and_others_still_work(run_dir, tmp_path, name,
                                                                mutate):
    root = tmp_path / "V"
    bad, bad_id = _copy(run_dir, root / "bad")
    mutate(bad, bad.with_name(f"results_{bad_id}.jsonl"))
    good = root / "good"
    shutil.copytree(run_dir, good)  # same id: renamed so both are listed
    for f in list(good.iterdir()):
        f.rename(f.with_name(f.name.replace(bad_id, "good")))
    _edit(good / "batch_good.json", batch_id="good")
    client = TestClient(create_app(root), base_url=BASE)
    resp = client.get("/api/runs")
    assert resp.status_code == 200
    rows = {r["id"]: r for r in resp.json()["runs"]}
    assert rows["good"]["status"] == "complete" and rows["good"]["cases"] == 23
    if name in ("list", "config", "utf8"):
        assert rows[bad_id]["status"] == "unreadable" and rows[bad_id]["error"]
    for path in (f"/api/runs/{bad_id}", f"/api/runs/{bad_id}/cases"):
        assert client.get(path).status_code == 422, (name, path)
    assert client.get("/api/runs/good/cases").json()["total"] == 23


@pytest.mark.parametrize("fields", [{"task": {"x": 1}}, {"timestamp": 5}, {"status": 5},
                                    {"status": "<b>done</b>"}, {"timestamp": float("nan")}])
def test_index_field_of_the_wrong_type_is_named_unreadable(run_dir, tmp_path, fields):
    """The batch is read by the run log's one typed reader (queryeval.run.logmodel.Batch):
    a field of the wrong type makes the run unreadable, its reason naming the file and the
    field, never quoting the value; the other runs are listed as before."""
    root = tmp_path / "V"
    batch, bid = _copy(run_dir, root / "r")
    _edit(batch, **fields)
    (row,) = TestClient(create_app(root), base_url=BASE).get("/api/runs").json()["runs"]
    name = next(iter(fields))
    assert row["status"] == "unreadable"
    assert row["error"].startswith(f"batch_{bid}.json: {name}: not a run log file: ")
    assert "done" not in row["error"] and "x" not in row["error"].split(": ", 3)[3]


def test_mixed_type_sorts_never_500(run_dir, tmp_path):
    """Records whose fields have odd types (the records are read as they are; a batch with a
    NaN timestamp is unreadable: test_index_field_of_the_wrong_type_is_named_unreadable)."""
    root = tmp_path / "V"
    batch, bid = _copy(run_dir, root / "r")
    batch.write_text(batch.read_text().replace('"timestamp": "', '"x": NaN, "timestamp": "', 1))
    results = batch.with_name(f"results_{bid}.jsonl")
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    lines[0]["status"], lines[1]["name"], lines[2]["name"] = 5, float("nan"), 7
    results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    client = TestClient(create_app(root), base_url=BASE)
    assert client.get(f"/api/runs/{bid}").status_code == 200
    for sort in ("status", "name", "case_id", "macro_recall"):
        for desc in ("0", "1"):
            resp = client.get(f"/api/runs/{bid}/cases",
                              params={"sort": sort, "desc": desc, "limit": 500})
            assert resp.status_code == 200, (sort, resp.text)
            assert resp.json()["matched"] == 23
    by_status = client.get(f"/api/runs/{bid}/cases", params={"sort": "status"}).json()["rows"]
    assert by_status[0]["status"] == "5"  # shown as text: "5" < "ok"


def test_compare_is_capped(run_dir, tmp_path):
    root = tmp_path / "V"
    _, bid = _copy(run_dir, root / "r")
    client = TestClient(create_app(root), base_url=BASE)
    resp = client.get("/api/compare", params=[("run", bid)] * 64)
    assert resp.status_code == 400 and f"at most {MAX_COMPARE}" in resp.json()["error"]
    assert client.get("/api/compare", params=[("run", bid)] * 2).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.2", "127.5.6.7"])
def test_other_loopback_hosts_are_allowed(run_dir, host):
    app = create_app(run_dir.parent, host=host)
    assert TestClient(app, base_url=f"http://{host}").get("/api/runs").status_code == 200
    assert TestClient(app, base_url="http://evil.example").get("/api/runs").status_code == 400


HOSTILE_IDS = ["a\nb", "c\rd", "e\x00f", "crlf\r\n", "g%2Fh", "i/j?k#l", "m n", "..", "%", "é\x1b[31m"]


def test_every_case_id_is_reachable_by_its_encoded_url(tmp_path):
    """The page builds ``/api/runs/R/cases/`` + encodeURIComponent(id); the server decodes the
    raw path once and matches the id exactly (CR/LF, NUL, a literal ``%2F``, ``/``, ``?``)."""
    from urllib.parse import quote

    import queryeval as qe

    def sel(v: str) -> list[dict]:
        return [{"dataset_id": "D", "dimensions": [
            {"dimension_name": "C", "values": [{"id": v, "name": v}]}]}]

    cases = [{"id": cid, "name": f"case {i}", "conversation": [
        {"role": "user", "content": str(i), "target": {"indicator_selection": sel(str(i))}}]}
        for i, cid in enumerate(HOSTILE_IDS)]
    run = qe.evaluate(cases, system=lambda req: {"indicator_selection": sel(
        req["messages"][-1]["content"])}, out=tmp_path / "runs")
    client = TestClient(create_app(tmp_path / "runs", resamples=50), base_url=BASE)
    listed = client.get(f"/api/runs/{run.batch_id}/cases?limit=500").json()["rows"]
    assert sorted(r["case_id"] for r in listed) == sorted(HOSTILE_IDS)
    bid = run.batch_id
    for i, cid in enumerate(HOSTILE_IDS):
        urls = [f"/api/runs/{bid}/case?id={quote(cid, safe='')}"]  # what the page asks
        if cid not in (".", ".."):  # a URL path resolves these away, in every client
            urls.append(f"/api/runs/{bid}/cases/{quote(cid, safe='')}")
        for url in urls:
            resp = client.get(url)
            assert resp.status_code == 200, (url, resp.status_code, resp.text)
            doc = resp.json()
            assert "row" in doc, (url, doc)
            assert doc["row"]["case_id"] == cid and doc["record"]["name"] == f"case {i}"
    for url in (f"/api/runs/{bid}/cases/a", f"/api/runs/{bid}/case?id=a", f"/api/runs/{bid}/case"):
        assert client.get(url).status_code == 404, url
    # the page asks for a case with its id as an encoded query value
    js = (Path(__file__).resolve().parents[2] / "src" / "queryeval" / "viewer" / "static"
          / "app.js").read_text(encoding="utf-8")
    assert "'/case?id=' + enc(caseId)" in js


def test_run_page_leaves_empty_group_kinds_out_and_compare_names_shared_groups(tmp_path):
    """A closed-form run without concepts: ``concept`` and ``concept_group`` are ``{}`` in its
    metrics, and the run page listed them as ``concept (0)``. The compare API gives each
    group once (``also``), which the page names."""
    import queryeval as qe

    cases = [{"id": f"c{i}", "tags": ["t"], "conversation": [
        {"role": "user", "content": f"question {i}?",
         "target": {"answers": [{"name": "n", "value": str(i)}]}}]} for i in range(3)]
    runs = [qe.evaluate(cases, system=lambda req: {"response": "@n[1]"}, out=tmp_path / "r" / x,
                        name=x) for x in "ab"]
    client = TestClient(create_app(tmp_path / "r", resamples=50), base_url=BASE)
    doc = client.get(f"/api/runs/{runs[0].batch_id}").json()
    assert runs[0].metrics["group_metrics"]["concept"] == {}
    assert set(doc["groups"]) == {"concept_count"}
    comp = client.get("/api/compare", params=[("run", r.batch_id) for r in runs]).json()
    assert [(t["key"], t["member"], t["also"]) for ts in comp["groups"].values() for t in ts] \
        == [("tag", "t", [])]
    js = (Path(__file__).resolve().parents[2] / "src" / "queryeval" / "viewer" / "static"
          / "app.js").read_text(encoding="utf-8")
    assert "' (also ' + t.also.join(', ') + ')'" in js


def test_run_page_groups_use_the_figures_own_names(tmp_path):
    """The retrieval task declares ``recall_at_k`` an older name of ``recall@{k}``."""
    from queryeval.cli.app import main

    suite = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
    assert main(["run", str(suite / "questions.csv"), "--corpus", str(suite / "corpus.jsonl"),
                 "--out", str(tmp_path / "r"), "--k", "5", "--no-report", "-q"]) == 0
    batch = next((tmp_path / "r").rglob("batch_*.json"))
    stored = json.loads(next(batch.parent.glob("metrics_*.json")).read_text())["group_metrics"]
    client = TestClient(create_app(tmp_path / "r", resamples=50), base_url=BASE)
    groups = client.get(f"/api/runs/{batch.stem[len('batch_'):]}").json()["groups"]
    for member, figures in groups["dataset"].items():
        assert "recall_at_k" not in figures
        assert figures["recall@5"] == stored["dataset"][member].get(
            "recall_at_k", stored["dataset"][member].get("recall@5"))
