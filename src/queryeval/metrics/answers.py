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
    # line by line, each cut after its last ']': a value never spans lines and ends at a ']',
    # so the matches are the same; scanning each '@a[' to the end of a line with no ']' after
    # it made the whole text quadratic (60 KB of '@a[' took 9.5 s, holding the GIL)
    out: dict[str, str] = {}
    for line in text.split("\n"):
        end = line.rfind("]")
        if end >= 0:
            out.update(ANSWER_PATTERN.findall(line, 0, end + 1))
    return out


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


class _GroupCounts:
    """One group's running counts. PSAQ's sum of ``correct / M_i`` is kept exact as a count
    per distinct ``(correct, M_i)`` pair (a handful: M_i is small), so it is O(1) memory and
    equals the sum of :class:`~fractions.Fraction` terms in any order."""

    __slots__ = ("questions", "subquestions", "correct_questions", "correct_subquestions",
                 "pairs")

    def __init__(self) -> None:
        self.questions = self.subquestions = 0
        self.correct_questions = self.correct_subquestions = 0
        self.pairs: dict[tuple[int, int], int] = {}

    def add(self, correct: int, total: int) -> None:
        self.questions += 1
        self.subquestions += total
        self.correct_questions += correct == total
        self.correct_subquestions += correct
        key = (correct, total)
        self.pairs[key] = self.pairs.get(key, 0) + 1

    def stats(self) -> dict:
        """questions, subquestions, correct counts and the three metrics (None when empty)."""
        n, m = self.questions, self.subquestions
        psaq = sum((Fraction(c, t) * k for (c, t), k in self.pairs.items()), Fraction(0))
        return {
            "questions": n,
            "subquestions": m,
            "correct_questions": self.correct_questions,
            "correct_subquestions": self.correct_subquestions,
            "psaq": float(psaq / n) if n else None,
            "abq": self.correct_questions / n if n else None,
            "uasq": self.correct_subquestions / m if m else None,
        }


class ClosedFormAccumulator:
    """:func:`closed_form_metrics` one question at a time: :meth:`add` each question (or
    :meth:`add_counts` its figures), then :meth:`result`. Memory is O(number of groups), so
    a million questions aggregate from a stream; the result equals the list function's."""

    def __init__(self) -> None:
        self._all = _GroupCounts()
        self._answered = 0
        self._missing = 0
        self._by_concept: dict[str, _GroupCounts] = {}
        self._by_count: dict[str, _GroupCounts] = {}
        self._by_group: dict[str, _GroupCounts] = {}
        self._by_level: dict[str, _GroupCounts] = {}

    def add(self, score: QuestionScore, question: HasConcepts) -> None:
        """One question's score and its concepts and level."""
        self.add_counts(score.correct, score.total, answered=score.answered,
                        skipped=score.skipped, concepts=question.concepts, level=question.level)

    def add_counts(self, correct: int, total: int, *, answered: bool, skipped: bool,
                   concepts: Iterable[str], level: str | None) -> None:
        """One question given by its figures: ``correct`` of ``total`` sub-questions right
        (``total`` >= 1), whether it was answered and skipped, its concepts and level."""
        self._answered += bool(answered)
        self._missing += not answered
        if skipped:
            return
        self._all.add(correct, total)
        distinct = list(dict.fromkeys(concepts))
        for c in distinct:
            _group(self._by_concept, c).add(correct, total)
        _group(self._by_count, str(len(distinct))).add(correct, total)
        if distinct:
            _group(self._by_group, "1" if len(distinct) == 1 else ">1").add(correct, total)
        if level is not None:
            _group(self._by_level, level).add(correct, total)

    def result(self) -> dict:
        """The dict :func:`closed_form_metrics` returns for the questions added so far."""
        out = self._all.stats()
        out["answered"] = self._answered
        out["missing"] = self._missing
        out["by_concept"] = {k: g.stats() for k, g in self._by_concept.items()}
        out["by_concept_count"] = {k: g.stats() for k, g in self._by_count.items()}
        out["by_concept_group"] = {k: g.stats() for k, g in self._by_group.items()}
        if self._by_level:
            out["by_level"] = {k: g.stats() for k, g in self._by_level.items()}
        return out


def _group(groups: dict[str, _GroupCounts], key: str) -> _GroupCounts:
    g = groups.get(key)
    if g is None:
        g = groups[key] = _GroupCounts()
    return g


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
    A thin wrapper over :class:`ClosedFormAccumulator`.
    """
    if len(scores) != len(questions):
        raise ValueError(f"{len(scores)} scores for {len(questions)} questions")
    acc = ClosedFormAccumulator()
    for s, q in zip(scores, questions, strict=True):
        acc.add(s, q)
    return acc.result()


def score(
    target: Mapping[str, str] | Iterable[tuple[str, str]],
    response: str | None,
    *,
    match: MatchMode = "numeric",
    missing: MissingMode = "wrong",
) -> QuestionScore:
    """:func:`score_question` in the uniform order of every family's ``score`` (ground truth
    first): ``target`` as ``{name: value}`` or ``[(name, value), ...]``, then the response."""
    pairs = list(target.items()) if isinstance(target, Mapping) else list(target)
    return score_question(pairs, response, match=match, missing=missing)
