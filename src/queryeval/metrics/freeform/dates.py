"""Calendar dates in free text, normalised to ISO ``YYYY-MM-DD`` with dateutil.

Forms read (docs/freeform.md, "Dates"): ISO ``2024-02-01`` (and ``2024/02/01``); numeric
``01/02/2024``, ``1.2.2024`` or ``01-02-2024`` (a four-digit year last); and with a month
name, ``1 February 2024``, ``1st of Feb. 2024``, ``February 1, 2024``. A date needs a day,
a month and a four-digit year (``March 2024`` is not a date).

Ambiguity: a numeric date whose first two fields are both 12 or less and differ
(``01/02/2024``) is read month first (``2024-01-02``, dateutil's default and US usage)
unless ``dayfirst=True`` (``2024-02-01``); a first field above 12 is always a day. Such a
date is *ambiguous*: the ladder lets it pass on the reading asked for and, when only the
other reading equals the reference, leaves the case inconclusive rather than failing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
          r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_ORD = r"(?:st|nd|rd|th)?"
_DATE = re.compile(
    r"(?<![\w./-])(?:"
    r"(?P<iso>\d{4}[-/]\d{1,2}[-/]\d{1,2})"
    r"|(?P<num>\d{1,2}[/.-]\d{1,2}[/.-]\d{4})"
    r"|(?P<dmy>\d{1,2}" + _ORD + r"\s+(?:of\s+)?" + _MONTH + r",?\s+\d{4})"
    r"|(?P<mdy>" + _MONTH + r"\s+\d{1,2}" + _ORD + r",?\s+\d{4})"
    r")(?![\w/-]|\.\d)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FoundDate:
    """A date in a text: its ISO form, the other reading of an ambiguous numeric date
    (else None), and the text it was read from."""

    iso: str
    other: str | None
    text: str
    start: int = 0
    end: int = 0


def _parse(text: str, *, dayfirst: bool, yearfirst: bool = False) -> str | None:
    from dateutil import parser

    cleaned = re.sub(r"(?<=\d)(st|nd|rd|th)\b|\bof\b|,", " ", text, flags=re.IGNORECASE)
    try:
        return parser.parse(cleaned, dayfirst=dayfirst, yearfirst=yearfirst).date().isoformat()
    except (ValueError, OverflowError):
        return None


def find_dates(text: str, *, dayfirst: bool = False, limit: int | None = None) -> list[FoundDate]:
    """Every date in ``text``, in order (invalid ones, like 30 February, are left out); at
    most ``limit``."""
    out: list[FoundDate] = []
    for m in _DATE.finditer(text):
        s = m.group(0)
        if m["iso"]:
            iso = _parse(s.replace("/", "-"), dayfirst=False, yearfirst=True)
            other = None
        else:
            iso = _parse(s, dayfirst=dayfirst)
            other = None
            if m["num"]:
                a, b = (int(x) for x in re.split(r"[/.-]", s)[:2])
                if a <= 12 and b <= 12 and a != b:
                    other = _parse(s, dayfirst=not dayfirst)
        if iso is not None:
            out.append(FoundDate(iso, other, s, m.start(), m.end()))
            if limit is not None and len(out) >= limit:
                break
    return out


def date_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` writes something in a date's form (valid or not), without parsing it:
    the spans :func:`queryeval.metrics.freeform.claims.masked` hides."""
    return [m.span() for m in _DATE.finditer(text)]


def as_date(text: str, *, dayfirst: bool = False) -> FoundDate | None:
    """The date ``text`` is, when the whole text (trimmed, a final dot dropped) is one."""
    stripped = text.strip().rstrip(".").strip()
    found = find_dates(stripped, dayfirst=dayfirst)
    if len(found) == 1 and found[0].text == stripped:
        return found[0]
    return None
