"""Build (or reuse) a persisted pyoxigraph store from RDF source files.

A store directory holds a RocksDB database plus a marker file, ``queryeval-store.json``,
recording what was loaded: each source's absolute path, format and sha256, the base IRI,
the pyoxigraph version, and what later runs need without re-reading the sources (the
prefixes the sources declare, the named graphs, the quad count). A later run whose
sources hash the same reuses the store; any change (a file edited, added or removed)
wipes the directory and reloads. A directory that is neither empty nor carries the
marker is never touched (it might be someone's data). Loading uses ``bulk_load``, which
writes SST files directly and is several times faster than ``load``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.io.caches import read_record, write_record

MARKER = "queryeval-store.json"
MARKER_VERSION = 1

# extension -> pyoxigraph RdfFormat attribute name
FORMATS: dict[str, str] = {
    ".ttl": "TURTLE",
    ".turtle": "TURTLE",
    ".nt": "N_TRIPLES",
    ".ntriples": "N_TRIPLES",
    ".rdf": "RDF_XML",
    ".xml": "RDF_XML",
    ".owl": "RDF_XML",
    ".nq": "N_QUADS",
    ".nquads": "N_QUADS",
    ".trig": "TRIG",
}
_PREFIX_FORMATS = {"TURTLE", "TRIG", "RDF_XML"}

# rdflib binds these namespaces on every Graph ("core" set); queries written against
# rdflib rely on them, so they are the lowest-priority defaults.
CORE_PREFIXES: dict[str, str] = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
}


@dataclass
class StoreInfo:
    """A ready store: where it is and what the queries need to know about it."""

    path: Path
    prefixes: dict[str, str] = field(default_factory=dict)
    named_graphs: list[str] = field(default_factory=list)
    quads: int = 0
    reused: bool = False


def rdf_format_name(path: Path) -> str:
    """The pyoxigraph format name for ``path``'s extension, or InputError."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise InputError(f"unknown RDF format {path.suffix or '(no extension)'!r}; expected one of {known}",
                         path=path)
    return fmt


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe_sources(sources: Sequence[str | Path], base_iri: str | None) -> dict[str, Any]:
    """The marker's identity part: what is being loaded (paths, formats, hashes)."""
    import pyoxigraph

    if not sources:
        raise InputError("no RDF source files given")
    entries = []
    for src in sources:
        path = Path(src).expanduser().resolve()
        if not path.is_file():
            raise InputError("RDF source file not found", path=path)
        entries.append({"path": str(path), "format": rdf_format_name(path),
                        "sha256": sha256_file(path)})
    return {"version": MARKER_VERSION, "pyoxigraph": pyoxigraph.__version__,
            "base_iri": base_iri, "sources": entries}


