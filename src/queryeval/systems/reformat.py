"""The reformat step (seed 001): an LLM rewrites a free-text answer into ``@name[value]`` form.

DABench notes that most models do not follow the format requirement, so before scoring it
asks GPT-3.5 to restate each response in the question's format. This module does that
against any OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint through the
client it shares with the LLM judge (:mod:`queryeval.engines.chat`):

* the conversation is the reference's: the question (user), the system's response
  (assistant), then a user turn with format examples and the question's format requirement;
* replies are cached on disk, one JSON file per key, the key being the sha256 of
  (model, messages, temperature); files are written atomically, so a rerun makes no calls;
* 429, 5xx and connection/timeout errors are retried with exponential backoff (a
  ``Retry-After`` header in seconds wins); other 4xx and malformed replies are not retried;
* a failure is returned on that case as an error dict (``{"kind", "message"}``, see
  :class:`~queryeval.errors.SystemCallError`), never raised, so one bad case does not stop
  a run; at most ``concurrency`` requests are in flight.

A missing or empty response is not sent: there is nothing to reformat, and it stays missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

from queryeval.engines.chat import ChatClient, ChatConfig, DiskCache, digest
from queryeval.io.closing import Closing

FORMAT_EXAMPLES = """\\Format{
@shapiro_wilk_statistic[test_statistic]
@shapiro_wilk_p_value[p_value]
where "test_statistic" is a number between 0 and 1 representing the Shapiro-Wilk test \
statistic. Rounding off the answer to two decimal places.
where "p_value" is a number between 0 and 1 representing the p-value from the Shapiro-Wilk \
test. Rounding off the answer to four decimal places.
}
\\Answer{
@shapiro_wilk_statistic[0.56]
@shapiro_wilk_p_value[0.0002]
}

\\Format{
@total_votes_outliers_num[outlier_num]
where "outlier_num" is an integer representing the number of values considered outliers in \
the 'total_votes' column.
}
\\Answer{
@total_votes_outliers_num[10]
}
"""

REFORMAT_TEMPLATE = (
    "You should strictly follow the output requirements in the Format part. "
    "Here are some examples:\n{examples}\n"
    'Your answer should contain all the "@answer_name[answer]" in the order mentioned, '
    'each "answer" should be in the range of value as required.\n'
    "The format requirements of this question is:\n{format}\nPlease give your answer:"
)


def build_messages(question: str, response: str, format: str) -> list[dict[str, str]]:
    """The chat the reformatter sees: question, the system's answer, the format request."""
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": response},
        {"role": "user",
         "content": REFORMAT_TEMPLATE.format(examples=FORMAT_EXAMPLES, format=format)},
    ]


def cache_key(model: str, messages: Sequence[dict[str, str]], temperature: float) -> str:
    """sha256 hex of the canonical JSON of (model, messages, temperature)."""
    return digest({"model": model, "messages": list(messages), "temperature": float(temperature)})


@dataclass(frozen=True)
class ReformatConfig:
    """Where and how to call the reformatter.

    ``api_key_env`` names the environment variable holding the key (``None``: send no
    ``Authorization`` header, e.g. for a local server). ``max_retries`` counts retries after
    the first attempt; the n-th retry waits ``min(backoff_max, backoff_base * 2**(n-1))``.
    """

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int | None = 2048
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    concurrency: int = 4
    cache_dir: Path | None = None

    def __post_init__(self) -> None:
        self.chat_config()  # the shared client's checks: concurrency, retries, base URL

    def chat_config(self) -> ChatConfig:
        return ChatConfig(base_url=self.base_url, api_key_env=self.api_key_env,
                          timeout_s=self.timeout_s, max_retries=self.max_retries,
                          backoff_base_s=self.backoff_base_s, backoff_max_s=self.backoff_max_s,
                          concurrency=self.concurrency, label="reformat")


@dataclass(frozen=True)
class ReformatItem:
    """One case to reformat."""

    id: str
    question: str
    format: str
    response: str | None


@dataclass
class ReformatResult:
    """The outcome for one case: ``text`` (reformatted) or ``error``, never both.

    ``text`` and ``error`` are both ``None`` when the response was missing (nothing sent).
    ``attempts`` counts HTTP requests made for this case (0 when cached or missing).
    """

    id: str
    text: str | None = None
    error: dict | None = None
    cached: bool = False
    attempts: int = 0
    key: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Reformatter(Closing):
    """Calls the reformat endpoint for many cases with a cache, retries and a concurrency cap.

    ``sleep`` is injectable so tests need not wait. Use as a context manager (or call
    :meth:`close`) to release the HTTP connection pool.
    """

    def __init__(
        self,
        config: ReformatConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = config
        self._chat = ChatClient(config.chat_config(), sleep=sleep, transport=transport)
        self._cache = DiskCache(config.cache_dir)

    def close(self) -> None:
        self._chat.close()

    def reformat(self, item: ReformatItem) -> ReformatResult:
        """Reformat one case; never raises for call failures (they land in ``error``)."""
        if item.response is None or item.response == "":
            return ReformatResult(id=item.id)
        c = self.config
        messages = build_messages(item.question, item.response, item.format)
        key = cache_key(c.model, messages, c.temperature)
        hit = self._cache.get(key)
        if hit is not None:
            return ReformatResult(id=item.id, text=hit, cached=True, key=key)
        body: dict = {"model": c.model, "messages": messages, "temperature": c.temperature}
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        reply = self._chat.call(body)
        if reply.error is not None:
            return ReformatResult(id=item.id, error=reply.error, attempts=reply.attempts, key=key)
        self._cache.put(key, {"model": c.model, "temperature": c.temperature,
                              "messages": messages, "content": reply.content})
        return ReformatResult(id=item.id, text=reply.content, attempts=reply.attempts, key=key)

    def reformat_many(self, items: Sequence[ReformatItem]) -> list[ReformatResult]:
        """Reformat every item (results in input order), ``concurrency`` at a time."""
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(items))) as pool:
            return list(pool.map(self.reformat, items))


def reformat_all(
    config: ReformatConfig, items: Sequence[ReformatItem], **kwargs: object
) -> list[ReformatResult]:
    """Convenience: open a :class:`Reformatter`, reformat ``items``, close it."""
    with Reformatter(config, **kwargs) as r:  # type: ignore[arg-type]
        return r.reformat_many(items)
