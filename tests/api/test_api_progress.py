"""qe.evaluate without a ``progress`` callback: a progress line in a notebook, and a
temporary run log (``out=None``) announced with its path instead of vanishing silently."""

from __future__ import annotations

import builtins
import re

import pytest

import queryeval as qe
from queryeval.api import progress as auto


def case(cid: str, country: str) -> dict:
    target = [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": country, "name": country}]}]}]
    return {"id": cid, "name": cid, "conversation": [
        {"role": "user", "content": country, "target": {"indicator_selection": target}}]}


CASES = [case(f"c{i}", c) for i, c in enumerate(["MEX", "USA", "DEU"])]


def bot(request: dict) -> dict:
    country = request["messages"][-1]["content"]
    return {"indicator_selection": [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": country, "name": country}]}]}]}


class ZMQInteractiveShell:
    """What ``get_ipython()`` returns in a Jupyter kernel, as rich recognises it by name."""


@pytest.fixture
def notebook(monkeypatch):
    """A notebook as far as rich and IPython's display can tell: the texts displayed, in
    order (each update of the one line appends its new text)."""
    display = pytest.importorskip("IPython.display")
    shown: list[tuple[str, str]] = []

    class Handle:
        def update(self, obj, raw=False):
            shown.append(("update", obj["text/plain"]))

    def fake_display(obj, raw=False, display_id=None):
        assert raw and display_id is True
        shown.append(("display", obj["text/plain"]))
        return Handle()

    monkeypatch.setattr(builtins, "get_ipython", lambda: ZMQInteractiveShell(), raising=False)
    monkeypatch.setattr(display, "display", fake_display)
    monkeypatch.setattr(auto, "NOTEBOOK_INTERVAL", 0.0)
    return shown


def test_a_notebook_shows_one_progress_line_updated_to_the_last_case(notebook, tmp_path):
    qe.evaluate(CASES, system=bot, out=tmp_path)
    kinds = [k for k, _ in notebook]
    assert kinds[0] == "display" and set(kinds[1:]) == {"update"}  # one line, updated
    assert re.fullmatch(r"cases 3/3 \(100%\) \d+\.\d s", notebook[-1][1])
    counts = [int(re.match(r"cases (\d+)/", text).group(1)) for _, text in notebook]
    assert counts == sorted(counts) and counts[-1] == 3


def test_repeats_progress_counts_attempts_not_cases(notebook, tmp_path):
    qe.evaluate(CASES, system=bot, out=tmp_path, repeats=2)
    assert notebook[-1][1].startswith("attempts 6/6 (100%)")


def test_progress_false_or_a_callback_shows_nothing_of_its_own(notebook, tmp_path):
    qe.evaluate(CASES, system=bot, out=tmp_path / "a", progress=False)
    calls: list[tuple[int, int]] = []
    qe.evaluate(CASES, system=bot, out=tmp_path / "b", progress=lambda a, t: calls.append((a, t)))
    assert notebook == [] and sum(a for a, _ in calls) == 3


def test_no_notebook_and_no_terminal_shows_nothing(monkeypatch, tmp_path, capsys):
    assert auto.where() is None  # pytest captures stderr: not a terminal
    qe.evaluate(CASES, system=bot, out=tmp_path)
    assert capsys.readouterr().err == ""


def test_progress_line_text():
    assert auto.progress_line(12, 60, "cases", 3.25) == "cases 12/60 (20%) 3.2 s"
    assert auto.progress_line(0, 0, "attempts", 0.0) == "attempts 0/? 0.0 s"


def test_a_temporary_run_log_is_announced_with_its_path(capsys):
    run = qe.evaluate(CASES, system=bot)
    err = capsys.readouterr().err
    assert err == (f"run log: {run.folder.parent} (temporary: removed once this Run is no longer "
                   "referenced; give out=FOLDER to keep it)\n")
    assert run.path.is_file() and run.path.parent.parent == run.folder.parent
