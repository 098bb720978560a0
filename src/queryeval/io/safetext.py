"""Untrusted text made safe for the places a user opens it: spreadsheets, CSV files, the terminal.

Case names, questions, dataset ids, tags, system outputs and generated queries are data. Each
output has its own way of turning data into code, and each has one function here:

* :func:`xlsx_text` - a spreadsheet cell. Strings are written with data type ``s`` by
  :func:`queryeval.report.xlsx.put` (never as a formula, whatever they start with); this makes
  the text storable: characters XML 1.0 cannot hold (C0 controls other than tab, newline and
  CR; lone surrogates; U+FFFE, U+FFFF) would make openpyxl or lxml raise and the run crash.
* :func:`csv_cell` - a CSV cell. A string a spreadsheet would read as a formula (first
  character ``=``, ``+``, ``-``, ``@``, tab, CR, or their full-width forms) gets a leading
  ``'`` as OWASP recommends; numbers, and strings that are plain decimal numbers, stay as they
  are. The escape is reversible (:func:`csv_uncell`). ``QUERYEVAL_CSV_RAW=1`` turns it off.
* :func:`console_text` - a rich :class:`~rich.text.Text` for the console: never parsed as rich
  markup (``[/x]``, ``[link=...]`` stay literal) and with control characters (ESC, so no
  escape or OSC 8 hyperlink sequence, C0, DEL, C1 including CSI U+009B) and bidirectional
  overrides shown as visible escapes.
* :func:`one_line` - a name (run label, case id, metric or column name) as one line of a
  message or a console table: as written when printable, else Python's repr, so that no name
  breaks a line or starts one (``::error::`` at a line's start is a GitHub Actions workflow
  command; it lives in :mod:`queryeval.errors`, the layer below ``io`` and ``metrics``, so that
  both use it); :func:`console_line` is its rich :class:`~rich.text.Text`. :func:`console_text`
  keeps newlines (notes, multi-line messages): use it for text that is not a name.

The visible escape of a character is its Python-style code: ``\\x1b`` for ESC, ``\\x00`` for
NUL, ``\\x9b`` for U+009B, ``\\ud800`` for a lone surrogate, ``\\u202e`` for RIGHT-TO-LEFT
OVERRIDE. A backslash already in the text is left as it is, so the escape is for reading, not
for decoding. Only the outputs are changed: the results JSONL keeps every string exactly.
"""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Iterable
from typing import Any

from queryeval.errors import one_line

#: Characters an xlsx cell cannot store (XML 1.0): C0 but tab/LF/CR, surrogates, U+FFFE/U+FFFF;
#: DEL and C1 can be stored but are invisible controls, so they are shown too.
_XLSX_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
#: What a terminal must not receive: every C0 control but newline and tab (ESC starts escape
#: and OSC sequences, CR overwrites the line), DEL, C1 (U+009B is a one-byte CSI),
#: surrogates, and the bidirectional embedding/override/isolate controls.
_CONSOLE_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")

#: Environment variable: ``1`` (or ``true``/``yes``) writes CSV cells raw, without the ``'``.
CSV_RAW_ENV = "QUERYEVAL_CSV_RAW"
#: First characters that make a spreadsheet read a CSV cell as a formula (OWASP "CSV
#: injection"), with the full-width forms some Excel locales also accept.
CSV_TRIGGERS = frozenset("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_CSV_HEADS = CSV_TRIGGERS | {"'"}
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _visible(match: re.Match) -> str:
    cp = ord(match.group())
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


def visible_controls(text: str, pattern: re.Pattern = _CONSOLE_BAD) -> str:
    """``text`` with every character matched by ``pattern`` replaced by its visible escape."""
    return pattern.sub(_visible, text) if pattern.search(text) else text


def xlsx_text(text: str) -> str:
    """``text`` as an xlsx cell can store it (see the module docstring)."""
    return _XLSX_BAD.sub(_visible, text) if _XLSX_BAD.search(text) else text


# --- CSV ---------------------------------------------------------------------------------------
def csv_raw_from_env() -> bool:
    return os.environ.get(CSV_RAW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def csv_cell(value: Any, *, raw: bool = False) -> Any:
    """One CSV cell: ``None`` -> ``""``; numbers unchanged; any other value as text, with a
    leading ``'`` when it would start a formula (unless ``raw``)."""
    if value is None:
        return ""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return value
    text = value if isinstance(value, str) else str(value)
    if raw or not text:
        return text
    head = text.lstrip("'")[:1]
    if head in CSV_TRIGGERS and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_uncell(text: str) -> str:
    """The text :func:`csv_cell` escaped (the inverse: ``csv_uncell(csv_cell(s)) == s``)."""
    if text[:1] == "'" and text.lstrip("'")[:1] in CSV_TRIGGERS:
        return text[1:]
    return text


def csv_row(values: Iterable[Any], *, raw: bool = False) -> list[Any]:
    """:func:`csv_cell` of every value (with fast paths: a run's CSV has millions of cells)."""
    if raw:
        return [csv_cell(v, raw=True) for v in values]
    heads, plain = _CSV_HEADS, (float, int, bool)  # bool: the csv module writes True/False
    return [v if (v.__class__ is str and not (v and v[0] in heads)) or v.__class__ in plain
            else "" if v is None else csv_cell(v) for v in values]


# --- console -----------------------------------------------------------------------------------
def console_plain(value: Any) -> str:
    """``value`` as a string with control characters made visible (for ``markup=False``
    prints)."""
    return visible_controls(value if isinstance(value, str) else str(value))


def console_text(value: Any, style: str = "") -> Any:
    """A :class:`rich.text.Text` of ``value``: literal (no markup), controls made visible."""
    from rich.text import Text

    return Text(console_plain(value), style=style)



def console_line(value: Any, style: str = "") -> Any:
    """A :class:`rich.text.Text` of :func:`one_line` of ``value`` (in full: no limit):
    literal (no markup), one line. For names and one-line texts holding names in console
    tables, titles and lines."""
    from rich.text import Text

    return Text(one_line(value, None), style=style)
