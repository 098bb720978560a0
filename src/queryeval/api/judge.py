"""``qe.judge_agreement``: how far the LLM judge can be trusted, measured on human-labelled
cases (``queryeval judge-check`` prints the same report).

The labels file is JSONL, one case a line: ``{"id", "question", "reference", "response",
"label": "pass" | "fail"}`` (optional ``kind``: ``answer`` (default) or ``query``, and
``context``). The judge judges every case; the report gives Cohen's kappa, TPR, TNR and
accuracy with bootstrap intervals (:mod:`queryeval.metrics.agreement`), the confusion matrix
and every disagreement; cases the judge could not decide (``judge_malformed``,
``judge_call``) are listed apart and enter no figure. With ``repeats`` N >= 2 every case is
judged N times with the cache bypassed, the agreement is that of the first round and
``self_consistency`` says how the rounds agree. The figures are recorded for the judge's
model and prompt version (:mod:`queryeval.engines.judge.checks`), where a run with that
judge finds them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.engines.judge import JudgeItem, JudgeOptions, make_judge
from queryeval.engines.judge.checks import checks_root, save_check
from queryeval.engines.judge.prompt import PROMPT_VERSION
from queryeval.errors import ConfigError, InputError
from queryeval.io.atomic import write_text_atomic
from queryeval.io.jsonl import iter_jsonl
from queryeval.io.writing import writing
from queryeval.metrics.agreement import agreement, self_consistency

FIELDS = ("id", "question", "reference", "response", "label")


@dataclass
class AgreementReport:
    """What a judge check measured (``to_dict()`` is the JSON file's content)."""

    model: str
    prompt_version: str
    labels: str
    n: int
    figures: dict
    """``kappa``, ``tpr``, ``tnr``, ``accuracy`` (each ``{"value", "ci_low", "ci_high"}``),
    ``confusion`` ``[[TN, FP], [FN, TP]]`` (rows: human fail, pass; columns: the judge's)."""
    disagreements: list[dict] = field(default_factory=list)
    undecided: list[dict] = field(default_factory=list)
    repeats: int = 1
    self_consistency: dict | None = None
    recorded: str | None = None
    """The recorded check's path (None: not recorded)."""

    @property
    def kappa(self) -> float | None:
        return self.figures["kappa"]["value"]

    def to_dict(self) -> dict:
        return asdict(self)


def read_labels(path: str | Path) -> list[dict]:
    """The labelled cases; a bad line is one InputError naming file, line and field."""
    out: list[dict] = []
    seen: set[str] = set()
    for line, obj in iter_jsonl(path, kind="suite-lines"):
        for name in FIELDS:
            if name not in obj:
                raise InputError("field required", path=path, line=line, field=name)
        cid = obj["id"]
        if isinstance(cid, bool) or not isinstance(cid, (str, int)):
            raise InputError("must be a string or an integer", path=path, line=line, field="id")
        for name in ("question", "reference", "response", "context"):
            if name in obj and not isinstance(obj[name], str):
                raise InputError("must be a string", path=path, line=line, field=name)
        if obj["label"] not in ("pass", "fail"):
            raise InputError(f"must be 'pass' or 'fail', got {obj['label']!r:.40}", path=path,
                             line=line, field="label")
        kind = obj.get("kind", "answer")
        if kind not in ("answer", "query"):
            raise InputError(f"must be 'answer' or 'query', got {kind!r:.40}", path=path,
                             line=line, field="kind")
        if str(cid) in seen:
            raise InputError(f"duplicate id {str(cid)!r}", path=path, line=line, field="id")
        seen.add(str(cid))
        out.append({**obj, "id": str(cid), "kind": kind})
    if not out:
        raise InputError("no labelled cases", path=path)
    return out


def _options(judge: Any, kw: dict) -> JudgeOptions:
    if isinstance(judge, JudgeOptions):
        base = judge.model_dump()
    elif judge is None:
        base = {}
    elif isinstance(judge, dict):
        base = dict(judge)
    else:
        raise ConfigError(f"judge: a mapping or a JudgeOptions, got {type(judge).__name__}")
    base.update({k: v for k, v in kw.items() if v is not None})
    try:
        return JudgeOptions(**base)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"]) or "judge"
        raise ConfigError(f"judge option {where}: {err['msg'][:1].lower()}{err['msg'][1:]}"
                          ) from None


def judge_agreement(labels: str | Path, judge: Any = None, *, model: str | None = None,
                    base_url: str | None = None, api_key_env: str | None = None,
                    repeats: int = 1, confidence: float = 0.95, resamples: int = 2000,
                    seed: int = 0, out: str | Path | None = None, record: bool = True,
                    checks_dir: str | Path | None = None, **options: Any) -> AgreementReport:
    """Run the judge on the labelled cases in ``labels`` and measure its agreement.

    ``judge``: judge options (a mapping or :class:`~queryeval.engines.judge.JudgeOptions`);
    ``model``, ``base_url``, ``api_key_env`` and further ``options`` (``cache_dir``,
    ``concurrency``, ``timeout_s``, ...) override it. ``repeats``: judge each case N times,
    the cache bypassed, and report self-consistency. ``out``: also write the report as JSON
    there. ``record``: store the figures for this model and prompt version (in
    ``checks_dir``, default the judge's ``checks_dir`` or the cache folder), unless the
    judge decided no case (every call failed): then nothing is recorded and a check
    recorded before stays (``report.recorded`` is None).
    """
    if repeats < 1:
        raise ConfigError(f"repeats: must be at least 1, got {repeats}")
    opts = _options(judge, {"model": model, "base_url": base_url, "api_key_env": api_key_env,
                            "checks_dir": str(checks_dir) if checks_dir else None, **options})
    cases = read_labels(labels)
    items = [JudgeItem(case_id=c["id"], question=c["question"], reference=c["reference"],
                       response=c["response"], kind=c["kind"], context=c.get("context", ""))
             for c in cases]
    client = make_judge(opts)
    try:
        rounds = [client.judge_many(items, use_cache=repeats == 1) for _ in range(repeats)]
    finally:
        client.close()
    first = rounds[0]
    decided = [(c, v) for c, v in zip(cases, first, strict=True) if v.error is None]
    figures = agreement([c["label"] for c, _ in decided], [v.verdict for _, v in decided],
                        confidence=confidence, resamples=resamples, seed=seed)
    disagreements = [{"id": c["id"], "label": c["label"], "verdict": v.verdict,
                      "reason": v.reason, "question": c["question"],
                      "reference": c["reference"], "response": c["response"]}
                     for c, v in decided if v.verdict != c["label"]]
    undecided = [{"id": c["id"], "label": c["label"], "error": v.error}
                 for c, v in zip(cases, first, strict=True) if v.error is not None]
    consistency = None
    if repeats > 1:
        rows = [[r[i].verdict for r in rounds] for i in range(len(cases))
                if all(r[i].error is None for r in rounds)]
        consistency = {**self_consistency(rows),
                       "undecided": len(cases) - len(rows)}
    report = AgreementReport(
        model=opts.model, prompt_version=PROMPT_VERSION, labels=str(labels),
        n=figures["n"], figures=figures, disagreements=disagreements, undecided=undecided,
        repeats=repeats, self_consistency=consistency)
    if record and figures["n"]:  # nothing decided: nothing measured, the last check stays
        digest = hashlib.sha256(Path(labels).read_bytes()).hexdigest()
        with writing(checks_root(opts.checks_dir)):
            path = save_check({
                "model": opts.model, "prompt_version": PROMPT_VERSION,
                "base_url": opts.base_url, "labels": str(Path(labels).resolve()),
                "labels_sha256": digest, "n": figures["n"], "errors": len(undecided),
                **{k: figures[k] for k in ("kappa", "tpr", "tnr", "accuracy", "confusion")},
                "confidence": confidence, "repeats": repeats,
                "self_consistency": consistency,
                "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }, opts.checks_dir)
        report.recorded = str(path)
    if out is not None:
        with writing(out):
            write_text_atomic(out, json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    return report
