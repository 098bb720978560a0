"""Recorded free-text responses: one reader shared by the tasks that score a text answer.

The freeform and answers tasks both take a system's output as ``{"response": "..."}`` or the
text itself, and a recorded-responses line as ``{"id" or "case_id", "response", "turn"?}``.
The checks and their error lines live here once, so both tasks refuse bad input alike.
"""

from __future__ import annotations

from typing import Any


def parse_response(raw: Any) -> str | None:
    """``{"response": "..."}`` or the text itself; ``null`` is a missing answer."""
    if isinstance(raw, dict):
        if "response" not in raw:
            raise ValueError("output has no 'response' key")
        raw = raw["response"]
    if raw is None or isinstance(raw, str):
        return raw
    raise ValueError(f"response must be text, got {type(raw).__name__}")


def read_response_line(obj: dict) -> tuple[str, int | None, Any]:
    """``{"id" or "case_id", "response", "turn"?}`` -> (case id, turn, response)."""
    key = "id" if "id" in obj else "case_id"
    if key not in obj:
        raise ValueError("id: field required")
    cid = obj[key]
    if isinstance(cid, bool) or not isinstance(cid, (int, str)):
        raise ValueError(f"{key}: must be an integer or a string")
    if "response" not in obj:
        raise ValueError("response: field required")
    response = obj["response"]
    if response is not None and not isinstance(response, str):
        raise ValueError("response: must be a string or null")
    return str(cid), obj.get("turn"), response
