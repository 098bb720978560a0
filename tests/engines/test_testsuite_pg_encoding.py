"""PostgreSQL neighbour files hold their cells in the run log's typed JSON form
(io/typedjson, the one encoder; issue 34): every value psycopg gives back reads back equal
and is written exactly as the run log writes it, so a refuting neighbour's rows reach the
record unchanged."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import uuid
from zoneinfo import ZoneInfo

from queryeval.engines.query.neighbours.pg import FORMAT, decode, encode, neighbour_rows
from queryeval.io.typedjson import to_json

VALUES = [None, True, 7, 2 ** 70, 1.5, "text", decimal.Decimal("2.500"), b"\x00\xff",
          uuid.UUID(int=5), dt.date(2024, 2, 29), dt.time(13, 5, 1),
          dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=ZoneInfo("Europe/Paris")),
          dt.timedelta(days=3, seconds=7, microseconds=9), [1, [2, None]],
          {"a": [1, {"b": "c"}]}, ipaddress.ip_network("10.0.0.0/8")]


def test_every_value_reads_back_equal_in_the_run_logs_form(tmp_path):
    for value in VALUES:
        written = json.loads(json.dumps(encode(value)))
        assert written == to_json(value)  # the one encoder's form
        assert decode(written) == value and type(decode(written)) is type(value)
    nan = decode(json.loads(json.dumps(encode(float("nan")))))
    assert math.isnan(nan)
    # the interval is exact now (the encoder of its own kept total seconds, a float)
    assert decode(encode(dt.timedelta(microseconds=1))) == dt.timedelta(microseconds=1)
    path = tmp_path / "n.json"
    path.write_text(json.dumps({"format": FORMAT, "ddl": [], "tables": {
        "t": {"columns": ["v"], "rows": [[encode(v)] for v in VALUES]}}}), encoding="utf-8")
    rows = neighbour_rows(path)["t"]["rows"]
    assert rows == [[to_json(v)] for v in VALUES]


def test_a_value_the_form_lacks_is_written_as_its_text():
    class Range:
        def __str__(self) -> str:
            return "[1,5)"

    assert encode(Range()) == "[1,5)"
