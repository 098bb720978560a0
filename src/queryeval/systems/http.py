"""An HTTP endpoint as the system under test: POST the request as JSON, read JSON back.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retryable; a
``Retry-After`` header (seconds) is passed to the runner's backoff. Other 4xx and bodies that
are not JSON are recorded without retry. ``transport`` is httpx's extension point: tests can
pass ``httpx.MockTransport``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from queryeval.errors import SystemCallError

MAX_RESPONSE_BYTES = 64 * 1024 * 1024


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to the runner's own backoff


class HttpSystem:
    def __init__(self, url: str, *, headers: dict[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url
        self.name = url
        self._client = httpx.Client(headers=headers, transport=transport, follow_redirects=False)

    def call(self, request: dict, timeout: float | None) -> Any:
        try:
            resp = self._client.post(self.url, json=request, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise SystemCallError("timeout", f"{type(exc).__name__} after {timeout}s", retryable=True) from None
        except httpx.TransportError as exc:
            raise SystemCallError("connection", f"{type(exc).__name__}: {exc}", retryable=True) from None
        status = resp.status_code
        if status == 429 or status >= 500:
            raise SystemCallError(
                "http_status", f"HTTP {status}: {resp.text[:200]}", retryable=True,
                retry_after=_retry_after(resp.headers.get("retry-after")),
            )
        if status >= 400:
            raise SystemCallError("http_status", f"HTTP {status}: {resp.text[:200]}")
        if len(resp.content) > MAX_RESPONSE_BYTES:
            raise SystemCallError("malformed", f"response larger than {MAX_RESPONSE_BYTES} bytes")
        try:
            return json.loads(resp.content)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SystemCallError("malformed", f"response is not JSON: {exc}") from None

    def close(self) -> None:
        self._client.close()