def prepare_store(sources: Sequence[str | Path], store_dir: str | Path, *,
                  base_iri: str | None = None) -> StoreInfo:
    """Make ``store_dir`` hold exactly ``sources``; reuse it when it already does.

    Raises InputError for a missing, unknown-format or invalid source (with the line
    pyoxigraph reports), or when ``store_dir`` holds something that is not our store.
    The store is built in a temporary sibling folder (``.NAME.queryeval-partial-PID-...``)
    with its marker written last, then renamed into place, so ``store_dir`` is either
    absent or complete: a run killed while loading (``kill -9``) leaves only a partial
    sibling, which the next run deletes. The store is closed again before returning, so
    worker processes can open it read-only.
    """
    identity = describe_sources(sources, base_iri)
    root = Path(store_dir).expanduser().resolve()
    _sweep(root)
    reused = _reuse(root, identity)
    if reused is not None:
        return reused
    if root.exists() and not (root / MARKER).is_file():
        if not root.is_dir() or not _is_rocksdb_only(root):
            raise InputError(
                f"store directory is not empty and has no {MARKER}; refusing to overwrite it",
                path=root)
        # A store without its marker: an earlier version's load, interrupted. Never
        # trusted; moved aside (not deleted: it cannot be told from someone's own store).
        aside = root.with_name(f"{root.name}.incomplete-{time.strftime('%Y%m%dT%H%M%S')}"
                               f"-{secrets.token_hex(3)}")
        os.rename(root, aside)
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = root.with_name(f".{root.name}{_PARTIAL}{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir()
    try:
        info = _load(tmp, identity)
        _write_marker(tmp, identity, info)
        return _install(tmp, root, identity, info)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already once installed


_PARTIAL = ".queryeval-partial-"
_TRASH = ".queryeval-trash-"
_ROCKSDB_NAME = re.compile(
    r"^(CURRENT|IDENTITY|LOCK|LOG(\.old\.\d+)?|MANIFEST-\d+|OPTIONS-\d+(\.dbtmp)?|"
    r"\d+\.(sst|log|blob|dbtmp)|" + re.escape(MARKER) + r"\.tmp)$")


def _is_rocksdb_only(root: Path) -> bool:
    entries = list(root.iterdir())
    return all(p.is_file() and _ROCKSDB_NAME.match(p.name) for p in entries)


def _reuse(root: Path, identity: Mapping[str, Any]) -> StoreInfo | None:
    saved = read_record(root / MARKER)  # absent or unreadable: not reused
    if saved is None or saved.get("identity") != identity:
        return None
    return StoreInfo(path=root, prefixes=dict(saved.get("prefixes", {})),
                     named_graphs=list(saved.get("named_graphs", [])),
                     quads=int(saved.get("quads", 0)), reused=True)


def _write_marker(folder: Path, identity: Mapping[str, Any], info: StoreInfo) -> None:
    write_record(folder / MARKER, json.dumps({"identity": identity, "prefixes": info.prefixes,
                                              "named_graphs": info.named_graphs,
                                              "quads": info.quads}, indent=1))


def _install(tmp: Path, root: Path, identity: Mapping[str, Any], info: StoreInfo) -> StoreInfo:
    """Rename the finished ``tmp`` into ``root``, replacing an outdated store there."""
    for _ in range(3):
        try:
            os.rename(tmp, root)  # atomic; fails if root exists and is not empty
            return StoreInfo(path=root, prefixes=info.prefixes, named_graphs=info.named_graphs,
                             quads=info.quads)
        except OSError:
            if not root.exists():
                raise
        other = _reuse(root, identity)  # another process finished the same build first
        if other is not None:
            return other
        trash = root.with_name(f".{root.name}{_TRASH}{os.getpid()}-{secrets.token_hex(4)}")
        os.rename(root, trash)  # an outdated store of ours (it has a marker): retire it
        shutil.rmtree(trash, ignore_errors=True)
    raise InputError("could not install the new store (another process keeps replacing it)",
                     path=root)


def _sweep(root: Path) -> None:
    """Delete partial builds and retired stores left beside ``root`` by dead processes."""
    parent = root.parent
    if not parent.is_dir():
        return
    prefix = f".{root.name}"
    for entry in parent.iterdir():
        name = entry.name
        for tag in (_PARTIAL, _TRASH):
            if name.startswith(prefix + tag):
                pid = name[len(prefix + tag):].split("-", 1)[0]
                if pid.isdigit() and not _alive(int(pid)):
                    shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of ours may be building (our own failures clean up)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _load(root: Path, identity: Mapping[str, Any]) -> StoreInfo:
    import pyoxigraph as ox

    store = ox.Store(str(root))
    prefixes: dict[str, str] = {}
    base_iri = identity["base_iri"]
    try:
        for entry in identity["sources"]:
            path = Path(entry["path"])
            fmt = getattr(ox.RdfFormat, entry["format"])
            try:
                store.bulk_load(path=str(path), format=fmt, base_iri=base_iri)
            except SyntaxError as exc:
                raise _syntax_input_error(exc, path) from None
            except (ValueError, OSError) as exc:
                raise InputError(f"cannot load RDF: {exc}", path=path) from None
            if entry["format"] in _PREFIX_FORMATS:
                for name, iri in read_prefixes(path, fmt).items():
                    prefixes.setdefault(name, iri)  # the first source to declare one wins
        store.flush()
        named = sorted(g.value for g in store.named_graphs() if isinstance(g, ox.NamedNode))
        quads = len(store)
    finally:
        del store
        gc.collect()  # release the RocksDB lock before read-only workers open the store
    return StoreInfo(path=root, prefixes=prefixes, named_graphs=named, quads=quads)


def read_prefixes(path: Path, fmt: Any) -> dict[str, str]:
    """The prefixes a Turtle / TriG / RDF-XML file declares (pyoxigraph's own parser)."""
    import pyoxigraph as ox

    parser = ox.parse(path=str(path), format=fmt)
    try:
        for _ in parser:
            pass
    except SyntaxError as exc:  # bulk_load accepted it, so this is unexpected
        raise _syntax_input_error(exc, path) from None
    return dict(parser.prefixes)


def _syntax_input_error(exc: SyntaxError, path: Path) -> InputError:
    message = exc.msg if getattr(exc, "msg", None) else str(exc)
    return InputError(f"invalid RDF: {message}", path=path, line=exc.lineno or None)
