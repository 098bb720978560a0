"""The judge's data types (re-exported by :mod:`queryeval.engines.judge`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator


class JudgeOptions(BaseModel):
    """Where and when to ask the judge (task option ``judge``; CLI ``--judge-*``)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    base_url: str = Field(min_length=1)
    api_key_env: str | None = None
    """Environment variable holding the API key; ``None`` sends no key (local servers)."""
    when: Literal["inconclusive", "always", "never"] = "inconclusive"
    """inconclusive: only cases no deterministic rule decides; always: every case (the
    rules' verdict is kept beside the judge's); never: no calls (inconclusive stays failed)."""
    temperature: float = 0.0
    max_retries: int = Field(default=4, ge=0)
    """Retries of a failed call (429, 5xx, connection, timeout)."""
    malformed_retries: int = Field(default=2, ge=0)
    """Retries of a reply that is not the verdict JSON, before ``judge_malformed``."""
    response_format: Literal["json_schema", "json_object", "none"] = "json_schema"
    """What the request asks of the reply's form: the verdict's JSON schema (default),
    any JSON object (servers without schema support), or nothing (the prompt alone)."""
    concurrency: int = Field(default=4, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    cache_dir: str | None = None
    """Replies cached on disk (default: ``judge`` under :func:`queryeval.io.caches.cache_root`)."""
    checks_dir: str | None = None
    """Where ``judge-check`` records its agreement figures, read back for a run's report
    (default: ``judge-checks`` under :func:`queryeval.io.caches.cache_root`)."""

    @field_validator("base_url")
    @classmethod
    def _no_password(cls, value: str) -> str:
        """The endpoint is written to the run log, the reports and the recorded checks: a
        password in it is refused (the key goes in an environment variable)."""
        from queryeval.io.urls import has_password

        if has_password(value):
            raise ValueError("a password in the judge's URL would be written to the run log, "
                             "the reports and the recorded checks; leave it out and put the "
                             "key in an environment variable named by --judge-api-key-env "
                             "(api_key_env)")
        return value


@dataclass(frozen=True)
class JudgeItem:
    """One question for the judge."""

    case_id: str
    question: str
    reference: str
    """The reference answer (for a query: the gold query and its result, as text)."""
    response: str
    kind: Literal["answer", "query"] = "answer"
    context: str = ""
    """Further evidence shown to the judge (e.g. both result tables)."""


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's answer for one item. ``verdict`` is None when it could not decide."""

    verdict: Literal["pass", "fail"] | None
    reason: str = ""
    error: dict | None = None
    """``{"kind": "judge_malformed" | "judge_call", "message": ...}`` when no verdict came."""
    model: str = ""
    prompt_version: str = ""
    cached: bool = False

    @property
    def passed(self) -> bool:
        return self.verdict == "pass" and self.error is None


class Judge(Protocol):
    def judge(self, item: JudgeItem) -> JudgeVerdict: ...

    def close(self) -> None: ...
