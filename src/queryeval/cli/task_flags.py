"""``queryeval run``'s task flags, built from the built-in tasks' options models.

Each field of a task's options model that carries a :class:`~queryeval.tasks.base.Flag` (or a
:class:`~queryeval.tasks.base.FlagGroup`, for a nested model) becomes a flag; a flag several
tasks declare is one flag. :func:`click_params` gives the command its parameters (built on
first use, when ``run`` parses its arguments or shows its help, so the other commands never
import the tasks); :func:`task_options` turns the values given into task options, by field
name. Adding an option to a task is adding a field with a Flag: no edit here or in
``cli/run.py``. A plug-in task's options are given with ``--option KEY=VALUE``.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from queryeval.errors import ConfigError


@dataclass
class Spec:
    """One command-line flag and the option fields it sets."""

    name: str
    dest: str
    base: Any
    default: Any = None
    helps: list[str] = field(default_factory=list)
    metavar: str | None = None
    multiple: bool = False
    bounds: dict = field(default_factory=dict)
    target: str = ""
    """The task option the flag sets (a nested one: ``judge.model``)."""


def _strip_none(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007
    return annotation


def _bounds(metadata: list, base: Any) -> dict:
    if base not in (int, float):
        return {}
    out = {}
    for m in metadata:
        if getattr(m, "ge", None) is not None:
            out["min"] = m.ge
        if getattr(m, "le", None) is not None:
            out["max"] = m.le
    return out


def _simple(base: Any, where: str) -> Any:
    if base in (str, int, float, bool, Path) or typing.get_origin(base) is Literal:
        return base
    if typing.get_origin(base) is list and len(typing.get_args(base)) == 1:
        return _simple(typing.get_args(base)[0], where)
    raise TypeError(f"{where}: a flag of type {base!r} needs Flag(type=...)")


def declarations() -> list[tuple[str, str, Any, Any]]:
    """``(task, field, marker, field_info)`` of every built-in task's flagged option, in the
    tasks' order (a field shared by several tasks, such as ``on_error``, once)."""
    from queryeval.registry import TASKS
    from queryeval.tasks.base import Flag, FlagGroup

    seen: set[tuple[str, int]] = set()
    out = []
    for name in TASKS.in_order():
        if name not in TASKS.builtins:
            continue
        for fname, info in TASKS.get(name).Options.model_fields.items():
            for marker in info.metadata:
                if isinstance(marker, (Flag, FlagGroup)) and (fname, id(marker)) not in seen:
                    seen.add((fname, id(marker)))
                    out.append((name, fname, marker, info))
    return out


def _flag_spec(flag: Any, fname: str, annotation: Any, metadata: list, *, default: Any = None,
               prefix: str = "--", target: str) -> Spec:
    name = flag.name or prefix + fname.replace("_", "-")
    base = Path if flag.path else (flag.type or _strip_none(annotation))
    if typing.get_origin(base) is list:
        base = typing.get_args(base)[0]
    base = _simple(base, name)
    return Spec(name=name, dest="task_" + name[2:].replace("-", "_"), base=base,
                default=[] if flag.multiple else default, helps=[flag.help],
                metavar=flag.metavar, multiple=flag.multiple, bounds=_bounds(metadata, base),
                target=target)


@functools.cache
def specs() -> dict[str, Spec]:
    """Every task flag by name, merged across tasks (one flag, each task's help; the
    choices of a Literal flag joined)."""
    from pydantic.fields import PydanticUndefined

    from queryeval.tasks.base import Flag

    out: dict[str, Spec] = {}

    def add(spec: Spec) -> None:
        have = out.get(spec.name)
        if have is None:
            out[spec.name] = spec
            return
        if have.target != spec.target:
            raise TypeError(f"{spec.name} sets both {have.target} and {spec.target}")
        if have.base != spec.base:
            if typing.get_origin(have.base) is Literal and typing.get_origin(spec.base) is Literal:
                choices = dict.fromkeys((*typing.get_args(have.base), *typing.get_args(spec.base)))
                have.base = Literal[tuple(choices)]
            else:
                raise TypeError(f"{spec.name}: {have.base!r} in one task, {spec.base!r} in another")
        have.helps += [h for h in spec.helps if h not in have.helps]

    for _task, fname, marker, info in declarations():
        if isinstance(marker, Flag):
            add(_flag_spec(marker, fname, info.annotation, info.metadata, target=fname))
            continue
        nested = _strip_none(info.annotation)
        if marker.switch is not None:
            add(Spec(name=marker.switch.name, dest="task_" + marker.switch.name[2:].replace("-", "_"),
                     base=bool, default=False, helps=[marker.switch.help], target=fname))
        for sub, flag in marker.flags.items():
            sub_info = nested.model_fields[sub]
            default = None
            if marker.switch is not None and sub_info.default is not PydanticUndefined:
                default = sub_info.default
            add(_flag_spec(flag, sub, sub_info.annotation, sub_info.metadata, default=default,
                           prefix=marker.prefix, target=f"{fname}.{sub}"))
    return out


