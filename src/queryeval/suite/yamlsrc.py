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

from queryeval.errors import InputError

try:  # the C loader is much faster where libyaml is available
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the build
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


def format_loc(loc: Loc) -> str:
    """``('conversation', 0, 'target')`` -> ``conversation[0].target``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _walk(loader: Any, node: yaml.Node, loc: Loc, lines: dict[Loc, int], path: Path) -> Any:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolve YAML merge keys (<<)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, list):
                key = tuple(key)
            if key in out:
                raise InputError(
                    f"duplicate key {key!r}",
                    path=path,
                    line=key_node.start_mark.line + 1,
                    field=format_loc((*loc, str(key))),
                )
            child = (*loc, key if isinstance(key, (str, int)) else str(key))
            out[key] = _walk(loader, value_node, child, lines, path)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(loader, item, (*loc, i), lines, path) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def read_yaml_documents(path: str | Path) -> Iterator[YamlDoc]:
    """Yield every non-empty document of a (possibly multi-document) YAML file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("file is not valid UTF-8", path=path, line=line) from None
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            lines: dict[Loc, int] = {}
            data = _walk(loader, node, (), lines, path)
            if data is None:
                continue
            yield YamlDoc(data=data, path=path, line=node.start_mark.line + 1, lines=lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    except RecursionError:
        raise InputError("invalid YAML: nesting too deep", path=path) from None
    finally:
        loader.dispose()
