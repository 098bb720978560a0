"""Refuse dangerous SPARQL before it reaches an engine.

Refused (:class:`QueryRefused`):

* **SPARQL Update** -- any operation keyword (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE,
  ADD, MOVE, COPY, WITH, USING) anywhere in the text, and any request whose first
  keyword after the prologue is not SELECT, ASK, CONSTRUCT or DESCRIBE. None of these
  words is legal in a SPARQL *query*, so finding one as a keyword token is proof enough.
* **SERVICE** -- federated queries make the engine issue HTTP requests (pyoxigraph and
  rdflib both do; an ASK with SERVICE fires the request from ``Store.query`` itself).
* **FROM / FROM NAMED** naming a graph outside ``allowed_graphs`` -- rdflib fetches
  ``FROM <http://...>`` and reads ``FROM <file:...>``; remote endpoints may do the same.

Two stages. :func:`check_sparql` (in the caller) is lexical: a tokenizer that follows the
SPARQL 1.1 grammar's terminals (keywords only outside strings, IRIs and comments; ``?service``,
``ex:SERVICE`` and ``"SERVICE"`` are not keywords, ``SeRvIcE`` is), run on the raw text and on
the text with ``\\uXXXX`` escapes decoded (other engines may decode them everywhere). It gives
clear reasons and reads the form, the declared prefixes and the FROM clauses.

A token check alone is not enough: oxigraph matches keywords without a word boundary, so
``SERVICE:x {...}``, ``SERVICEep:x``, ``FROM:g`` are real SERVICE / FROM clauses for the
engine while a tokenizer reads one prefixed name. pyoxigraph 0.5 has no parse-only API and
exposes no algebra, so :func:`verify_with_engine` (run in the worker process, under the
query's deadline) asks the engine's own parser questions it can answer safely: see there.
Length is capped first (:data:`MAX_QUERY_CHARS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from queryeval.systems.engines.base import QueryRefused

__all__ = [
    "MAX_QUERY_CHARS", "QueryRefused", "SparqlCheck", "Token", "check_sparql", "neutralise",
    "tokenize", "verify_with_engine",
]

MAX_QUERY_CHARS = 100_000
"""Longest query text accepted (characters). Generated queries are a few hundred characters;
checking and planning cost grows with the length (pyoxigraph plans a 4,000-pattern BGP for
minutes), so longer text is refused before any work is done."""

QUERY_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
UPDATE_KEYWORDS = frozenset({
    "INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY",
    "WITH", "USING",
})

_PN_CHARS_BASE = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
_PN_CHARS = _PN_CHARS_BASE + "_\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"

_TOKEN_RE = re.compile(
    rf"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n\r]*)
  | (?P<iri><[^<>"{{}}|^`\\\x00-\x20]*>)
  | (?P<string>
        '''(?:(?:'|'')?(?:[^'\\]|\\.))*'''
      | \"\"\"(?:(?:"|"")?(?:[^"\\]|\\.))*\"\"\"
      | '(?:[^'\\\n\r]|\\.)*'
      | "(?:[^"\\\n\r]|\\.)*"
    )
  | (?P<var>[?$][{_PN_CHARS}]+)
  | (?P<langtag>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
  | (?P<pname>(?:[{_PN_CHARS_BASE}_](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?)?:(?:(?:[{_PN_CHARS}:]|%[0-9A-Fa-f]{{2}}|\\[_~.\-!$&'()*+,;=/?\#@%])(?:(?:[{_PN_CHARS}.:]|%[0-9A-Fa-f]{{2}}|\\[_~.\-!$&'()*+,;=/?\#@%])*(?:[{_PN_CHARS}:]|%[0-9A-Fa-f]{{2}}|\\[_~.\-!$&'()*+,;=/?\#@%]))?)?)
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\^\^|\|\||&&|!=|<=|>=|[{{}}()\[\];,.*=!<>&|+\-/^@?$])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPE_RE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


@dataclass(frozen=True)
class Token:
    """One lexical token: ``kind`` is a group name of the lexer, ``text`` the source text."""

    kind: str
    text: str
    pos: int


@dataclass
class SparqlCheck:
    """What the checks learned about a query that passed them.

    ``form`` is SELECT, ASK, CONSTRUCT or DESCRIBE (upper case); ``prefixes`` the prefixes
    the query declares itself; ``datasets`` the ``(named, iri)`` pairs of its FROM clauses.
    """

    form: str
    prefixes: dict[str, str] = field(default_factory=dict)
    datasets: list[tuple[bool, str]] = field(default_factory=list)
    from_spans: list[tuple[int, int]] = field(default_factory=list)
    """Where each FROM clause the lexer read lies in the raw text (start, end)."""


def tokenize(text: str) -> list[Token]:
    """Split SPARQL text into tokens, dropping whitespace and comments."""
    out: list[Token] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "other"
        if kind in ("ws", "comment"):
            continue
        out.append(Token(kind, m.group(), m.start()))
    return out


def decode_codepoint_escapes(text: str) -> str:
    r"""Decode ``\uXXXX`` / ``\UXXXXXXXX`` everywhere, as SPARQL 1.1 section 19.2 says."""

    def repl(m: re.Match[str]) -> str:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group()

    return _ESCAPE_RE.sub(repl, text)


def check_sparql(
    text: str,
    *,
    allowed_graphs: Collection[str] = (),
    prefixes: Mapping[str, str] | None = None,
    max_chars: int = MAX_QUERY_CHARS,
) -> SparqlCheck:
    """Check ``text`` and describe it; raise :class:`QueryRefused` when it must not run.

    ``allowed_graphs`` lists the graph IRIs a FROM / FROM NAMED clause may name (for the
    embedded store: its own named graphs). ``prefixes`` are the default prefixes the
    engine will supply, used to expand ``FROM ex:g``. This is the first, lexical stage;
    :func:`verify_with_engine` (run in the worker process, under the query's deadline)
    then decides with the engine's own parser.
    """
    if not isinstance(text, str):
        raise QueryRefused(f"query must be text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise QueryRefused(f"query is {len(text):,} characters long; the limit is {max_chars:,}")
    views = [text]
    decoded = decode_codepoint_escapes(text)
    if decoded != text:
        views.append(decoded)
    result: SparqlCheck | None = None
    for view in views:
        check = _check_view(tokenize(view), allowed_graphs, prefixes or {},
                            escaped=view is not text)
        result = result or check
    assert result is not None  # views is never empty
    return result


def _check_view(tokens: list[Token], allowed_graphs: Collection[str],
                default_prefixes: Mapping[str, str], *, escaped: bool) -> SparqlCheck:
    note = " (after decoding \\u escapes)" if escaped else ""
    words = [(i, t.text.upper()) for i, t in enumerate(tokens) if t.kind == "word"]
    for _, word in words:
        if word == "SERVICE":
            raise QueryRefused(f"SERVICE (federated query to another endpoint) is not allowed{note}")
        if word in UPDATE_KEYWORDS:
            raise QueryRefused(f"SPARQL Update is not allowed ({word}){note}")

    # Prologue: BASE <iri> | PREFIX pname: <iri>, then the query form.
    declared: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        up = tok.text.upper() if tok.kind == "word" else ""
        if up == "BASE":
            i += 2
        elif up == "PREFIX":
            if i + 2 < len(tokens) and tokens[i + 1].kind == "pname" and tokens[i + 2].kind == "iri":
                declared[tokens[i + 1].text.rstrip(":")] = tokens[i + 2].text[1:-1]
            i += 3
        else:
            break
    if i >= len(tokens):
        raise QueryRefused("empty query: no SELECT, ASK, CONSTRUCT or DESCRIBE")
    first = tokens[i]
    form = first.text.upper() if first.kind == "word" else ""
    if form not in QUERY_FORMS:
        raise QueryRefused(
            f"not a SPARQL query: expected SELECT, ASK, CONSTRUCT or DESCRIBE, found {first.text!r}{note}"
        )

    allowed = set(allowed_graphs)
    known = {**default_prefixes, **declared}
    datasets: list[tuple[bool, str]] = []
    spans: list[tuple[int, int]] = []
    for j, word in words:
        if word != "FROM":
            continue
        k = j + 1
        named = k < len(tokens) and tokens[k].kind == "word" and tokens[k].text.upper() == "NAMED"
        if named:
            k += 1
        target = tokens[k] if k < len(tokens) else None
        iri = _resolve(target, known)
        clause = "FROM NAMED" if named else "FROM"
        if iri is None:
            shown = target.text if target else "end of query"
            raise QueryRefused(f"{clause} must name a graph IRI, found {shown!r}{note}")
        if iri not in allowed:
            raise QueryRefused(
                f"{clause} <{iri}> names a graph outside the store (engines may fetch it){note}"
            )
        datasets.append((named, iri))
        if not escaped and target is not None:
            spans.append((tokens[j].pos, target.pos + len(target.text)))
    return SparqlCheck(form=form, prefixes=declared, datasets=datasets, from_spans=spans)


def _resolve(token: Token | None, prefixes: Mapping[str, str]) -> str | None:
    if token is None:
        return None
    if token.kind == "iri":
        return token.text[1:-1]
    if token.kind == "pname":
        prefix, _, local = token.text.partition(":")
        if prefix in prefixes:
            return prefixes[prefix] + re.sub(r"\\(.)", r"\1", local)
    return None


# ------------------------------------------------------------------ the engine's own parser

_NEUTRAL = {word: re.compile(word, re.IGNORECASE | re.ASCII) for word in ("service", "from")}


def neutralise(text: str, word: str) -> str:
    """``text`` with every occurrence of ``word`` (ASCII case-insensitive, anywhere: inside
    names, strings, IRIs, glued to other letters) changed in its last letter to ``q``.

    The change keeps every name, string and IRI lexically valid (a consistent renaming),
    but a ``SERVICE`` / ``FROM`` *keyword* becomes a word the grammar has no place for.
    """
    return _NEUTRAL[word].sub(lambda m: m.group()[:-1] + "q", text)


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    out = list(text)
    for start, end in spans:
        out[start:end] = " " * (end - start)
    return "".join(out)


def verify_with_engine(
    parse: Callable[[str, Mapping[str, str]], object],
    text: str,
    *,
    prefixes: Mapping[str, str],
    from_spans: list[tuple[int, int]],
) -> None:
    """Decide SERVICE and FROM with the engine's own grammar; raise QueryRefused, or
    SyntaxError when the text is simply not a SPARQL query.

    pyoxigraph 0.5 has no parse-only API and exposes no algebra (``Store.query`` parses
    and plans, and evaluates ASK at once), so the parser is asked questions it can answer
    safely. ``parse(text, prefixes)`` must run ``Store.query`` on an *empty in-memory*
    store inside a killable worker (planning can be slow):

    1. the text with every ``service`` neutralised (see :func:`neutralise`) must parse.
       A neutralised text contains no SERVICE keyword, so parsing (even evaluating) it
       cannot send a request. If the original contains no ``service`` at all and still
       fails, it is a plain syntax error. Otherwise the grammar needed a SERVICE keyword
       (in whatever spelling: ``SERVICE:x``, ``SERVICEep:x``, ``trueSERVICE<u>`` ...),
       or the text is invalid: refused either way.
    2. the same text with the FROM clauses the lexer read blanked out, and every other
       ``from`` neutralised, must parse as well; otherwise the grammar sees a dataset
       clause the lexer did not check (``FROM:g``, ``FROMNAMED<g>`` ...): refused.
    Neither the original text nor one that still holds a SERVICE keyword is ever parsed.
    """
    keys = {neutralise(k, "service"): v for k, v in prefixes.items()}
    no_service = neutralise(text, "service")
    try:
        parse(no_service, keys)
    except SyntaxError:
        if no_service == text:
            raise
        raise QueryRefused(
            "the engine's own parser reads a SERVICE clause (federated query) in this text, "
            "or the text is not valid SPARQL") from None
    keys = {neutralise(k, "from"): v for k, v in keys.items()}
    no_dataset = neutralise(_blank(no_service, from_spans), "from")
    if no_dataset == no_service:
        return
    try:
        parse(no_dataset, keys)
    except SyntaxError:
        raise QueryRefused(
            "the engine's own parser reads a FROM / FROM NAMED clause (dataset) that the "
            "checker could not read; write it as FROM <iri>") from None
