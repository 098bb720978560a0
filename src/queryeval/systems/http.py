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

The timeout is a *total* deadline for the call: connect, sending the request, the status line
and headers, and the whole body. httpx's own timeouts are per operation (a server that sends
one byte a second never trips a 1 s read timeout), so every socket operation is given what is
left of the call's deadline instead (:class:`~queryeval.io.http_deadline.DeadlineBackend`, wrapped around httpcore's
network backend), and the body is checked against the deadline between chunks as well. A call
past its deadline is a retryable ``timeout``.

Inside a run (:func:`queryeval.run.runner.run_cases`), calls to a plain ``http://`` or
``https://`` endpoint without a proxy go through :meth:`HttpSystem.acall` instead: one
asyncio event loop, HTTP/1.1 parsed by ``h11`` (httpx's own parser) over keep-alive
connections kept per loop, the total deadline enforced by cancelling the call. It has the
same outcomes as the threaded path (the status rules, the body limit, JSON checks,
``connection``/``timeout`` errors; an idle connection the server closed is not reused, and a
request is never sent twice except by the runner's retry policy).
httpx's async pool is not used: measured at concurrency 64, its per-request scan of every
connection made it slower than the threads (52 against 309 calls/s on the 2-core box).

Credentials never go in the URL (it is the system's name, written to the run log, the
reports and the call cache's key): a URL with a password (``user:secret@``, ``?password=``) is
refused. The environment variable :data:`AUTH_ENV`, when set, is sent as the
``Authorization`` header of every call (``Bearer TOKEN``, ``Basic <base64 of user:pw>``), read
when the system is built, so a resumed run sends it too and no file holds it.

Redirects (3xx) are not followed: the request is a POST of the case, and following a redirect
silently would evaluate another endpoint. A 3xx is recorded as ``http_status`` naming the
status and its ``Location``, without retry.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from typing import Any

import h11
import httpx

from queryeval.errors import ConfigError, SystemCallError
from queryeval.io.http_deadline import arm_deadlines, call_deadline, read_limited
from queryeval.systems.base import MAX_RESPONSE_BYTES, parse_json

POOL_CONNECTIONS = 256
"""Connections kept alive for reuse (httpx's default of 20 would close and reopen
connections on every call once more than 20 cases are in flight)."""
AUTH_ENV = "QUERYEVAL_HTTP_AUTHORIZATION"
"""The environment variable whose value is sent as the ``Authorization`` header."""


def _headers(url: str, headers: dict[str, str] | None) -> dict[str, str] | None:
    """The headers of every call: ``headers``, plus :data:`AUTH_ENV` as ``Authorization``
    unless they give one. Refuses a URL carrying a password (ConfigError)."""
    import os
    from urllib.parse import urlsplit

    from queryeval.io.urls import has_password

    if has_password(url):
        raise ConfigError("--system: a password in the system's URL would be written to the run "
                          "log, the reports and the call cache; leave it out and put the "
                          f"credentials in the environment variable {AUTH_ENV}, sent as the "
                          "Authorization header (e.g. 'Bearer TOKEN' or 'Basic <base64 of "
                          "user:password>')")
    auth = os.environ.get(AUTH_ENV)
    if not auth or any(k.lower() == "authorization" for k in (headers or {})):
        return headers
    # Checked here, never printed: httpx's own refusal quotes the value into every failed
    # case of the run log; and a user in the URL makes httpx send Basic auth in its place.
    if any(ord(c) < 32 and c != "\t" or ord(c) == 127 for c in auth) \
            or not auth.isascii():
        raise ConfigError(f"{AUTH_ENV}: not a value an HTTP header can carry (a line break, "
                          "a control or non-ASCII character); its value is not shown")
    try:
        netloc = urlsplit(url).netloc
    except ValueError:  # a malformed URL: httpx says so on the first call
        netloc = ""
    if "@" in netloc:
        raise ConfigError(f"--system: a user name in the URL would replace {AUTH_ENV} (sent "
                          "as Basic auth in its place); leave it out of the URL")
    return {**(headers or {}), "Authorization": auth}


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to the runner's own backoff


class HttpSystem:
    def __init__(self, url: str, *, headers: dict[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None,
                 max_response_bytes: int | None = None) -> None:
        headers = _headers(url, headers)
        self.url = url
        self.name = url
        self.max_response_bytes = MAX_RESPONSE_BYTES if max_response_bytes is None else max_response_bytes
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=POOL_CONNECTIONS)
        self._client = httpx.Client(headers=headers, transport=transport, follow_redirects=False,
                                    limits=limits)
        self.armed = arm_deadlines(self._client)
        """How many transports enforce the total deadline per socket operation."""
        self._pool = _async_pool(url, headers, self._client, transport)

    def call(self, request: dict, timeout: float | None) -> Any:
        limit = self.max_response_bytes
        end = None if timeout is None else time.monotonic() + timeout
        call_deadline.end = end
        try:
            with self._client.stream("POST", self.url, json=request, timeout=timeout) as resp:
                status = resp.status_code
                body = read_limited(resp, limit, end)
        except httpx.TimeoutException as exc:
            limit_text = "its deadline" if timeout is None else f"{timeout:g}s"
            raise SystemCallError("timeout", f"{type(exc).__name__}: no complete answer within "
                                  f"{limit_text}", retryable=True) from None
        except httpx.TransportError as exc:
            raise SystemCallError("connection", f"{type(exc).__name__}: {exc}", retryable=True) from None
        finally:
            call_deadline.end = None
        return _verdict(status, resp.headers, body, limit)

    # --- the asyncio path (see the module docstring) -----------------------------------------
    @property
    def async_ready(self) -> bool:
        """Whether :meth:`acall` serves this system (a plain endpoint: no test transport, no
        proxy from the environment)."""
        return self._pool is not None

    async def acall(self, request: dict, timeout: float | None) -> Any:
        """:meth:`call` on the running event loop (only when :attr:`async_ready`)."""
        assert self._pool is not None
        limit = self.max_response_bytes
        body = json.dumps(request, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
        try:
            if timeout is None:
                status, headers, data = await self._pool.post(body, limit)
            else:
                status, headers, data = await asyncio.wait_for(
                    self._pool.post(body, limit), timeout)
        except asyncio.TimeoutError:
            limit_text = "its deadline" if timeout is None else f"{timeout:g}s"
            raise SystemCallError("timeout", f"TimeoutError: no complete answer within "
                                  f"{limit_text}", retryable=True) from None
        except (OSError, EOFError, h11.ProtocolError, zlib.error) as exc:
            raise SystemCallError("connection", f"{type(exc).__name__}: {exc}",
                                  retryable=True) from None
        return _verdict(status, headers, data, limit)

    async def aclose(self) -> None:
        """Close the keep-alive connections of the running loop (before that loop ends)."""
        if self._pool is not None:
            self._pool.close_idle()

    def close(self) -> None:
        self._client.close()


def _verdict(status: int, headers: Any, body: bytes | None, limit: int) -> Any:
    """The output of an answer (``headers``: any mapping with ``get``), or the
    :class:`SystemCallError` it is: the same rules on both paths."""
    text = "(body too large)" if body is None else body[:200].decode("utf-8", "replace")
    if 300 <= status < 400:
        location = headers.get("location")
        if location:
            raise SystemCallError("http_status", f"HTTP {status} redirect to "
                                  f"{location[:200]!r}: redirects are not followed; give "
                                  "the final URL as the system")
        raise SystemCallError("http_status", f"HTTP {status} (3xx, not followed): {text}")
    if status == 429 or status >= 500:
        raise SystemCallError(
            "http_status", f"HTTP {status}: {text}", retryable=True,
            retry_after=_retry_after(headers.get("retry-after")),
        )
    if status >= 400:
        raise SystemCallError("http_status", f"HTTP {status}: {text}")
    if body is None:
        raise SystemCallError("malformed", f"response larger than {limit} bytes")
    try:
        return parse_json(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SystemCallError("malformed", f"response is not JSON: {exc}") from None
    except RecursionError:
        raise SystemCallError("malformed", "response is not JSON: nested too deeply") from None


class _Headers(dict):
    """An answer's headers (names lower-cased; a repeated header keeps its last value)."""


class _Conn:
    __slots__ = ("reader", "writer", "h11")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    def close(self) -> None:
        self.writer.close()


class _AsyncPool:
    """Keep-alive HTTP/1.1 connections to one origin, for the event loop using them (a new
    loop starts a new set: a connection belongs to the loop that opened it)."""

    def __init__(self, url: httpx.URL, headers: dict[str, str] | None) -> None:
        self.host = url.host
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.target = url.raw_path or b"/"
        self.ssl = httpx.create_ssl_context() if url.scheme == "https" else None
        host = url.host if ":" not in url.host else f"[{url.host}]"
        authority = host if url.port is None else f"{host}:{url.port}"
        base = {"host": authority, "accept": "*/*", "accept-encoding": "gzip, deflate",
                "connection": "keep-alive", "user-agent": f"python-httpx/{httpx.__version__}"}
        base.update({k.lower(): v for k, v in (headers or {}).items()})
        base["content-type"] = "application/json"
        self.headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in base.items()
                        if k != "content-length"]
        self._idle: list[_Conn] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def _take(self) -> _Conn | None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # another run's loop: its connections are not ours to use
            self._idle, self._loop = [], loop
        while self._idle:
            conn = self._idle.pop()
            if conn.reader.at_eof() or conn.writer.is_closing():
                conn.close()
                continue
            return conn
        return None

    async def _open(self) -> _Conn:
        reader, writer = await asyncio.open_connection(
            self.host, self.port, ssl=self.ssl, limit=1 << 20,
            server_hostname=self.host if self.ssl is not None else None)
        return _Conn(reader, writer)

    async def post(self, body: bytes, limit: int) -> tuple[int, _Headers, bytes | None]:
        head = h11.Request(method="POST", target=self.target,
                           headers=[*self.headers, (b"content-length", str(len(body)).encode())])
        conn = self._take() or await self._open()
        return await self._exchange(conn, head, body, limit)

    async def _exchange(self, conn: _Conn, head: h11.Request, body: bytes,
                        limit: int) -> tuple[int, _Headers, bytes | None]:
        h = conn.h11
        try:
            conn.writer.write(h.send(head) + h.send(h11.Data(data=body))
                              + h.send(h11.EndOfMessage()))  # one write: one send(2)
            await conn.writer.drain()
            status, headers = 0, _Headers()
            chunks: list[bytes] = []
            size = 0
            while True:
                event = h.next_event()
                if event is h11.NEED_DATA:
                    data = await conn.reader.read(65536)
                    h.receive_data(data)  # b"": the peer closed (h11 says if that is early)
                    continue
                if isinstance(event, h11.Response):
                    status = event.status_code
                    headers = _Headers((k.decode("latin-1"), v.decode("latin-1"))
                                       for k, v in event.headers)
                    declared = headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > limit:
                        conn.close()
                        return status, headers, None
                elif isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > limit:
                        conn.close()
                        return status, headers, None
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    raise ConnectionError("the server closed the connection mid-answer")
            # InformationalResponse (100 Continue) and the rest: read on
        except BaseException:
            conn.close()  # cancelled (the deadline) or broken: its state is unknown
            raise
        if h.our_state is h11.DONE and h.their_state is h11.DONE:
            h.start_next_cycle()
            self._idle.append(conn)
        else:
            conn.close()
        data = b"".join(chunks)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "deflate", "x-gzip"):
            inflate = zlib.decompressobj(47 if encoding != "deflate" else zlib.MAX_WBITS)
            data = inflate.decompress(data, limit + 1)
            if len(data) > limit:
                return status, headers, None
        return status, headers, data

    def close_idle(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _async_pool(url: str, headers: dict[str, str] | None, client: httpx.Client,
                transport: Any) -> _AsyncPool | None:
    """The asyncio pool for ``url``, or None where only httpx applies: a test transport, a
    proxy from the environment, another scheme."""
    if transport is not None or any(t is not None for t in getattr(client, "_mounts", {}).values()):
        return None
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host or parsed.userinfo:
        return None
    return _AsyncPool(parsed, headers)

