"""The one registry: what can be named by a string on the command line or in the Python API.

Four kinds, each a :class:`Registry` with its own entry-point group (inspect_ai's pattern):

=========  ======================  ==================================================
kind       entry-point group       an entry is
=========  ======================  ==================================================
tasks      ``queryeval.tasks``     a :class:`~queryeval.tasks.base.Task` subclass
formats    ``queryeval.formats``   a :class:`~queryeval.suite.loader.SuiteFormat`
systems    ``queryeval.systems``   ``build(spec, *, isolate, concurrency) -> System``
                                   for the specs ``NAME:...`` (``http``: ``http://...``)
metrics    ``queryeval.metrics``   owned by :mod:`queryeval.metrics.registry`
=========  ======================  ==================================================

A built-in entry is a ``"module:attribute"`` string, imported the first time it is asked
for; an installed package adds entries under the kind's group
(``[project.entry-points."queryeval.formats"] myfmt = "mypkg.formats:MYFMT"``), read once,
on the first look-up, and loaded only when asked for; ``register_*`` adds one in the
process. All three are the same entry afterwards: looked up by name, checked by the kind's
``check`` on first load, listed by :meth:`Registry.names`. A built-in cannot be replaced;
another entry only with ``replace=True``; an installed entry never shadows a registered one.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any

from queryeval.errors import ConfigError

GROUPS = {"tasks": "queryeval.tasks", "formats": "queryeval.formats",
          "systems": "queryeval.systems", "metrics": "queryeval.metrics"}
"""The entry-point group of each kind (the metrics kind is built by metrics/registry.py)."""


class Registry:
    """Named entries of one kind: built-ins (``"module:attr"``, imported on first use),
    installed entry points (read once, loaded on first use) and entries registered in the
    process, all looked up the same way."""

    def __init__(self, kind: str, builtins: dict[str, str], *, noun: str,
                 check: Callable[[str, Any], Any] | None = None) -> None:
        self.kind = kind
        self.group = GROUPS[kind]
        self.noun = noun
        self.builtins = frozenset(builtins)
        self._check = check
        self._entries: dict[str, Any] = dict(builtins)
        self._loaded = False
        self._installed: set[str] = set()

    # --- what is there -----------------------------------------------------------------
    def _load_entry_points(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            if ep.name.isidentifier() and ep.name not in self._entries:
                self._entries[ep.name] = ep.value
                self._installed.add(ep.name)

    def names(self) -> list[str]:
        """Every name, built-in, installed or registered, sorted."""
        self._load_entry_points()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load_entry_points()
        return name in self._entries

    def describe(self, name: str) -> str:
        entry = self._entries[name]
        if isinstance(entry, str):
            return entry
        owner = entry if isinstance(entry, type) or callable(entry) else type(entry)
        return f"{getattr(owner, '__module__', '?')}:{getattr(owner, '__qualname__', '?')}"

    # --- adding ------------------------------------------------------------------------
    def register(self, name: str, obj: Any, *, replace: bool = False) -> Any:
        """Add ``obj`` as ``name`` (checked now, as an installed entry is on first load)."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(f"a {self.noun} needs a name made of word characters, got "
                              f"{name!r:.80}")
        if name in self.builtins:
            raise ConfigError(f"{self.noun} {name!r} is built in and cannot be replaced")
        self._load_entry_points()
        current = self._entries.get(name)
        if current is not None and current is not obj and not replace:
            raise ConfigError(f"{self.noun} {name!r} is already registered "
                              f"({self.describe(name)}); pass replace=True to replace it")
        if self._check is not None:
            obj = self._check(name, obj)
        self._entries[name] = obj
        self._installed.discard(name)
        return obj

    def remove(self, name: str) -> None:
        """Forget a registered entry (a built-in stays)."""
        if name in self.builtins:
            raise ConfigError(f"{self.noun} {name!r} is built in and cannot be removed")
        self._entries.pop(name, None)

    # --- looking up --------------------------------------------------------------------
    def unknown(self, name: str) -> ConfigError:
        import difflib

        close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return ConfigError(f"unknown {self.noun} {name!r}{hint} (known {self.noun}s: "
                           f"{', '.join(self.names())})")

    def get(self, name: str) -> Any:
        """The entry registered as ``name``, imported (and checked) on first use; an
        installed entry that fails to import is one ConfigError line naming it."""
        self._load_entry_points()
        if name not in self._entries:
            raise self.unknown(name)
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            try:
                obj: Any = importlib.import_module(module)
                for part in attr.split(".") if attr else ():
                    obj = getattr(obj, part)
            except Exception as exc:  # noqa: BLE001 - a plug-in's import error: one line
                if name in self.builtins:
                    raise
                raise ConfigError(f"cannot load {self.noun} {name!r} from {entry}: "
                                  f"{type(exc).__name__}: {exc}") from None
            if self._check is not None:
                obj = self._check(name, obj)
            self._entries[name] = entry = obj
        return entry

    def in_order(self) -> list[str]:
        """Every name in the order a search asks them: registered and installed entries
        first (in the order they came), then the built-ins in their declared order."""
        self._load_entry_points()
        return ([n for n in self._entries if n not in self.builtins]
                + [n for n in self._entries if n in self.builtins])

    def loaded(self) -> dict[str, Any]:
        """Every entry, loaded (an installed one that fails to load is left out)."""
        out = {}
        for name in self.names():
            try:
                out[name] = self.get(name)
            except ConfigError:
                if name in self.builtins:
                    raise
        return out

    @contextlib.contextmanager
    def isolated(self) -> Iterator[Registry]:
        """A private copy for the ``with`` block (tests, notebooks): entries registered
        inside it and entry points read inside it are forgotten after it."""
        saved = (dict(self._entries), self._loaded, set(self._installed))
        self._loaded = False
        try:
            yield self
        finally:
            self._entries, self._loaded, self._installed = saved


