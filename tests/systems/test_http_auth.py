"""--system http:// never writes a password: a URL carrying one is refused (exit 2, one
line naming QUERYEVAL_HTTP_AUTHORIZATION), and the credentials given in that environment
variable go out as the Authorization header of every call -- on the event-loop path of a run,
on httpx's path and after a resume -- and into no file the run writes nor the console."""

from __future__ import annotations

import json

import pytest

from helpers.http_auth import AUTH_ENV, SECRET, _suite, _written  # noqa: E402,F401
from helpers.matrix_checks import resume, simulate_kill
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.systems.http import HttpSystem


@pytest.mark.parametrize("url", [f"http://alice:{SECRET}@HOST/x",
                                 f"http://HOST/x?password={SECRET}"])
def test_a_password_in_the_system_url_is_refused_before_anything_is_written(
        tmp_path, capsys, server, url):
    host, seen = server
    out = tmp_path / "runs"
    code = main(["run", str(_suite(tmp_path)), "--system", url.replace("HOST", host),
                 "--out", str(out)])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == 2
    assert SECRET not in text
    assert AUTH_ENV in text and "Traceback" not in text
    assert not seen  # no call went out
    assert not out.exists() or SECRET not in _written(out)


def test_http_system_refuses_a_password_from_python():
    with pytest.raises(ConfigError, match=AUTH_ENV) as info:
        HttpSystem(f"https://bob:{SECRET}@example.invalid/x")
    assert SECRET not in str(info.value)


def test_credentials_from_the_environment_are_sent_and_never_written(
        tmp_path, capsys, server, monkeypatch):
    host, seen = server
    monkeypatch.setenv(AUTH_ENV, f"Bearer {SECRET}")
    out = tmp_path / "runs"
    code = main(["run", str(_suite(tmp_path)), "--system", f"http://{host}/x",
                 "--out", str(out), "--retries", "0"])
    assert code == 0
    assert seen == [f"Bearer {SECRET}"] * 3  # the event-loop path sends it
    console = capsys.readouterr()
    assert SECRET not in console.out + console.err
    assert SECRET not in _written(out)
    # resume rebuilds the system from the stored spec; the header comes from the environment
    log = next(out.rglob("batch_*.json"))
    assert json.loads(log.read_text())["evaluation_config"]["system"] == f"http://{host}/x"
    simulate_kill(log, 1)
    seen.clear()
    run = resume(log)
    assert seen == [f"Bearer {SECRET}"] * 2
    assert run.overall["cases"] == 3
    assert SECRET not in _written(out)


def test_httpx_path_sends_the_header_and_an_explicit_one_wins(server, monkeypatch):
    host, seen = server
    monkeypatch.setenv(AUTH_ENV, f"Bearer {SECRET}")
    system = HttpSystem(f"http://{host}/x")
    try:
        assert system.call({"question": "Capital of France?"}, 5.0) == {"response": "paris"}
    finally:
        system.close()
    system = HttpSystem(f"http://{host}/x", headers={"Authorization": "Bearer mine"})
    try:
        system.call({"question": "Capital of Peru?"}, 5.0)
    finally:
        system.close()
    monkeypatch.delenv(AUTH_ENV)
    system = HttpSystem(f"http://{host}/x")
    try:
        system.call({"question": "Capital of Peru?"}, 5.0)
    finally:
        system.close()
    assert seen == [f"Bearer {SECRET}", "Bearer mine", None]
