"""YAML documents with a line number for every value.

PyYAML composes each document into a node tree that knows where every node starts; we
construct plain Python data from it and keep an index ``path -> line`` so that any later
validation error (pydantic's ``loc`` tuples) can name the line. Duplicate mapping keys, which
YAML forbids but PyYAML silently accepts, are reported as errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.reader import ReaderError

from queryeval.errors import InputError
from queryeval.io.numbers import beyond_float, int_fits

try:  # the C loader is much faster where libyaml is available
    from yaml.cyaml import CParser
    _Loader = yaml.CSafeLoader
except ImportError:  # pragma: no cover - depends on the build
    CParser = type(None)
    _Loader = yaml.SafeLoader

Loc = tuple[str | int, ...]


@dataclass
class YamlDoc:
    """One YAML document: its data, the file, and the line of every path inside it."""

    data: Any
    path: Path
    line: int
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int:
        """Line of the deepest existing node on ``loc`` (1-based)."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.line


def printable(text: str) -> str:
    """``text`` with control characters (newlines, NUL, ...) escaped as in a Python literal,
    so a key or value taken from a bad file cannot break an error message's one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def format_loc(loc: Loc) -> str:
    """``('conversation', 0, 'target')`` -> ``conversation[0].target``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + printable(str(part))
    return out


# Aliases let a few lines of YAML stand for an exponentially large tree ("billion laughs").
# We walk composed nodes, so every alias is expanded: refuse a document once the nodes
# reached again through aliases exceed both this many and ALIAS_RATIO times the distinct
# nodes seen. Legitimate reuse (a shared block referenced from many cases) stays far below.
MAX_ALIAS_EXPANSION = 100_000
ALIAS_RATIO = 10
# Merge keys (``<<``) are flattened by PyYAML before we see them, and merging a mapping that
# merges others repeats their keys: refuse when the flattened pairs would exceed this.
MAX_MERGED_PAIRS = 100_000
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Keys that SafeConstructor.flatten_mapping rewrites (``<<`` merges, ``=`` value keys).
_FLATTENED_TAGS = frozenset({_MERGE_TAG, "tag:yaml.org,2002:value"})
_STR_TAG = "tag:yaml.org,2002:str"


# libyaml's C composer recurses once per nesting level and overflows the C stack (a
# segfault, no Python exception) near 30,000 levels, which 60 KB of ``[[[[...`` reach. The
# parser beneath it is iterative: one pass over its events refuses deeper nesting first.
# A case needs about 10 levels (conversation[0].target.indicator_selection[0]...).
MAX_DEPTH = 100

_OPEN_EVENTS = frozenset({yaml.SequenceStartEvent, yaml.MappingStartEvent})
_CLOSE_EVENTS = frozenset({yaml.SequenceEndEvent, yaml.MappingEndEvent})


def check_depth(text: str, path: Path, loader_class: type | None = None) -> bool:
    """Refuse YAML nested more than :data:`MAX_DEPTH` levels, from the parser's events
    (iterative: no recursion however deep the text), before anything composes it.
    Returns whether the text has any alias (``*name``): without one, nothing is reached twice."""
    depth = 0
    aliases = False
    loader = (loader_class or _Loader)(text)  # outside the try: nothing to dispose if it fails
    try:
        while (event := loader.get_event()) is not None:
            kind = type(event)  # the parsers make these exact classes
            if kind in _OPEN_EVENTS:
                depth += 1
                if depth > MAX_DEPTH:
                    raise InputError(f"invalid YAML: nesting too deep (more than {MAX_DEPTH} levels); "
                                     "refusing it (a suite needs about 10)",
                                     path=path, line=event.start_mark.line + 1)
            elif kind in _CLOSE_EVENTS:
                depth -= 1
            elif kind is yaml.AliasEvent:
                aliases = True
    finally:
        loader.dispose()
    return aliases


