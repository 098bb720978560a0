"""QUERYEVAL_HTTP_AUTHORIZATION checked when the system is built: a value no HTTP header can
carry (a line break, a control character) was sent anyway, every call failed with httpx's
"Illegal header value b'Bearer <the secret>...'" and that text -- the credentials -- went
into every failed case of the results, the CSV and the metrics; and a URL naming a user
(``http://bob@host/x``) made httpx send ``Basic bob:`` in place of the variable's header,
silently. Both are refused now: exit 2, one line, no call, the value never printed."""

from __future__ import annotations

import pytest

from helpers.http_auth import AUTH_ENV, SECRET, _suite, _written  # noqa: F401
from queryeval.cli.app import main
from queryeval.errors import ConfigError
from queryeval.systems.http import HttpSystem


@pytest.mark.parametrize("value", [f"Bearer {SECRET}\r\nX-Evil: 1", f"Bearer {SECRET}\n",
                                   f"Bearer {SECRET}\x1b", f"Bearer {SECRET}\x7f"])
def test_an_authorization_value_no_header_can_carry_is_refused_unprinted(
        tmp_path, capsys, server, monkeypatch, value):
    host, seen = server
    monkeypatch.setenv(AUTH_ENV, value)
    out = tmp_path / "runs"
    code = main(["run", str(_suite(tmp_path)), "--system", f"http://{host}/x",
                 "--out", str(out), "--retries", "0"])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == 2
    assert AUTH_ENV in text and "Traceback" not in text
    assert SECRET not in text
    assert not seen  # no call went out
    assert not out.exists() or SECRET not in _written(out)


def test_a_user_in_the_url_with_the_variable_is_refused(monkeypatch):
    monkeypatch.setenv(AUTH_ENV, f"Bearer {SECRET}")
    with pytest.raises(ConfigError, match=AUTH_ENV) as info:
        HttpSystem("http://bob@example.invalid/x")
    assert SECRET not in str(info.value)


def test_a_plain_value_is_still_sent(server, monkeypatch):
    host, seen = server
    monkeypatch.setenv(AUTH_ENV, f"Basic {SECRET}==")
    system = HttpSystem(f"http://{host}/x")
    try:
        system.call({"question": "Capital of France?"}, 5.0)
    finally:
        system.close()
    system = HttpSystem(f"http://{host}?to=a@b")  # an @ outside the host part is no user
    try:
        system.call({"question": "Capital of France?"}, 5.0)
    finally:
        system.close()
    assert seen == [f"Basic {SECRET}=="] * 2
