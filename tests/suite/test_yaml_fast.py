"""The suite's YAML reader on libyaml (the C loader) against the pure-Python loader.

``read_yaml_documents`` reads with ``yaml.CSafeLoader`` where PyYAML has libyaml; the pure
``yaml.SafeLoader`` is the reference. On random documents (YAML 1.1 plain scalars that
resolve to bools, octals, sexagesimals, dates; anchors, aliases, merge keys, duplicate keys)
and on hostile mutations of them, both must give the same documents, the same line for every
path, or an error on the same line (our own errors: the same message too; the parsers' own
wording differs between libyaml and PyYAML). The values are also checked against PyYAML's
own ``safe_load_all``, which builds them without our walker.
"""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queryeval.errors import InputError
from queryeval.suite.yamlsrc import read_yaml_documents

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML without libyaml")

# Plain scalars whose YAML 1.1 meaning is not the text: bools, null, octal, hex, binary,
# sexagesimal, underscores, dates, floats, merge and value keys, and plain text.
QUIRKS = ["yes", "No", "on", "OFF", "y", "~", "null", "0o17", "017", "0x1F", "0b101", "1_000",
          "190:20:30", "1:20", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "6.8523015e+5",
          "685.230_15e+03", ".5", "+.inf", "-.Inf", ".NaN", "1e5", "-0", "=", "<<", "abc", "a b",
          "'quoted'", '"dq \\t"', "!!str 12", "!!int '7'", "!!float 3", "!!binary aGk=",
          "2001-13-40", "!!timestamp nope", "9" * 400, "[a, b]", "{x: 1}", "&x 5"]

# Put into the text at random (no tab: see the last test).
HOSTILE = list(":-[]{}&*!|>'\"#%@`\n ,?\x07\x85é")
KEYS = st.sampled_from(["id", "name", "a", "b", "x", "tags", "<<", "=", "1", "yes", "~", "k k"])


@st.composite
def block(draw: st.DrawFn, depth: int = 0, indent: str = "") -> str:
    """A block mapping or sequence, written by hand so plain scalars stay plain."""
    lines = []
    seq = draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        head = f"{indent}- " if seq else f"{indent}{draw(KEYS)}: "
        choice = draw(st.integers(0, 9 if depth < 3 else 5))
        if choice <= 5:
            lines.append(head + draw(st.sampled_from(QUIRKS)))
        elif choice == 6:
            anchor = draw(st.sampled_from("pq"))
            lines.append(f"{head}&{anchor} " + draw(st.sampled_from(QUIRKS)))
        elif choice == 7:
            lines.append(head + "*" + draw(st.sampled_from("pqm")))
        else:
            anchor = "&m " if draw(st.booleans()) else ""
            lines.append(head.rstrip() + (" " + anchor.strip() if anchor else ""))
            lines.append(draw(block(depth + 1, indent + "  ")))
    return "\n".join(lines)


@st.composite
def yaml_text(draw: st.DrawFn) -> str:
    docs = [draw(block()) for _ in range(draw(st.integers(1, 3)))]
    text = "\n---\n".join(docs) + "\n"
    for _ in range(draw(st.integers(0, 2))):  # hostile: a character put in, or some taken out
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(HOSTILE)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 4)):]
    return text


def outcome(text: str, loader_class: type) -> tuple:
    """The documents (data, line, every path's line), or the error: its line, and its
    message when it is one of ours rather than the parser's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            return ("ok", [(d.data, d.line, d.lines)
                           for d in read_yaml_documents(path, loader_class)])
        except InputError as err:
            ours = not err.message.startswith("invalid YAML: ") or "nesting too deep" in err.message
            return ("error", err.line, err.message if ours else None)


def plain_values(text: str) -> list:
    return [d for d in yaml.load_all(text, Loader=yaml.SafeLoader) if d is not None]


FAST = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(yaml_text())
def test_c_loader_reads_like_the_pure_one(text):
    fast = outcome(text, yaml.CSafeLoader)
    assert fast == outcome(text, yaml.SafeLoader)
    if fast[0] == "ok":  # and the values are PyYAML's own (keys are unique where we accept)
        assert [data for data, _, _ in fast[1]] == plain_values(text)


@pytest.mark.parametrize("text, line", [
    ("a: 1\nb: [1, 2\nc: 3\n", 3),                    # unclosed flow sequence
    ("a: 1\n  b: 2\n", 2),                            # bad indentation
    ("a: 1\na: 2\n", 2),                              # duplicate key (ours)
    ("a: &x 1\nb: *y\n", 2),                          # unknown alias
    ("a: 1\n---\nb: [\n", 4),                         # error in a later document
    ("a: 1\nb: .nan\n", 2),                           # non-finite (ours)
    ("base: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n  x: 3\n", 5),   # duplicate after a merge
    ("é: ü\nb: 1\nc: \x07\n", 3),                    # a control character after non-ASCII
])
def test_errors_name_the_same_line_either_way(tmp_path, text, line):
    for loader_class in (yaml.CSafeLoader, yaml.SafeLoader):
        assert outcome(text, loader_class)[:2] == ("error", line)


def test_merge_keys_and_value_keys_as_pyyaml_builds_them(tmp_path):
    text = ("base: &b {x: 1, y: 2}\nmore: &m {z: 3}\n"
            "c:\n  <<: [*b, *m]\n  y: 20\n  =: v\nd: {<<: *b}\n")
    kind, docs = outcome(text, yaml.CSafeLoader)
    (data, _, lines), = docs
    assert data["c"] == {"x": 1, "y": 20, "z": 3, "=": "v"}
    assert data["d"] == {"x": 1, "y": 2}
    assert [data] == plain_values(text)
    assert lines[("c", "y")] == 5 and lines[("c", "x")] == 1  # a merged key: where it is written


def test_reading_holds_one_document_of_nodes_at_a_time(tmp_path):
    """The loader's construct cache is emptied after each document: composing document k
    must not keep the nodes of documents 1..k-1 alive (they cost memory, and the garbage
    collector walked them again and again: 3,000 cases read in 0.42 s of CPU, now 0.22)."""
    path = tmp_path / "s.yaml"
    path.write_text("---\n".join(f"id: c{i}\nname: n{i}\ntags: [a, b, c]\n" for i in range(200)),
                    encoding="utf-8")
    alive = []
    for i, _ in enumerate(read_yaml_documents(path)):
        if i in (10, 190):
            gc.collect()
            # type(), not isinstance(): a dead weakref proxy among the objects raises on isinstance
            alive.append(sum(issubclass(type(o), yaml.Node) for o in gc.get_objects()))
    assert alive[1] <= alive[0] + 5, alive


def test_a_tab_inside_a_plain_key_is_where_the_parsers_differ(tmp_path):
    """The one difference the random texts found (so they hold no tab): libyaml reads a tab
    inside a plain scalar as part of it, as YAML allows; PyYAML's pure scanner refuses it.
    The suite reader uses libyaml where it is there, as it did before."""
    lines = {(): 1, ("i\td",): 1}
    assert outcome("i\td: yes\n", yaml.CSafeLoader) == ("ok", [({"i\td": True}, 1, lines)])
    assert outcome("i\td: yes\n", yaml.SafeLoader)[:2] == ("error", 1)
