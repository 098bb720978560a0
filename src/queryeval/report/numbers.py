"""How numbers are written on every report surface (console, HTML, notebook): one place.

* A *figure* (a metric, a mean, a count) is shown with :data:`DIGITS` decimals: ``0.8333``;
  a count stays whole (``23``); ``None`` is ``—``. Stored values are never rounded.
* A *value* from the data (a result row's cell, an expected or extracted answer) is shown
  as it was meant: a float with :data:`VALUE_DIGITS` significant digits, so a sum a
  database returns one binary step above 12.78 reads ``12.78``, not ``12.780000000000001``
  (``repr``'s 17 digits), and ``1.1 * 3`` reads ``3.3``; every float written with up to 15
  digits reads back exactly as written.
"""

from __future__ import annotations

import math

DIGITS = 4
VALUE_DIGITS = 15


def figure(value: object, digits: int = DIGITS) -> str:
    """A figure for display (display only: no stored value is rounded)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else str(value)
    return str(value)


def value_text(value: object) -> str:
    """A value from the data as text: floats to :data:`VALUE_DIGITS` significant digits
    (``12.78``), an engine value in the run log's typed form as its own text
    (:func:`queryeval.io.typedjson.display`), everything else as ``str``."""
    if isinstance(value, dict):
        from queryeval.io.typedjson import display

        return display(value)
    if isinstance(value, float) and math.isfinite(value):
        text = f"{value:.{VALUE_DIGITS}g}"
        return text if ("e" in text or "." in text or "inf" in text) else text + ".0"
    return str(value)
