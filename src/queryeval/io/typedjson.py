"""Typed, lossless JSON for the values an engine returns (UUID, INTERVAL, DECIMAL, BLOB,
dates and times, NaN/±inf, ...), as the run log writes them.

JSON holds ``null``, booleans, finite numbers, text, arrays and objects with text keys; any
other value is written as a tagged object ``{"$type": KIND, "value": ...}``:

========== ========================================== =================================
KIND       Python value                               ``value``
========== ========================================== =================================
float      ``nan``, ``inf``, ``-inf``                 ``"nan"``, ``"inf"``, ``"-inf"``
int        an integer beyond the float range          its decimal digits (text)
decimal    :class:`decimal.Decimal`                   ``str(d)`` (scale kept: ``2.500``)
bytes      bytes, bytearray, memoryview               lower-case hex
uuid       :class:`uuid.UUID`                         ``str(u)``
date       :class:`datetime.date`                     ISO 8601
time       :class:`datetime.time`                     ISO 8601 (with its offset)
datetime   :class:`datetime.datetime`                 ISO 8601 (with its offset); a zone
                                                      name rides along as ``"tz"``
interval   :class:`datetime.timedelta`                ``[days, seconds, microseconds]``
tuple      tuple (DuckDB ARRAY, a row)                its items, each encoded
map        dict with a non-text key, or a ``$type``   ``[[key, value], ...]``, encoded
           key (DuckDB MAP)
ip         ``ipaddress`` addresses, networks and      ``[class name, str(x)]``
           interfaces (PostgreSQL inet/cidr)
========== ========================================== =================================

Lists stay arrays and dicts with text keys stay objects (their items encoded; a subclass of
dict as a dict, as :mod:`json` writes it), so a record whose values JSON already holds is
written exactly as before. :func:`from_json` reads a
value back equal to the original (``from_json(to_json(v)) == v``; NaN as NaN). A value of
any other type has no JSON form: :func:`to_json` raises :class:`UnwritableValue` naming
where it sits, and the run records that case as an error (:func:`record_json`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import uuid
from typing import Any

from queryeval.io.numbers import int_fits

TAG = "$type"

_IP_CLASSES = {cls.__name__: cls for cls in (
    ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
    ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)}

TYPED = (decimal.Decimal, bytes, bytearray, memoryview, uuid.UUID, dt.date, dt.time,
         dt.timedelta, *_IP_CLASSES.values())
"""The classes JSON lacks that :func:`to_json` writes tagged (``isinstance`` checks)."""


class UnwritableValue(TypeError):
    """A value with no typed JSON form; ``where`` is its place in the record
    (``test_suite.refuted_by.database.t.rows[0][2]``)."""

    def __init__(self, where: str, kind: str) -> None:
        self.where, self.kind = where, kind
        super().__init__(f"{where or 'the value'}: a {kind} value has no JSON form")


def _tagged(kind: str, value: Any, **more: Any) -> dict:
    return {TAG: kind, "value": value, **more}


def _key(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def to_json(value: Any, where: str = "") -> Any:
    """``value`` in the typed JSON form (module docstring); raises :class:`UnwritableValue`."""
    kind = type(value)
    if value is None or kind is str or kind is bool:
        return value
    if kind is int:
        return value if int_fits(value) else _tagged("int", str(value))
    if kind is float:
        if math.isfinite(value):
            return value
        return _tagged("float", "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
    if kind is list:
        return [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind is dict or isinstance(value, dict):  # a subclass (a query's ResultJson) as json writes it
        if all(type(k) is str for k in value) and TAG not in value:
            return {k: to_json(v, _key(where, k)) for k, v in value.items()}
        return _tagged("map", [[to_json(k, f"{where}{{key}}"), to_json(v, _key(where, k))]
                               for k, v in value.items()])
    if kind is tuple:
        return _tagged("tuple", [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)])
    if isinstance(value, decimal.Decimal):
        return _tagged("decimal", str(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _tagged("bytes", bytes(value).hex())
    if isinstance(value, uuid.UUID):
        return _tagged("uuid", str(value))
    if isinstance(value, dt.datetime):
        return _tagged("datetime", value.isoformat(), **_zone(value.tzinfo))
    if isinstance(value, dt.date):
        return _tagged("date", value.isoformat())
    if isinstance(value, dt.time):
        return _tagged("time", value.isoformat(), **_zone(value.tzinfo))
    if isinstance(value, dt.timedelta):
        return _tagged("interval", [value.days, value.seconds, value.microseconds])
    if kind.__name__ in _IP_CLASSES and isinstance(value, _IP_CLASSES[kind.__name__]):
        return _tagged("ip", [kind.__name__, str(value)])
    if isinstance(value, bool):  # numpy.bool_ is no bool; a subclass of bool is
        return bool(value)
    if isinstance(value, int):  # an IntEnum, a numpy integer subclass of int
        return to_json(int(value), where)
    if isinstance(value, float):
        return to_json(float(value), where)
    if isinstance(value, str):
        return str(value)
    raise UnwritableValue(where, kind.__name__)


def _zone(tz: Any) -> dict:
    """``{"tz": name}`` for a named zone (``zoneinfo.ZoneInfo``), so it reads back named."""
    key = getattr(tz, "key", None)
    return {"tz": key} if isinstance(key, str) else {}


def _in_zone(parsed: dt.datetime, zone: Any) -> dt.datetime:
    """The datetime written: its wall time in ``zone``, with the fold whose offset is the one
    written -- a wall time the zone skips (02:00 on the night clocks go forward) or repeats
    reads back as it was, not as another wall time of the same instant. An offset the zone
    never gives there (its rules changed since): the same instant in ``zone``."""
    offset, wall = parsed.utcoffset(), parsed.replace(tzinfo=None)
    for fold in (0, 1):
        candidate = wall.replace(tzinfo=zone, fold=fold)
        if candidate.utcoffset() == offset:
            return candidate
    return parsed.astimezone(zone)


def from_json(value: Any) -> Any:
    """The Python value a typed JSON value stands for (:func:`to_json` inverted)."""
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    if TAG not in value:
        return {k: from_json(v) for k, v in value.items()}
    kind, v = value[TAG], value.get("value")
    if kind == "float":
        return float(v)
    if kind == "int":
        return int(v)
    if kind == "decimal":
        return decimal.Decimal(v)
    if kind == "bytes":
        return bytes.fromhex(v)
    if kind == "uuid":
        return uuid.UUID(v)
    if kind in ("datetime", "time"):
        parsed = (dt.datetime if kind == "datetime" else dt.time).fromisoformat(v)
        if value.get("tz"):
            import zoneinfo

            zone = zoneinfo.ZoneInfo(value["tz"])
            parsed = (_in_zone(parsed, zone) if kind == "datetime"
                      else parsed.replace(tzinfo=zone))
        return parsed
    if kind == "date":
        return dt.date.fromisoformat(v)
    if kind == "interval":
        days, seconds, micros = v
        return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
    if kind == "tuple":
        return tuple(from_json(x) for x in v)
    if kind == "map":
        return {_hashable(from_json(k)): from_json(x) for k, x in v}
    if kind == "ip":
        name, text = v
        return _IP_CLASSES[name](text)
    raise ValueError(f"unknown {TAG} {kind!r}")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def display(value: Any) -> str:
    """A typed JSON value as text for a reader (reports, explanations): the value's own text
    (``2.500``, the UUID, ``3 days, 0:00:00``, ``nan``, hex for bytes), containers as JSON."""
    if isinstance(value, dict) and TAG in value:
        kind, v = value[TAG], value.get("value")
        if kind in ("float", "int", "decimal", "uuid", "date", "time", "datetime"):
            return str(v)
        if kind == "bytes":
            return "\\x" + str(v)
        if kind == "interval":
            try:
                return str(from_json(value))
            except (TypeError, ValueError, OverflowError):
                return json.dumps(v)
        if kind == "ip":
            return str(v[1]) if isinstance(v, list) and len(v) == 2 else str(v)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def record_json(record: dict, dumps: Any) -> tuple[str, dict | None]:
    """The results line of ``record``, never an exception for a value in it: ``dumps``
    (the run log's, whose ``default`` writes the typed forms) first; a value it cannot
    write (NaN, an integer beyond the float range: whole-record walk with :func:`to_json`)
    is written typed; a value with no JSON form makes the case an error (kind
    ``unwritable``, the field named) with ``null`` in its place. Returns ``(text, error)``,
    ``error`` the ``{"kind", "message"}`` added or ``None``."""
    try:
        return dumps(record), None
    except (TypeError, ValueError, OverflowError):
        pass
    fixed, problem = _walk(record, "")
    if problem is None:
        return dumps(fixed), None
    error = {"kind": "unwritable", "message": f"the run log cannot hold a value: {problem}"}
    fixed["status"] = "error"
    fixed["error_kinds"] = sorted({*(fixed.get("error_kinds") or []), "unwritable"})
    if not fixed.get("error"):
        fixed["error"] = error
    fixed["unwritable"] = error["message"]
    return dumps(fixed), error


def _walk(value: Any, where: str) -> tuple[Any, str | None]:
    """``value`` in typed form with each value that has none set to ``None``; the first such
    place (and kind), or ``None``."""
    try:
        return to_json(value, where), None
    except UnwritableValue as exc:
        first = str(exc)
    except RecursionError:
        return None, f"{where or 'the record'}: nested too deep"
    if type(value) is dict and all(type(k) is str for k in value):
        out = {}
        for k, v in value.items():
            out[k], _ = _walk(v, _key(where, k))
        return out, first
    if type(value) in (list, tuple):
        items = [_walk(v, f"{where}[{i}]")[0] for i, v in enumerate(value)]
        return (items if type(value) is list else _tagged("tuple", items)), first
    return None, first