def _is_a(cls: Any, module: str, qualname: str) -> bool:
    """Whether ``cls`` is the class ``module:qualname`` or derives from it, told by its MRO:
    the registry sits below every kind it holds and imports none of them (a class from a
    module that is not imported yet cannot be one)."""
    return isinstance(cls, type) and any(
        c.__module__ == module and c.__qualname__ == qualname for c in cls.__mro__)


def _check_task(name: str, obj: Any) -> Any:
    if not _is_a(obj, "queryeval.tasks.base", "Task"):
        raise ConfigError(f"task {name!r}: {obj!r:.80} is not a queryeval Task subclass")
    missing = sorted(getattr(obj, "__abstractmethods__", ()))
    if missing:
        raise ConfigError(f"task {name!r} does not implement: {', '.join(missing)}")
    return obj


def _check_format(name: str, obj: Any) -> Any:
    if not _is_a(type(obj), "queryeval.suite.loader", "SuiteFormat"):
        raise ConfigError(f"suite format {name!r}: {obj!r:.80} is not a "
                          "queryeval.suite.loader.SuiteFormat")
    return obj


def _check_system(name: str, obj: Any) -> Any:
    if not callable(obj):
        raise ConfigError(f"system kind {name!r}: {obj!r:.80} is not callable "
                          "(build(spec, *, isolate, concurrency) -> System)")
    return obj


TASKS = Registry("tasks", {
    "indicator_selection": "queryeval.tasks.selection.task:SelectionTask",
    "answers": "queryeval.tasks.answers.task:AnswersTask",
    "retrieval": "queryeval.tasks.retrieval.task:RetrievalTask",
    "query": "queryeval.tasks.query.task:QueryTask",
    "fields": "queryeval.tasks.fields.task:FieldsTask",
    "freeform": "queryeval.tasks.freeform.task:FreeformTask",
}, noun="task", check=_check_task)

FORMATS = Registry("formats", {  # in the order load_suite asks them (installed ones first)
    "yaml": "queryeval.suite.loader:YAML_FORMAT",
    "folder": "queryeval.suite.loader:FOLDER_FORMAT",
    "jsonl": "queryeval.suite.loader:JSONL_FORMAT",
    "records": "queryeval.suite.loader:RECORDS_FORMAT",
    "table": "queryeval.suite.loader:TABLE_FORMAT",
    "qrels": "queryeval.suite.loader:QRELS_FORMAT",
    "trec": "queryeval.suite.loader:TREC_FORMAT",
    "dabench": "queryeval.suite.loader:DABENCH_FORMAT",
}, noun="suite format", check=_check_format)

SYSTEMS = Registry("systems", {  # by the spec's scheme: python:…, http://…, cmd:…
    "python": "queryeval.systems.factory:python_system",
    "http": "queryeval.systems.factory:http_system",
    "https": "queryeval.systems.factory:http_system",
    "cmd": "queryeval.systems.factory:cmd_system",
    "object": "queryeval.systems.factory:object_system",
}, noun="system kind", check=_check_system)


def register_format(fmt: Any, *, replace: bool = False) -> Any:
    """Make a :class:`~queryeval.suite.loader.SuiteFormat` a suite reader (``load_suite``,
    ``queryeval run``/``validate``, ``qe.evaluate``), named by ``fmt.name``; returns it."""
    return FORMATS.register(getattr(fmt, "name", None), fmt, replace=replace)


def register_system(name: str, build: Callable[..., Any], *, replace: bool = False) -> Any:
    """Make ``--system NAME:REST`` (and ``qe.evaluate(system="NAME:REST")``) build a system
    with ``build(spec, *, isolate, concurrency)``; returns ``build``."""
    return SYSTEMS.register(name, build, replace=replace)
