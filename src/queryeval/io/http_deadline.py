"""A total deadline for one HTTP call, applied to every socket operation.

httpx's timeouts are per operation (a server that sends one byte a second never trips a 1 s
read timeout), so every socket operation is given what is left of the call's deadline
instead (:class:`DeadlineBackend`, wrapped around httpcore's network backend), and a body is
checked against the deadline between chunks (:func:`read_limited`). Used by the HTTP system
under test (:mod:`queryeval.systems.http`) and the chat client the judge and the reformat step
use (:mod:`queryeval.engines.chat`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpcore
import httpx

call_deadline = threading.local()
"""The current call's deadline (``time.monotonic()`` seconds) on this thread, or absent."""


def _remaining(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to what is left of this thread's call deadline; ``error`` if none is."""
    end = getattr(call_deadline, "end", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the call's total deadline has passed")
    return left if timeout is None else min(timeout, left)


class DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write gets at most what is left of the deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _remaining(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _remaining(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        # CPython bounds the whole handshake by the timeout it is given (one deadline across
        # its reads), so what is left of the call's deadline is enough here.
        return DeadlineStream(self._stream.start_tls(
            ssl_context, server_hostname, _remaining(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with the call deadline applied to connect and to every
    stream operation (DNS lookup and TCP connect are one operation with one timeout)."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None, socket_options: Any = None,
                    ) -> httpcore.NetworkStream:
        return DeadlineStream(self._backend.connect_tcp(
            host, port, _remaining(timeout, httpcore.ConnectTimeout), local_address,
            socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return DeadlineStream(self._backend.connect_unix_socket(
            path, _remaining(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def arm_deadlines(client: httpx.Client) -> int:
    """Wrap the network backend of each of the client's transports (the default one and any
    proxy mounts from the environment) in :class:`DeadlineBackend`; returns how many.

    httpx offers no hook for this: the pools are reached through ``_transport``, ``_mounts``
    and httpcore's ``_network_backend``. A test checks that at least the default transport
    is armed, so an httpx upgrade that moves them fails loudly; without arming, the deadline
    is still checked between body chunks."""
    transports = [getattr(client, "_transport", None),
                  *getattr(client, "_mounts", {}).values()]
    armed = 0
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None or isinstance(backend, DeadlineBackend):
            continue
        pool._network_backend = DeadlineBackend(backend)  # type: ignore[union-attr]
        armed += 1
    return armed


def read_limited(resp: httpx.Response, limit: int, end: float | None) -> bytes | None:
    """The body, or ``None`` as soon as it is known to exceed ``limit`` bytes; a
    ``ReadTimeout`` once ``end`` (``time.monotonic()``) passes between chunks."""
    declared = resp.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_bytes():
        if end is not None and time.monotonic() > end:
            raise httpx.ReadTimeout("the call's total deadline has passed")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
