"""An HTTP endpoint as the system under test: POST the request as JSON, read JSON back.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retryable; a
``Retry-After`` header (seconds) is passed to the runner's backoff. Other 4xx and bodies that
are not JSON are recorded without retry. ``transport`` is httpx's extension point: tests can
pass ``httpx.MockTransport``.

The body is streamed and reading stops at ``max_response_bytes`` (default
:data:`MAX_RESPONSE_BYTES`; a ``Content-Length`` above it is refused before reading), so a
runaway answer is recorded as ``malformed`` without being held in memory. A connection closed
mid-body is a retryable ``connection`` error. The connection pool keeps up to
:data:`POOL_CONNECTIONS` connections alive, so ``--concurrency`` up to that many reuses its
connections instead of opening one per call.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from queryeval.errors import SystemCallError

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""Largest answer body read, in bytes (per system: ``HttpSystem(max_response_bytes=...)``)."""
POOL_CONNECTIONS = 256
"""Connections kept alive for reuse (httpx's default of 20 would close and reopen
connections on every call once more than 20 cases are in flight)."""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to the runner's own backoff


def _read_limited(resp: httpx.Response, limit: int) -> bytes | None:
    """The body, or ``None`` as soon as it is known to exceed ``limit`` bytes."""
    declared = resp.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class HttpSystem:
    def __init__(self, url: str, *, headers: dict[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None,
                 max_response_bytes: int | None = None) -> None:
        self.url = url
        self.name = url
        self.max_response_bytes = MAX_RESPONSE_BYTES if max_response_bytes is None else max_response_bytes
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=POOL_CONNECTIONS)
        self._client = httpx.Client(headers=headers, transport=transport, follow_redirects=False,
                                    limits=limits)

    def call(self, request: dict, timeout: float | None) -> Any:
        limit = self.max_response_bytes
        try:
            with self._client.stream("POST", self.url, json=request, timeout=timeout) as resp:
                status = resp.status_code
                body = _read_limited(resp, limit)
        except httpx.TimeoutException as exc:
            raise SystemCallError("timeout", f"{type(exc).__name__} after {timeout}s", retryable=True) from None
        except httpx.TransportError as exc:
            raise SystemCallError("connection", f"{type(exc).__name__}: {exc}", retryable=True) from None
        text = "(body too large)" if body is None else body[:200].decode("utf-8", "replace")
        if status == 429 or status >= 500:
            raise SystemCallError(
                "http_status", f"HTTP {status}: {text}", retryable=True,
                retry_after=_retry_after(resp.headers.get("retry-after")),
            )
        if status >= 400:
            raise SystemCallError("http_status", f"HTTP {status}: {text}")
        if body is None:
            raise SystemCallError("malformed", f"response larger than {limit} bytes")
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SystemCallError("malformed", f"response is not JSON: {exc}") from None

    def close(self) -> None:
        self._client.close()
