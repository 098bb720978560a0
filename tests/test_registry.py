"""The one registry (queryeval/registry.py): tasks, suite formats and systems looked up by
name, each kind with its entry-point group; a built-in, an installed entry point and an entry
registered in the process are the same entry afterwards."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.errors import ConfigError
from queryeval.registry import FORMATS, GROUPS, SYSTEMS, TASKS, Registry

SDMX = Path(__file__).resolve().parents[1] / "examples" / "sdmx"


@pytest.fixture
def isolated():
    with TASKS.isolated(), FORMATS.isolated(), SYSTEMS.isolated():
        yield


def install(root: Path, groups: dict[str, dict[str, str]], monkeypatch,
            modules: dict[str, str] | None = None) -> None:
    for name, source in (modules or {}).items():
        (root / f"{name}.py").write_text(source, encoding="utf-8")
        monkeypatch.delitem(sys.modules, name, raising=False)
    dist = root / "plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in names.items())
        for group, names in groups.items()))
    monkeypatch.syspath_prepend(str(root))


def test_kinds_and_groups():
    assert GROUPS == {"tasks": "queryeval.tasks", "formats": "queryeval.formats",
                      "systems": "queryeval.systems", "metrics": "queryeval.metrics"}
    assert TASKS.builtins == {"indicator_selection", "answers", "retrieval", "query", "fields",
                              "freeform"}
    assert FORMATS.in_order()[:3] == ["yaml", "folder", "jsonl"]
    assert {"python", "http", "https", "cmd", "object"} == SYSTEMS.builtins


def test_an_entry_point_is_read_on_first_look_up_and_loaded_when_asked(isolated, tmp_path,
                                                                         monkeypatch):
    install(tmp_path, {"queryeval.systems": {"echo": "echo_plugin:build",
                                             "broken": "no_such_module_xyz:build"}},
            monkeypatch, {"echo_plugin": "def build(spec, *, isolate, concurrency):\n"
                                         "    return ('built', spec)\n"})
    assert "echo" in SYSTEMS.names() and "echo_plugin" not in sys.modules  # listed, not loaded
    assert SYSTEMS.in_order()[:2] == ["echo", "broken"]  # asked before the built-ins
    assert SYSTEMS.get("echo")("echo:x", isolate=False, concurrency=1) == ("built", "echo:x")
    with pytest.raises(ConfigError, match=r"^cannot load system kind 'broken' from "
                                          r"no_such_module_xyz:build: ModuleNotFoundError"):
        SYSTEMS.get("broken")
    with pytest.raises(ConfigError, match=r"^unknown system kind 'ech'; did you mean 'echo'\?"):
        SYSTEMS.get("ech")


def test_registration_rules(isolated):
    reg = Registry("systems", {"python": "queryeval.systems.factory:python_system"},
                   noun="system kind", check=SYSTEMS._check)
    with pytest.raises(ConfigError, match="built in and cannot be replaced"):
        reg.register("python", print)
    with pytest.raises(ConfigError, match="is not callable"):
        reg.register("mine", 42)
    with pytest.raises(ConfigError, match="name made of word characters"):
        reg.register("no-dash", print)
    # a function nothing replaces (ray's tqdm_ray, once imported, swaps builtins.print)
    reg.register("mine", json.dumps)
    with pytest.raises(ConfigError, match=r"already registered \(json:dumps\)"):
        reg.register("mine", len)
    assert reg.register("mine", len, replace=True) is len and reg.get("mine") is len
    with reg.isolated():
        reg.remove("mine")
        assert "mine" not in reg
    assert reg.get("mine") is len  # the isolated block's changes are undone
    with pytest.raises(ConfigError, match="is not a queryeval.suite.loader.SuiteFormat"):
        qe.register_format(type("F", (), {"name": "f"})())
    with pytest.raises(ConfigError, match="built in and cannot be removed"):
        FORMATS.remove("yaml")


def test_a_built_in_task_through_an_entry_point_scores_the_same(isolated, tmp_path, monkeypatch):
    """The built-in selection task installed again under another name by an entry point:
    the same metrics file as the built-in's (the entry is the same class, found another way)."""
    install(tmp_path, {"queryeval.tasks": {"selection_again":
                                           "queryeval.tasks.selection.task:SelectionTask"}},
            monkeypatch)
    from queryeval.cli.app import main

    metrics = {}
    for task in ("indicator_selection", "selection_again"):
        out = tmp_path / task
        assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                     "--task", task, "--out", str(out), "-q", "--no-report"]) == 0
        (path,) = out.rglob("metrics_*.json")
        metrics[task] = json.loads(path.read_text())["overall_metrics"]
    assert metrics["selection_again"] == metrics["indicator_selection"]
    assert 0 < metrics["indicator_selection"]["macro_recall"] <= 1


def test_system_specs_are_looked_up_by_scheme(isolated):
    from queryeval.systems.factory import make_system
    from queryeval.systems.http import HttpSystem
    from queryeval.systems.subprocess import SubprocessSystem

    assert isinstance(make_system("https://example.invalid/x"), HttpSystem)
    assert isinstance(make_system("cmd:true"), SubprocessSystem)
    with pytest.raises(ConfigError, match=r"^unknown system 'ftp://x': use python:MODULE:FUNC, "
                                          r"http\(s\)://URL or cmd:COMMAND$"):
        make_system("ftp://x")
    qe.register_system("ftp", lambda spec, *, isolate, concurrency: ("ftp", spec, concurrency))
    assert make_system("ftp://x", concurrency=3) == ("ftp", "ftp://x", 3)
    with pytest.raises(ConfigError, match=r"\(or ftp:\.\.\.\)$"):
        make_system("gopher://x")
