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
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

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
    The store is closed again before returning, so worker processes can open it
    read-only.
    """
    identity = describe_sources(sources, base_iri)
    root = Path(store_dir).expanduser().resolve()
    marker = root / MARKER
    if marker.is_file():
        try:
            saved = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = {}
        if saved.get("identity") == identity:
            return StoreInfo(path=root, prefixes=dict(saved.get("prefixes", {})),
                             named_graphs=list(saved.get("named_graphs", [])),
                             quads=int(saved.get("quads", 0)), reused=True)
        shutil.rmtree(root)
    elif root.exists():
        if not root.is_dir() or any(root.iterdir()):
            raise InputError(
                f"store directory is not empty and has no {MARKER}; refusing to overwrite it",
                path=root)
    root.mkdir(parents=True, exist_ok=True)
    try:
        info = _load(root, identity)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    tmp = root / (MARKER + ".tmp")
    tmp.write_text(json.dumps({"identity": identity, "prefixes": info.prefixes,
                               "named_graphs": info.named_graphs, "quads": info.quads},
                              indent=1), encoding="utf-8")
    os.replace(tmp, marker)
    return info


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
