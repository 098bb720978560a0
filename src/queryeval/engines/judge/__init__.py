"""The LLM judge: what no deterministic rule decides is sent to an OpenAI-compatible chat
endpoint, asked for ``{"verdict": "pass" | "fail", "reason": "..."}``.

This module is the seam between the tasks that ask (``freeform``, ``answers``, ``query``) and
the client that answers (:func:`make_judge`): tasks build a :class:`JudgeItem`, get a
:class:`JudgeVerdict`, and record it on the case; a verdict with an ``error`` never passes.
"""

from __future__ import annotations

from queryeval.engines.judge.types import Judge, JudgeItem, JudgeOptions, JudgeVerdict

__all__ = ["Judge", "JudgeItem", "JudgeOptions", "JudgeVerdict", "check_key", "judge_info",
           "make_judge", "recorded_agreement"]


def check_key(api_key_env: str | None) -> None:
    """Refuse, before a run starts, a key variable that is not set (one ConfigError line)."""
    import os

    from queryeval.errors import ConfigError

    if api_key_env and not os.environ.get(api_key_env):
        raise ConfigError(f"environment variable {api_key_env} (the judge API key) is not set")


def make_judge(options: JudgeOptions) -> Judge:
    """The judge for ``options``: the OpenAI-compatible client
    (:class:`~queryeval.engines.judge.client.LLMJudge`). Raises ConfigError for a bad base URL
    or an unset API key variable."""
    from queryeval.engines.judge.client import LLMJudge

    return LLMJudge(options)


def judge_info(options: JudgeOptions) -> dict:
    """What a run log records about its judge: model, endpoint, ``when``, the prompt's
    version and text (``prompt``: the answers prompt; ``prompts``: both, by kind). A task
    puts it in its ``batch_info``, with :func:`recorded_agreement`."""
    from queryeval.engines.judge.prompt import PROMPT_VERSION, PROMPTS

    return {"model": options.model, "base_url": options.base_url, "when": options.when,
            "prompt_version": PROMPT_VERSION, "prompt": PROMPTS["answer"],
            "prompts": dict(PROMPTS)}


def recorded_agreement(options: JudgeOptions) -> dict | None:
    """The agreement measured by ``queryeval judge-check`` for this model and prompt version
    (kappa, TPR, TNR, accuracy with CIs, n), or None when no check was recorded."""
    from queryeval.engines.judge.checks import load_check
    from queryeval.engines.judge.prompt import PROMPT_VERSION

    found = load_check(options.model, PROMPT_VERSION, options.checks_dir)
    if found is None:
        return None
    keep = ("model", "prompt_version", "when", "labels", "n", "errors", "kappa", "tpr",
            "tnr", "accuracy", "confusion", "self_consistency", "path")
    return {k: found[k] for k in keep if k in found}
