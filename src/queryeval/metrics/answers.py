"""Closed-form answers (seed 001, DABench): extraction, comparison, PSAQ / ABQ / UASQ.

Semantics follow InfiAgent's ``eval_closed_form.py`` (see docs/answers.md):

* extraction: every ``@name[value]`` matched by ``@(\\w+)\\[(.*?)\\]`` (name = word
  characters, value = everything up to the first ``]`` on the same line, nothing stripped);
  a repeated name keeps its first position and its *last* value;
* comparison: ``numeric`` (default, the current evaluator) = equal strings, or both parse
  with Python's ``float()`` and differ by less than 1e-6; ``strict`` = string equality
  (the seed-era evaluator);
* missing or empty responses: ``missing="wrong"`` (default) scores them 0 and keeps them in
  every denominator; ``missing="skip"`` (the reference) leaves them out of every denominator.

Per-question kernel :func:`score_question`; aggregate :func:`closed_form_metrics`. Nothing is
rounded. Zero division: an aggregate over 0 questions is ``None``; a group with 0 questions is
absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Protocol

ANSWER_PATTERN = re.compile(r"@(\w+)\[(.*?)\]")
"""The reference's pattern. ``.`` does not match a newline, so a value never spans lines."""

NUMERIC_TOLERANCE = 1e-6
"""Absolute tolerance of ``numeric`` mode (strictly less than)."""

MatchMode = Literal["numeric", "strict"]
MissingMode = Literal["wrong", "skip"]
MATCH_MODES: tuple[str, ...] = ("numeric", "strict")
MISSING_MODES: tuple[str, ...] = ("wrong", "skip")


def extract_answers(text: str) -> dict[str, str]:
    """All ``@name[value]`` pairs of ``text``; a repeated name keeps its last value.

    Matches are found left to right without overlap (``re.findall``), so ``@a[@b[1]]``
    yields ``{"a": "@b[1"}``, and ``@a[x`` with no ``]`` on its line yields nothing for ``a``.
    """
    return dict(ANSWER_PATTERN.findall(text))


def _as_float(s: str) -> float | None:
    try:
        return float(s)
    except (ValueError, TypeError):
        return None


def answers_match(expected: str, got: str | None, mode: MatchMode = "numeric") -> bool:
    """Whether an extracted value ``got`` matches the label ``expected``.

    ``strict``: ``got == expected``. ``numeric``: that, or both parse with Python's
    ``float()`` and ``abs(got - expected) < 1e-6``. ``float()`` ignores surrounding
    whitespace and accepts ``1e2``, ``1_000``, ``inf`` and ``nan`` (so ``" 34.65"`` matches
    ``"34.65"``, ``"1e2"`` matches ``"100"``, ``"nan"`` matches only the string ``"nan"``
    since NaN differs from everything). ``"1,234"`` does not parse: string equality only.
    ``got=None`` (name not extracted) never matches.
    """
    if mode not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {mode!r}")
    if got is None:
        return False
    if got == expected:
        return True
    if mode == "strict":
        return False
    a, b = _as_float(got), _as_float(expected)
    if a is None or b is None:
        return False
    return abs(a - b) < NUMERIC_TOLERANCE


@dataclass(frozen=True)
class SubScore:
    """One sub-question: the label, what was extracted (``None`` if absent) and the verdict."""

    name: str
    expected: str
    extracted: str | None
    matched: bool


@dataclass(frozen=True)
class QuestionScore:
    """The score of one question.

    ``answered``: the response was present and not the empty string. ``skipped``: not
    answered and ``missing="skip"`` — the question is left out of every denominator.
    ``extracted`` holds every pair found in the response, expected or not.
    """

    subs: tuple[SubScore, ...]
    answered: bool
    skipped: bool
    extracted: Mapping[str, str]

    @property
    def total(self) -> int:
        """M_i: the number of sub-questions (distinct label names)."""
        return len(self.subs)

    @property
    def correct(self) -> int:
        """Sub-questions answered right."""
        return sum(s.matched for s in self.subs)

    @property
    def all_correct(self) -> bool:
        """Every sub-question right (the ABQ indicator)."""
        return self.correct == self.total

    @property
    def proportion(self) -> float:
        """correct / M_i (the PSAQ term); M_i >= 1 by construction."""
        return self.correct / self.total


