"""One client for OpenAI-compatible chat endpoints (``POST {base_url}/chat/completions``),
shared by the reformat step (:mod:`queryeval.systems.reformat`) and the LLM judge
(:mod:`queryeval.engines.judge`):

* replies are cached on disk, one JSON file per key under a folder (:class:`DiskCache`);
  files are written atomically and an unreadable file is a miss
  (:class:`queryeval.io.caches.CacheFiles`);
* 429, 5xx and connection/timeout errors are retried with exponential backoff (a
  ``Retry-After`` header in seconds wins); other 4xx and replies that are not a chat
  completion are not retried here (the judge retries those itself, as malformed);
* every attempt has a total deadline of ``timeout_s`` (connect, send, headers and the whole
  body: the HTTP system's deadline machinery, :mod:`queryeval.systems.http`, so an endpoint
  that trickles bytes forever is a ``timeout``) and a body cap of :data:`MAX_REPLY_BYTES` (a
  bigger reply is ``malformed``, refused on its ``Content-Length`` before reading, never held
  in memory); a ``Retry-After`` wait is capped at ``backoff_max_s``;
* a failure is returned as an error dict (``{"kind", "message"}``, see
  :class:`~queryeval.errors.SystemCallError`), never raised; at most ``concurrency``
  requests are in flight (the HTTP connection pool's limit).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from queryeval.errors import ConfigError, SystemCallError
from queryeval.io.caches import CacheFiles, canonical_json
from queryeval.io.closing import Closing
from queryeval.io.http_deadline import arm_deadlines, call_deadline, read_limited

MAX_REPLY_BYTES = 8 * 1024 * 1024
"""The largest chat reply read (a verdict or a reformatted answer is a few kilobytes)."""


def digest(payload: Any) -> str:
    """sha256 hex of the canonical JSON of ``payload`` (a cache key)."""
    return hashlib.sha256(canonical_json(payload)).hexdigest()


@dataclass(frozen=True)
class ChatConfig:
    """Where and how to call the endpoint.

    ``api_key_env`` names the environment variable holding the key (``None``: send no
    ``Authorization`` header, e.g. for a local server). ``max_retries`` counts retries after
    the first attempt; the n-th retry waits ``min(backoff_max_s, backoff_base_s * 2**(n-1))``.
    ``label`` names the caller in error lines (``reformat``, ``judge``).
    """

    base_url: str
    api_key_env: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    concurrency: int = 4
    label: str = "chat"

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"{self.label} concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise ConfigError(f"{self.label} max_retries must be >= 0, got {self.max_retries}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{self.label} base URL must start with http:// or https://: "
                              f"{self.base_url!r}")


class DiskCache:
    """One JSON file per key under ``root`` (``None``: no cache), through
    :class:`queryeval.io.caches.CacheFiles`; the record's ``content`` is the cached reply
    text."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._files = CacheFiles(root) if root is not None else None
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> str | None:
        doc = self._files.read(key) if self._files is not None else None
        content = doc.get("content") if doc is not None else None
        return content if isinstance(content, str) else None  # else a miss

    def put(self, key: str, record: dict) -> None:
        if self._files is not None:
            self._files.write(key, json.dumps(record, ensure_ascii=False, indent=1))


def parse_retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (an HTTP date: None, our own backoff applies)."""
    if value is None:
        return None
    try:
        secs = float(value)
    except ValueError:
        return None
    return max(0.0, secs) if secs == secs else None


@dataclass
class ChatReply:
    """One call's outcome: ``content`` or ``error`` (never both); ``attempts`` counts HTTP
    requests made (retries included)."""

    content: str | None = None
    error: dict | None = None
    attempts: int = 0


class ChatClient(Closing):
    """Posts chat completions with retries and a concurrency cap. ``sleep`` and
    ``transport`` are injectable (tests). Close it (or use it as a context manager)."""

    def __init__(self, config: ChatConfig, *, sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key_env:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise ConfigError(f"environment variable {config.api_key_env} (the "
                                  f"{config.label} API key) is not set")
            headers["Authorization"] = f"Bearer {key}"
        self._sleep = sleep
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._client = httpx.Client(
            headers=headers, timeout=config.timeout_s, transport=transport,
            limits=httpx.Limits(max_connections=config.concurrency),
        )
        arm_deadlines(self._client)  # every socket operation gets what is left of the deadline

    def close(self) -> None:
        self._client.close()

    def post_once(self, body: dict) -> str:
        """One HTTP attempt; raises SystemCallError (``retryable`` set) on failure."""
        timeout = self.config.timeout_s
        call_deadline.end = time.monotonic() + timeout
        try:
            with self._client.stream("POST", self._url, json=body) as resp:
                raw = read_limited(resp, MAX_REPLY_BYTES, call_deadline.end)
        except httpx.TimeoutException as e:
            raise SystemCallError("timeout", f"{type(e).__name__}: no complete reply within "
                                  f"{timeout:g}s", retryable=True) from None
        except httpx.TransportError as e:
            raise SystemCallError("connection", f"{type(e).__name__}: {e}",
                                  retryable=True) from None
        finally:
            call_deadline.end = None
        if raw is None:
            raise SystemCallError("malformed", f"reply over {MAX_REPLY_BYTES} bytes (not read)")
        text = raw.decode("utf-8", "replace")
        if resp.status_code != 200:
            retryable = resp.status_code == 429 or resp.status_code >= 500
            raise SystemCallError(
                "http_status", f"HTTP {resp.status_code}: {text[:300]}",
                retryable=retryable,
                retry_after=parse_retry_after(resp.headers.get("Retry-After")),
            )
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise SystemCallError(
                "malformed", f"reply is not a chat completion: {text[:300]}"
            ) from None
        if not isinstance(content, str):
            raise SystemCallError("malformed", "reply content is not a string")
        return content

    def backoff(self, retry: int, hint: float | None) -> float:
        c = self.config
        if hint is not None:
            return min(hint, c.backoff_max_s)  # Retry-After: 1e9 (or inf) must not hang us
        return min(c.backoff_max_s, c.backoff_base_s * 2 ** (retry - 1))

    def call(self, body: dict) -> ChatReply:
        """Post ``body``, retrying transient failures; never raises for call failures."""
        attempts = 0
        while True:
            attempts += 1
            try:
                content = self.post_once(body)
            except SystemCallError as err:
                if err.retryable and attempts <= self.config.max_retries:
                    self._sleep(self.backoff(attempts, err.retry_after))
                    continue
                return ChatReply(error=err.to_dict(), attempts=attempts)
            return ChatReply(content=content, attempts=attempts)
