"""The typed run log (queryeval.run.logmodel): every shipped example's log validates against
the models and against the published JSON Schema (``queryeval schema --run-log``), logs
written by an older version still open, and a file that is not a run log is one line
naming the file and the field."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.run import logmodel as lm
from queryeval.run.log import RunLog, read_batch_file, read_metrics_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
OLD = Path(__file__).parents[1] / "data" / "runlog_8fa66f2"

# every task kind, with repeats, a derived batch (retrieval's k=1) and a custom task; paths
# relative to the copy of examples/ (made absolute before the run)
RUNS = {
    "sdmx": ["sdmx/suite", "--responses", "sdmx/responses.jsonl"],
    "sdmx_repeats": ["sdmx/suite", "--responses", "sdmx/responses.jsonl", "--repeats", "2",
                     "--on-error", "skip"],
    "answers": ["answers/questions.jsonl", "--labels", "answers/labels.jsonl", "--responses",
                "answers/responses.jsonl", "--tables", "answers/tables"],
    "retrieval": ["retrieval/questions.csv", "--corpus", "retrieval/corpus.jsonl", "--k", "1,5"],
    "retrieval_multi": ["retrieval/multi_questions.csv", "--responses",
                        "retrieval/multi_responses.jsonl", "--corpus", "retrieval/corpus.jsonl",
                        "--k", "1,3"],
    "sparql": ["sparql/suite.yaml", "--responses", "sparql/predictions.jsonl"],
    "sql": ["sql/suite.yaml", "--responses", "sql/predictions.jsonl"],
    "freeform": ["freeform/cases.jsonl", "--responses", "freeform/responses.jsonl"],
    "fields": ["fields/evaluation.csv", "--option", "data={ex}/fields/ingredients.csv",
               "--option", "model=bm25", "--option", "n=5"],
    "custom": ["custom_task/suite.yaml", "--task", "result_set", "--option", "rel_tol=0.01",
               "--system", "python:{ex}/custom_task/system.py:answer"],
}
KINDS = {"sdmx": "indicator_selection", "sdmx_repeats": "indicator_selection",
         "answers": "answers", "retrieval": "retrieval", "retrieval_multi": "retrieval",
         "sparql": "query", "sql": "query", "freeform": "freeform", "fields": "fields",
         "custom": "result_set"}


def _absolute(arg: str, ex: Path) -> str:
    if "{ex}" in arg:
        return arg.format(ex=ex)
    return str(ex / arg) if "/" in arg and not arg.startswith("-") else arg


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory) -> dict[str, list[Path]]:
    """Each example run once in a copy of examples/: name -> its batch files (the custom
    task registered in a private copy of the registry, as tests/api/test_api_custom_task.py)."""
    from queryeval.registry import TASKS
    from queryeval.tasks import base

    root = tmp_path_factory.mktemp("typedlog")
    ex = root / "examples"
    shutil.copytree(EXAMPLES, ex, ignore=shutil.ignore_patterns("*.sqlite"))
    mp = pytest.MonkeyPatch()
    isolated = TASKS.isolated()
    isolated.__enter__()
    mp.syspath_prepend(str(ex / "custom_task"))
    try:
        from result_set import ResultSetTask

        base.register_task(ResultSetTask)
        import runpy

        runpy.run_path(str(ex / "sql" / "build_db.py"), run_name="build")["build"](
            ex / "sql" / "shop.sqlite")
        out = {}
        for name, args in RUNS.items():
            runs = root / "runs" / name
            argv = ["run", *(_absolute(a, ex) for a in args), "--out", str(runs), "-q", "--no-report"]
            assert main(argv) == 0, name
            out[name] = sorted(runs.rglob("batch_*.json"))
        return out
    finally:
        isolated.__exit__(None, None, None)
        mp.undo()
        for name in ("result_set", "system"):  # the example's modules must not shadow others
            sys.modules.pop(name, None)


def _files(batch: Path) -> tuple[Path, Path]:
    bid = batch.stem.removeprefix("batch_")
    return batch.with_name(f"results_{bid}.jsonl"), batch.with_name(f"metrics_{bid}.json")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.mark.slow  # runs every example (the matrix checks the typed log in the fast lane)
def test_every_example_log_is_typed_by_its_kind(example_runs):
    """Each batch, record and metrics file of every example validates, each record by its
    task kind's model (the custom task's by the common one), and the typed values are the
    values written (a model reads, it never changes a number)."""
    assert set(example_runs) == set(RUNS)
    assert [len(example_runs[n]) for n in ("retrieval", "sdmx")] == [2, 1]  # parent + k=1
    for name, batches in example_runs.items():
        for path in batches:
            log = RunLog.open(path)
            batch = read_batch_file(path)
            assert batch.task == KINDS[name] and batch.status == "complete"
            assert batch.doc == json.loads(path.read_text())  # the document as read
            assert log.typed_batch.batch_id == batch.batch_id == path.stem[len("batch_"):]
            results, metrics_path = _files(path)
            metrics = read_metrics_file(metrics_path)
            assert metrics.overall_metrics == json.loads(metrics_path.read_text())["overall_metrics"]
            assert metrics.calls is not None and metrics.calls.failed == 0
            typed = log.typed_records()
            raw = _lines(results)
            model = lm.RECORD_MODELS.get(KINDS[name], lm.Record)
            assert [type(r) for r in typed] == [model] * len(raw), name
            assert [r.case_id for r in typed] == [r["case_id"] for r in raw]
            assert [r.scores for r in typed] == [r["scores"] for r in raw]
            for r, d in zip(typed, raw, strict=True):  # nothing written is lost
                assert r.model_dump(exclude_unset=True).keys() == d.keys()
    rep = [r.repeat for r in RunLog.open(example_runs["sdmx_repeats"][0]).typed_records()]
    assert sorted(rep) == [0] * 23 + [1] * 23


@pytest.mark.slow
def test_every_example_log_validates_against_the_published_schema(example_runs, tmp_path, capsys):
    """``queryeval schema --run-log -o FILE`` writes what it prints; every file of every
    example validates against it, each record against its kind's model (x-discriminator)."""
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "runlog.schema.json"
    assert main(["schema", "--run-log", "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"schema: {out}\n"
    assert main(["schema", "--run-log"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == schema
    jsonschema.Draft202012Validator.check_schema(schema)
    props = schema["properties"]
    mapping = props["record"]["x-discriminator"]["mapping"]
    assert set(mapping) == set(lm.RECORD_MODELS)
    assert [a["$ref"] for a in props["record"]["anyOf"]] == [*mapping.values(), "#/$defs/Record"]

    def validator(ref: str):
        return jsonschema.Draft202012Validator({**schema, "$ref": ref})

    checked = 0
    for batches in example_runs.values():
        for path in batches:
            batch = json.loads(path.read_text())
            validator(props["batch"]["$ref"]).validate(batch)
            results, metrics = _files(path)
            validator(props["metrics"]["$ref"]).validate(json.loads(metrics.read_text()))
            record = validator(mapping.get(batch["task"], "#/$defs/Record"))
            for r in _lines(results):
                record.validate(r)
                checked += 1
    assert checked == 23 + 46 + 8 + 67 * 2 + 5 * 2 + 8 + 5 + 8 + 20 + 4  # k=1 batches too
    # the schema refuses what the models refuse
    with pytest.raises(jsonschema.ValidationError):
        validator(mapping["answers"]).validate({"case_id": "a", "status": "ok", "turn": 0})
    with pytest.raises(jsonschema.ValidationError):
        validator(props["batch"]["$ref"]).validate(
            {"log_schema": "queryeval.runlog/2", "batch_id": "b", "status": "complete", "task": "x"})


def test_a_log_written_by_an_older_version_still_opens(tmp_path):
    """tests/data/runlog_8fa66f2 (written by commit 8fa66f2: no label, inputs, calls,
    error_summary or started_at) opens typed (and ``queryeval report`` writes its reports:
    the next test)."""
    for kind, (task, n) in {"sdmx": ("indicator_selection", 23), "retrieval": ("retrieval", 4)}.items():
        src = OLD / kind
        run = tmp_path / kind
        shutil.copytree(src, run)
        (batch,) = run.glob("batch_*.json")
        log = RunLog.open(batch)
        typed = log.typed_batch
        assert (typed.task, typed.label, typed.inputs, typed.status) == (task, None, None, "complete")
        metrics = read_metrics_file(_files(batch)[1])
        assert (metrics.calls, metrics.error_summary) == (None, [])
        records = log.typed_records()
        assert len(records) == n and all(r.started_at is None for r in records)
        assert type(records[0]) is lm.RECORD_MODELS[task]


@pytest.mark.slow
def test_a_log_written_by_an_older_version_is_reported(tmp_path):
    shutil.copytree(OLD / "sdmx", tmp_path / "sdmx")
    sdmx = next((tmp_path / "sdmx").glob("batch_*.json"))
    overall = read_metrics_file(_files(sdmx)[1]).overall_metrics
    assert main(["report", str(sdmx)]) == 0
    assert read_metrics_file(_files(sdmx)[1]).overall_metrics == overall
    assert next((tmp_path / "sdmx").glob("report_*.html")).stat().st_size > 0


def _batch(tmp_path: Path, **fields) -> Path:
    doc = {"log_schema": "queryeval.runlog/1", "batch_id": "b1", "timestamp": "2026-01-01T00:00:00",
           "status": "complete", "task": "answers", **fields}
    path = tmp_path / "batch_b1.json"
    path.write_text(json.dumps({k: v for k, v in doc.items() if v is not None}))
    return path


@pytest.mark.parametrize(("fields", "field"), [
    ({"status": "done"}, "status"),
    ({"task": ["answers"]}, "task"),
    ({"evaluation_config": "x"}, "evaluation_config"),
    ({"evaluation_config": {"task_options": 3}}, "evaluation_config.task_options"),
    ({"inputs": {"files": {"/a": {"hash": "blake2b:00"}}}}, "inputs.files./a.size"),
    ({"derived_batches": {"{}": 7}}, "derived_batches.{}"),
    ({"batch_id": "../x"}, "batch_id"),
    ({"batch_id": None}, "batch_id"),
    ({"log_schema": "queryeval.runlog/2"}, "log_schema"),
])
def test_a_batch_that_is_not_a_run_log_is_one_line_naming_the_field(tmp_path, fields, field):
    path = _batch(tmp_path, **fields)
    with pytest.raises(InputError) as info:
        RunLog.open(path)
    assert (info.value.path, info.value.field) == (str(path), field)
    assert str(info.value).startswith(f"{path}: {field}: ")
    assert "\n" not in str(info.value)
    if field == "log_schema":
        assert str(info.value) == (f"{path}: log_schema: unsupported log schema "
                                   "'queryeval.runlog/2' (this queryeval reads queryeval.runlog/1)")


def test_a_batch_keeps_what_it_does_not_declare(tmp_path):
    """A field a newer writer adds is read and written back as it was (extra="allow"), and
    numbers keep their form: the batch a resume rewrites is the batch it read."""
    path = _batch(tmp_path, extra={"a": [1, 2]}, evaluation_config={"timeout": 60, "new": True})
    log = RunLog.open(path)
    assert log.typed_batch.evaluation_config.timeout == 60.0
    assert log.typed_batch.model_extra == {"extra": {"a": [1, 2]}}
    before = path.read_text()
    log.write_batch()
    assert json.loads(path.read_text()) == json.loads(before)
    assert '"timeout": 60,' in path.read_text() or '"timeout": 60\n' in path.read_text()


def test_a_metrics_file_that_is_not_one_is_named(tmp_path):
    path = tmp_path / "metrics_b1.json"
    path.write_text(json.dumps({"log_schema": "queryeval.runlog/1", "batch_id": "b1",
                                "timestamp": "t", "overall_metrics": {"x": 1.0},
                                "calls": {"total": "many", "failed": 0}}))
    with pytest.raises(InputError) as info:
        read_metrics_file(path)
    assert (info.value.field, str(info.value).split(": ")[0]) == ("calls.total", str(path))
    path.write_text(json.dumps({"log_schema": "queryeval.runlog/1", "batch_id": "b1",
                                "timestamp": "t", "overall_metrics": {"x": 1.0}}))
    assert read_metrics_file(path).overall_metrics == {"x": 1.0}


def test_a_record_that_is_not_of_its_kind_names_its_line_and_field(tmp_path):
    path = _batch(tmp_path)
    good = {"case_id": "a", "name": None, "tags": [], "status": "ok", "error_kinds": [],
            "turn": 0, "question": "q", "response": "@x[1]", "reformatted": None, "error": None,
            "attempts": 1, "latency_ms": 1.0, "expected": [["x", "1"]], "answered": True,
            "skipped": False, "extracted": {"x": "1"},
            "subquestions": [{"name": "x", "expected": "1", "extracted": "1", "matched": True}],
            "scores": {"all_correct": 1.0}}
    bad = {**good, "case_id": "b", "subquestions": [{"name": "x", "expected": "1", "matched": "?"}]}
    (tmp_path / "results_b1.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    log = RunLog.open(path)
    with pytest.raises(InputError) as info:
        log.typed_records()
    assert (info.value.line, info.value.field) == (2, "subquestions[0].matched")
    assert str(info.value).startswith(f"{tmp_path / 'results_b1.jsonl'}:2: subquestions[0].matched: "
                                      "not a run log record: ")
    # a task kind that is not built in: the fields every kind writes
    other = RunLog.open(_batch(tmp_path, task="mine"))
    (tmp_path / "results_b1.jsonl").write_text(json.dumps({"case_id": "a", "status": "ok", "x": 1}) + "\n")
    (rec,) = other.typed_records()
    assert type(rec) is lm.Record and rec.model_extra == {"x": 1} and rec.tags == []