def _one_line(text: str) -> str:
    """PyYAML's messages span lines ("...\n  in '<unicode string>', line 3"): one line."""
    return " ".join(str(text).split())


class _Walker:
    """Builds plain data from a composed document, counting alias expansions."""

    def __init__(self, loader: Any, path: Path, aliases: bool = True) -> None:
        self.loader = loader
        self.path = path
        self.aliases = aliases  # False: the text has no alias, every node is reached once
        self.seen: set[int] = set()
        self.visits = 0
        self.merged: dict[int, int] = {}  # mapping node -> pairs its merge keys brought

    def _count(self, node: yaml.Node) -> None:
        self.visits += 1
        self.seen.add(id(node))
        expanded = self.visits - len(self.seen)
        if expanded > MAX_ALIAS_EXPANSION and expanded > ALIAS_RATIO * len(self.seen):
            raise InputError(
                f"YAML aliases expand to more than {MAX_ALIAS_EXPANSION} nodes "
                f"({len(self.seen)} written); refusing an alias bomb",
                path=self.path, line=node.start_mark.line + 1,
            )

    def _merged_pairs(self, node: yaml.MappingNode, memo: dict[int, int]) -> int:
        """How many key/value pairs ``flatten_mapping`` would produce (memoised per node)."""
        if id(node) in memo:
            return memo[id(node)]
        memo[id(node)] = 0  # a merge cycle counts as nothing (PyYAML rejects it anyway)
        total = 0
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                subs = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                total += sum(self._merged_pairs(sub, memo) for sub in subs
                             if isinstance(sub, yaml.MappingNode))
            else:
                total += 1
            if total > MAX_MERGED_PAIRS:
                break
        memo[id(node)] = total
        return total

    def _construct(self, node: yaml.Node, loc: Loc) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
            if isinstance(value, float) and value - value != 0:
                raise InputError(f"not a finite number: {printable(str(node.value))[:40]} "
                                 "(.nan and .inf are not allowed in a suite)", path=self.path,
                                 line=node.start_mark.line + 1, field=format_loc(loc) or None)
            if type(value) is int and not int_fits(value):  # float() of it would overflow
                raise InputError(beyond_float(str(value)), path=self.path,
                                 line=node.start_mark.line + 1, field=format_loc(loc) or None)
            return value
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            # e.g. an integer of more than 4300 digits, a timestamp with month 13, a
            # !!timestamp tag on text that is no date
            raise InputError(f"cannot read value {node.tag.rsplit(':', 1)[-1]}: "
                             f"{_one_line(str(exc) or type(exc).__name__)[:200]}",
                             path=self.path, line=node.start_mark.line + 1,
                             field=format_loc(loc) or None) from None

    def walk(self, node: yaml.Node, loc: Loc, lines: dict[Loc, int],
             line: int | None = None) -> Any:
        """``line``: where the value's key is written (its own line for a list item)."""
        if self.aliases:
            self._count(node)
        lines[loc] = line or node.start_mark.line + 1
        kind = type(node)
        if kind is yaml.ScalarNode and node.tag == _STR_TAG:
            return node.value  # what construct_object gives for a str scalar, without its cache
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loc, lines)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(item, (*loc, i), lines) for i, item in enumerate(node.value)]
        return self._construct(node, loc)

    def _mapping(self, node: yaml.MappingNode, loc: Loc, lines: dict[Loc, int]) -> dict:
        if id(node) not in self.merged:
            special = {k.tag for k, _ in node.value} & _FLATTENED_TAGS
            if _MERGE_TAG in special and self._merged_pairs(node, {}) > MAX_MERGED_PAIRS:
                raise InputError(f"YAML merge keys (<<) expand to more than {MAX_MERGED_PAIRS} "
                                 "entries; refusing a merge bomb",
                                 path=self.path, line=node.start_mark.line + 1,
                                 field=format_loc(loc) or None)
            own = len(node.value)
            if special:  # flatten_mapping changes nothing in a mapping without these keys
                own -= sum(1 for k, _ in node.value if k.tag == _MERGE_TAG)
                self.loader.flatten_mapping(node)  # resolve YAML merge keys (<<), in place
            self.merged[id(node)] = len(node.value) - own
        n_merged = self.merged[id(node)]
        out: dict[Any, Any] = {}
        written: set[Any] = set()
        # flatten_mapping puts the merged pairs first: a later pair wins, so the
        # mapping's own keys override merged ones, as YAML wants; only a key written
        # twice in the mapping itself is a duplicate.
        for index, (key_node, value_node) in enumerate(node.value):
            if self.aliases:
                self._count(key_node)
            if type(key_node) is yaml.ScalarNode and key_node.tag == _STR_TAG:
                key = key_node.value
            else:
                key = self._construct(key_node, loc)
                if isinstance(key, list):
                    key = tuple(key)
                try:
                    hash(key)
                except TypeError:
                    raise InputError(f"a mapping key must be a scalar, got {type(key).__name__}",
                                     path=self.path, line=key_node.start_mark.line + 1,
                                     field=format_loc(loc) or None) from None
            if index >= n_merged:
                if key in written:
                    raise InputError(
                        f"duplicate key {key!r}",
                        path=self.path,
                        line=key_node.start_mark.line + 1,
                        field=format_loc((*loc, str(key))),
                    )
                written.add(key)
            child = (*loc, key if isinstance(key, (str, int)) else str(key))
            out[key] = self.walk(value_node, child, lines, key_node.start_mark.line + 1)
        return out