def dedupe_answers(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Distinct names in first-seen order, each with its last value (``dict`` semantics)."""
    return list(dict(pairs).items())


def score_question(
    expected: Iterable[tuple[str, str]],
    response: str | None,
    *,
    match: MatchMode = "numeric",
    missing: MissingMode = "wrong",
) -> QuestionScore:
    """Score one response against its labels ``[(name, value), ...]``.

    Repeated label names: the last value wins. A response that is ``None`` or ``""`` is
    missing (a whitespace-only response is answered, and extracts nothing). Raises
    ``ValueError`` for an empty label list (M_i = 0 has no defined score) or unknown modes.
    """
    if missing not in MISSING_MODES:
        raise ValueError(f"missing mode must be one of {MISSING_MODES}, got {missing!r}")
    if match not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {match!r}")
    labels = dedupe_answers(expected)
    if not labels:
        raise ValueError("a question needs at least one expected answer")
    answered = response is not None and response != ""
    found = extract_answers(response) if answered else {}
    subs = tuple(
        SubScore(name, value, found.get(name), answers_match(value, found.get(name), match))
        for name, value in labels
    )
    return QuestionScore(
        subs=subs, answered=answered, skipped=(not answered and missing == "skip"),
        extracted=found,
    )


class HasConcepts(Protocol):
    """What the aggregate needs from a question: its concepts and (optional) level."""

    @property
    def concepts(self) -> Sequence[str]: ...

    @property
    def level(self) -> str | None: ...


def _group_stats(scores: Sequence[QuestionScore]) -> dict:
    """questions, subquestions, correct counts and the three metrics (None when empty)."""
    n = len(scores)
    m = sum(s.total for s in scores)
    q_right = sum(s.all_correct for s in scores)
    sq_right = sum(s.correct for s in scores)
    psaq = sum((Fraction(s.correct, s.total) for s in scores), Fraction(0))
    return {
        "questions": n,
        "subquestions": m,
        "correct_questions": q_right,
        "correct_subquestions": sq_right,
        "psaq": float(psaq / n) if n else None,
        "abq": q_right / n if n else None,
        "uasq": sq_right / m if m else None,
    }


def closed_form_metrics(
    scores: Sequence[QuestionScore], questions: Sequence[HasConcepts]
) -> dict:
    """Aggregate PSAQ, ABQ and UASQ overall and by group.

    ``scores[i]`` belongs to ``questions[i]``. Skipped questions (``missing="skip"``) are in
    no denominator and no group. Returned keys:

    * ``psaq``, ``abq``, ``uasq`` (``None`` when no question is scored), ``questions``
      (scored), ``answered``, ``missing`` (not answered, counted whether scored 0 or
      skipped), ``subquestions``, ``correct_questions``, ``correct_subquestions``;
    * ``by_concept``: concept -> stats (a question counts once for each distinct concept);
    * ``by_concept_count``: ``"1"``, ``"2"``, ... (distinct concepts) -> stats;
    * ``by_concept_group``: ``"1"`` and ``">1"`` -> stats (a question with no concept is in
      neither);
    * ``by_level``: level -> stats, only for questions that have a level; the key is absent
      when no scored question has one.

    Group dicts keep first-seen order (the reference's order) and only hold non-empty groups.
    """
    if len(scores) != len(questions):
        raise ValueError(f"{len(scores)} scores for {len(questions)} questions")
    kept: list[tuple[QuestionScore, HasConcepts]] = [
        (s, q) for s, q in zip(scores, questions, strict=True) if not s.skipped
    ]
    by_concept: dict[str, list[QuestionScore]] = {}
    by_count: dict[str, list[QuestionScore]] = {}
    by_group: dict[str, list[QuestionScore]] = {}
    by_level: dict[str, list[QuestionScore]] = {}
    for s, q in kept:
        distinct = list(dict.fromkeys(q.concepts))
        for c in distinct:
            by_concept.setdefault(c, []).append(s)
        by_count.setdefault(str(len(distinct)), []).append(s)
        if distinct:
            by_group.setdefault("1" if len(distinct) == 1 else ">1", []).append(s)
        if q.level is not None:
            by_level.setdefault(q.level, []).append(s)
    out = _group_stats([s for s, _ in kept])
    out["answered"] = sum(s.answered for s in scores)
    out["missing"] = sum(not s.answered for s in scores)
    out["by_concept"] = {k: _group_stats(v) for k, v in by_concept.items()}
    out["by_concept_count"] = {k: _group_stats(v) for k, v in by_count.items()}
    out["by_concept_group"] = {k: _group_stats(v) for k, v in by_group.items()}
    if by_level:
        out["by_level"] = {k: _group_stats(v) for k, v in by_level.items()}
    return out