@functools.cache
def click_params() -> tuple:
    """The task flags as the command's click parameters (Typer builds them, as it does the
    command's own, from a generated signature)."""
    import typer
    import typer.main

    params = []
    for spec in specs().values():
        extra: dict[str, Any] = {}
        annotation = list[spec.base] if spec.multiple else spec.base
        if spec.multiple and typing.get_origin(spec.base) is Literal:  # Typer: list[str] only
            annotation = list[str]
            extra["callback"] = _choices(spec.name, typing.get_args(spec.base))
        if spec.default is None:
            annotation = typing.Optional[annotation]  # noqa: UP045 - Typer reads it
        option = typer.Option(spec.default, spec.name, help=" ".join(spec.helps),
                              metavar=spec.metavar, **spec.bounds, **extra)
        params.append(inspect.Parameter(spec.dest, inspect.Parameter.KEYWORD_ONLY,
                                        default=option, annotation=annotation))

    def flags(**_: Any) -> None:
        """(the task flags)"""

    flags.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    app = typer.Typer(add_completion=False)
    app.command()(flags)
    return tuple(typer.main.get_command(app).params)


def _choices(option: str, choices: tuple[str, ...]) -> Any:
    """A callback keeping a repeatable option's values to ``choices`` (Typer's Literal
    covers one value)."""

    def check(values: list[str]) -> list[str]:
        import typer

        for value in values:
            if value not in choices:
                raise typer.BadParameter(f"{value!r} is not one of "
                                         f"{', '.join(repr(c) for c in choices)}.",
                                         param_hint=option)
        return values

    return check


def dests() -> set[str]:
    return {spec.dest for spec in specs().values()}


def _given(value: Any) -> bool:
    return value is not None and value != [] and value != ()


def _as_text(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_as_text(v) for v in value]
    return str(value) if isinstance(value, Path) else value


def task_options(values: dict[str, Any], options: dict) -> dict:
    """``options`` (from ``--option``) with the task flags given in ``values`` (by dest):
    each flag sets its field; a flag and an ``--option`` of the same key that disagree, or
    two alternative flags of one field, are one ConfigError line."""
    from queryeval.tasks.base import Flag

    by_name = specs()
    out = dict(options)
    for _task, fname, marker, _info in declarations():
        if isinstance(marker, Flag):
            continue  # the plain flags, below, field by field
        nested = {}
        subs = {sub: by_name[flag.name or marker.prefix + sub.replace("_", "-")]
                for sub, flag in marker.flags.items()}
        if marker.switch is not None:
            if not values.get(by_name[marker.switch.name].dest):
                continue
            nested = {sub: values.get(spec.dest) for sub, spec in subs.items()}
        else:
            nested = {sub: values.get(spec.dest) for sub, spec in subs.items()
                      if _given(values.get(spec.dest))}
        nested = {sub: (marker.flags[sub].parse(v) if marker.flags[sub].parse else v)
                  for sub, v in nested.items()}
        if marker.switch is None:
            nested = {sub: v for sub, v in nested.items() if v}
            if not nested:
                continue
        if any(not nested.get(sub) for sub in marker.needs):
            raise ConfigError(marker.needs_message)
        current = out.get(fname)
        out[fname] = {**(current if isinstance(current, dict) else {}), **nested}
    plain: dict[str, list[tuple[Spec, Any]]] = {}
    for spec in by_name.values():
        if "." not in spec.target and spec.base is not bool:
            plain.setdefault(spec.target, []).append(spec)
    for fname, alternatives in plain.items():
        given = [(spec, values.get(spec.dest)) for spec in alternatives
                 if _given(values.get(spec.dest))]
        if not given:
            continue
        if len(given) > 1:
            names = [spec.name for spec in alternatives]
            raise ConfigError(f"give one of {', '.join(names[:-1])} or {names[-1]}")
        spec, value = given[0]
        flag = _flag_of(spec)
        value = _as_text(value)
        if flag.parse is not None:
            value = flag.parse(value)
        elif len(alternatives) > 1 and isinstance(value, list):
            value = ",".join(value)
        if fname in out and str(out[fname]) != str(value):
            raise ConfigError(f"{spec.name} {value} and --option {fname}={out[fname]} "
                              "disagree: give one")
        out[fname] = value
    return out


def _flag_of(spec: Spec) -> Any:
    from queryeval.tasks.base import Flag

    for _task, fname, marker, _info in declarations():
        if isinstance(marker, Flag) and fname == spec.target and (
                (marker.name or "--" + fname.replace("_", "-")) == spec.name):
            return marker
    raise KeyError(spec.name)
