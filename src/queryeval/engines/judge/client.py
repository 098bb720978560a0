"""The LLM judge client: an OpenAI-compatible chat endpoint through the shared client
(:mod:`queryeval.engines.chat`: retries of 429/5xx/timeouts, concurrency cap), asked at
temperature 0 with ``response_format`` (a JSON schema) for ``{"verdict", "reason"}``.

* A reply that is not that JSON is asked again up to ``malformed_retries`` times, then
  returned as the error ``judge_malformed``; a call that fails after the shared client's
  retries is the error ``judge_call``. Neither is ever a pass.
* Valid replies are cached on disk, one file per key: sha256 of (model, prompt version,
  messages, temperature); a second run over the same items makes no calls. ``use_cache=False``
  (``judge-check --repeats``) asks again and stores nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from queryeval.engines.chat import ChatClient, ChatConfig, DiskCache, digest
from queryeval.engines.judge.prompt import PROMPT_VERSION, RESPONSE_FORMAT, messages, parse_verdict
from queryeval.engines.judge.types import JudgeItem, JudgeOptions, JudgeVerdict
from queryeval.io.caches import cache_dir
from queryeval.io.closing import Closing


def cache_root(options: JudgeOptions) -> Path:
    """``options.cache_dir``, else ``judge`` under :func:`queryeval.io.caches.cache_root`."""
    return Path(options.cache_dir).expanduser() if options.cache_dir \
        else cache_dir("judge")


def judge_key(model: str, msgs: Sequence[dict], temperature: float) -> str:
    return digest({"model": model, "prompt_version": PROMPT_VERSION, "messages": list(msgs),
                   "temperature": float(temperature)})


class LLMJudge(Closing):
    """:class:`~queryeval.engines.judge.Judge` over a chat endpoint; thread-safe (the runner
    scores cases on several threads). ``calls`` counts HTTP requests made."""

    def __init__(self, options: JudgeOptions, *, sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.options = options
        self._chat = ChatClient(ChatConfig(
            base_url=options.base_url, api_key_env=options.api_key_env,
            timeout_s=options.timeout_s, max_retries=options.max_retries,
            concurrency=options.concurrency, label="judge"), sleep=sleep, transport=transport)
        self._cache = DiskCache(cache_root(options))
        self.calls = 0
        self._count = threading.Lock()

    def close(self) -> None:
        self._chat.close()

    def _verdict(self, verdict: str | None, reason: str = "", error: dict | None = None,
                 cached: bool = False) -> JudgeVerdict:
        return JudgeVerdict(verdict=verdict, reason=reason, error=error,  # type: ignore[arg-type]
                            model=self.options.model, prompt_version=PROMPT_VERSION,
                            cached=cached)

    def judge(self, item: JudgeItem, *, use_cache: bool = True) -> JudgeVerdict:
        """The verdict for ``item``; never raises for a failed call or a bad reply."""
        o = self.options
        msgs = messages(item.kind, item.question, item.reference, item.response, item.context)
        key = judge_key(o.model, msgs, o.temperature)
        if use_cache:
            hit = self._cache.get(key)
            if hit is not None:
                try:
                    verdict, reason = parse_verdict(hit)
                    return self._verdict(verdict, reason, cached=True)
                except ValueError:
                    pass  # a bad cached reply is a miss (never stored by us)
        body: dict = {"model": o.model, "messages": msgs, "temperature": o.temperature}
        if o.response_format == "json_schema":
            body["response_format"] = RESPONSE_FORMAT
        elif o.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        why = ""
        for _ in range(o.malformed_retries + 1):
            reply = self._chat.call(body)
            with self._count:
                self.calls += reply.attempts
            if reply.error is not None:
                if reply.error["kind"] != "malformed":
                    return self._verdict(None, error={
                        "kind": "judge_call",
                        "message": f"{reply.error['kind']}: {reply.error['message']}"})
                why = reply.error["message"]
                continue
            try:
                verdict, reason = parse_verdict(reply.content or "")
            except ValueError as exc:
                why = str(exc)
                continue
            if use_cache:
                self._cache.put(key, {"model": o.model, "prompt_version": PROMPT_VERSION,
                                      "temperature": o.temperature, "messages": msgs,
                                      "content": reply.content})
            return self._verdict(verdict, reason)
        return self._verdict(None, error={
            "kind": "judge_malformed",
            "message": f"no verdict after {o.malformed_retries + 1} replies: {why}"})

    def judge_many(self, items: Sequence[JudgeItem], *, use_cache: bool = True
                   ) -> list[JudgeVerdict]:
        """Every item's verdict, in input order, ``concurrency`` at a time."""
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=min(self.options.concurrency, len(items))) as pool:
            return list(pool.map(lambda it: self.judge(it, use_cache=use_cache), items))