def _walk(loader: Any, node: yaml.Node, loc: Loc, lines: dict[Loc, int], path: Path,
          aliases: bool = True) -> Any:
    """Plain data of ``node`` (one document), filling ``lines`` with the line of every path."""
    return _Walker(loader, path, aliases).walk(node, loc, lines)


def read_yaml_documents(path: str | Path, loader_class: type | None = None) -> Iterator[YamlDoc]:
    """Yield every non-empty document of a (possibly multi-document) YAML file.

    ``loader_class``: the PyYAML loader (default: libyaml's ``CSafeLoader`` where PyYAML was
    built with it, else the pure-Python ``SafeLoader``); tests/suite/test_yaml_fast.py reads the
    same texts with both and compares."""
    from queryeval.io.files import decode_text, read_input_bytes

    path = Path(path)
    loader_class = loader_class or _Loader
    text = decode_text(read_input_bytes(path, "suite"), path)
    loader = None
    try:
        aliases = check_depth(text, path, loader_class)
        loader = loader_class(text)  # the pure loader's reader refuses a control character here
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            lines: dict[Loc, int] = {}
            data = _walk(loader, node, (), lines, path, aliases)
            # construct_document would forget the document's nodes here; calling
            # construct_object ourselves, we do it (else every scalar node of the file
            # stays alive in this cache, and the garbage collector walks them again and again)
            loader.constructed_objects.clear()
            if data is None:
                continue
            yield YamlDoc(data=data, path=path, line=node.start_mark.line + 1, lines=lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {_one_line(problem)}", path=path, line=line) from None
    except ReaderError as exc:  # a control character or bad encoding in the text
        line = None
        if isinstance(exc.position, int):
            if issubclass(loader_class, CParser):  # libyaml counts bytes of UTF-8, not characters
                line = text.encode("utf-8", "surrogatepass").count(b"\n", 0, exc.position) + 1
            else:
                line = text.count("\n", 0, exc.position) + 1
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        raise InputError(f"invalid YAML: unacceptable character {char}: {_one_line(exc.reason)}",
                         path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {_one_line(str(exc))}", path=path) from None
    except RecursionError:
        raise InputError("invalid YAML: nesting too deep", path=path) from None
    finally:
        if loader is not None:
            loader.dispose()
