"""The deterministic ladder of the ``freeform`` task: one response against one reference,
rule by rule; the first rule that decides gives the verdict and its name (``decided_by``).

1. ``missing``: no response, or only blanks -> fail.
2. ``exact``: SQuAD-normalised text equal to the answer's (case, whitespace, punctuation,
   articles) *and* the same signs inside it (``C#`` is not ``C``, ``B-`` not ``B+``,
   ``(5)`` not ``5``; the sentence punctuation and quotes at its ends aside) *and* the same
   numbers in the same order (the normalisation drops the decimal point and the sign, so
   ``3.5`` and ``35`` would otherwise be equal) with the same units after them (it folds
   case: ``5 Mm`` is not ``5 mm``) -> pass. An answer the normalisation empties (``A``,
   ``The``) is compared as written, case folded.
3. ``alias``: the same test against each alias -> pass.
4. ``date`` (the answer is one date): every date in the response equal to it -> pass;
   every date different -> fail; some equal and some not, an ambiguous numeric date whose
   other reading is equal (in the response, or an ambiguous reference whose other reading
   the response gives), or no date -> inconclusive.
5. ``number`` / ``unit`` (the answer is one number, with an optional unit or ``%``): every
   candidate number within tolerance -> pass (``unit`` when one was converted from another
   unit); every candidate outside -> fail, unless the response is ambiguous (a decimal comma
   such as ``3,5``, a scale abbreviation ``5k``, thousands grouped by spaces ``1 234``, a
   fraction ``1/2``, or a number written in words); some within and some outside (which is
   the answer?), a dot followed by three digits whose two readings (``1.000``: 1 or 1000)
   disagree about the reference, or no candidate -> inconclusive. Candidates leave out numbers inside a
   date, numbers the question states, and numbers in a unit of another dimension (a
   percentage included, when the reference has a unit).

Dates and numbers the question itself states are context, not answers: they are left out
on both rules (``What was the population in 2020?`` -> ``In 2020 it was 1.2 million``).
6. anything else -> inconclusive (verdict None): text never fails deterministically, since
   a synonym or a paraphrase is not a wrong answer.

A rule decides only what it proves: a response that negates, bounds, compares, hedges or
re-scales the figure (:mod:`queryeval.metrics.freeform.claims`: ``not 5``, ``<5``, ``about
5``, ``5 times``) is inconclusive on rules 4 and 5, pass or fail, and is no ``exact`` or
``alias`` pass unless the answer holds the same qualifier (``No`` against ``No.``); a figure
written in words beside the number (``one`` excepted) and the ambiguous forms above keep a
pass unproven too.

Pure functions; docs/freeform.md gives each rule's accepted and rejected examples.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from queryeval.metrics.freeform.claims import masked, unproven, why
from queryeval.metrics.freeform.dates import as_date, date_spans, find_dates
from queryeval.metrics.freeform.numbers import (
    MINUS_SIGNS,
    Number,
    ambiguity,
    extract_numbers,
    within,
)
from queryeval.metrics.freeform.units import (
    CONVERSION_SLACK,
    convert,
    parse_unit,
    unit_after,
    unit_text,
)
from queryeval.metrics.squad import DEFAULT_VERSION, SquadVersion, normalize_answer, squad_scores

MAX_FOUND = 1000
"""At most this many numbers (or dates) of a response are compared; a response holding more
that match none is inconclusive, not failed (a dump, not an answer a rule should judge)."""
SIGNS = frozenset(MINUS_SIGNS + "+")
RULES = ("missing", "exact", "alias", "date", "number", "unit")
"""Every rule's name, in ladder order (a case no rule decides is ``inconclusive``)."""

NUMBER_WORDS = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|"
    r"sixty|seventy|eighty|ninety|hundred|half|quarter|dozen)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    """The ladder's verdict on one response: ``verdict`` None when no rule decided
    (``rule == "inconclusive"``); ``detail`` says why in words; the SQuAD figures are the
    best over the answer and its aliases."""

    verdict: Literal["pass", "fail"] | None
    rule: str
    detail: str
    exact_match: float
    token_f1: float


@dataclass(frozen=True)
class ReferenceNumber:
    """The answer read as one number: its value, ``%`` flag and pint unit (or None)."""

    value: Fraction
    percent: bool
    unit: Any
    dotted: bool = False
    """Written with a dot and exactly three digits (``3.125``): the response's such dots
    are then read as the reference's is, a decimal point."""
    per: int = 1
    """The base of its per-notation (100 for ``12%``, 1000 for ``5‰``, 10000 for ``25 bp``),
    1 for none."""


def reference_number(answer: str, unit: str | None = None) -> ReferenceNumber | None:
    """The answer as one number when the whole answer is a number with an optional unit
    or ``%`` (``42``, ``3.5 km``, ``12%``, ``1.2 million``); ``unit`` (the reference's
    ``unit`` field) applies when the text names none. None when it is not one number."""
    text = answer.strip().rstrip(".").strip()
    numbers = extract_numbers(text, limit=1)
    if not numbers or numbers[0].start != 0:
        return None
    n = numbers[0]
    written, end = (None, n.end) if n.percent else unit_after(text, n.end)
    if text[end:].strip():
        return None
    if written is None and unit and not n.percent:
        written = parse_unit(unit)
    return ReferenceNumber(n.value, n.percent, written, n.grouped is not None, n.per)


def _numbers_key(text: str) -> list[tuple[Fraction, int]]:
    return [(n.value, n.per) for n in extract_numbers(text)]


def _units_key(text: str) -> list[Any]:
    """The unit pint reads after each number (None where none): the normalisation folds
    case, and a unit's case is its meaning (``mm`` and ``Mm``, ``ms`` and ``Ms``)."""
    return [unit_after(text, n.end)[0] for n in extract_numbers(text)]


_EDGE = ".,;:!?\"'`*_~\u2018\u2019\u201c\u201d\u00ab\u00bb "
"""Sentence punctuation, quotes and markdown emphasis that may end or wrap an answer
without changing it."""


def _marks(text: str) -> list[str]:
    """The signs ``text`` writes besides letters, digits and spaces, less the sentence
    punctuation and quotes at its ends: ``#`` in ``C#``, ``+`` in ``B+``, the parentheses of
    ``(5)`` (an accounting negative). The SQuAD normalisation drops them all."""
    plain = _masked(text)  # the numbers' own signs (1,234.5) are compared as numbers
    return [c for c in plain.strip(_EDGE) if not (c.isalnum() or c.isspace())]


def _same_text(response: str, reference: str) -> bool:
    """The same answer by the normalised text *and* the same signs inside it, numbers and
    units after them: ``C#`` is not ``C``, nor ``B-`` ``B+``. A reference the normalisation
    empties (an article, punctuation: ``A``, ``The``) is compared case-folded as written."""
    ref = normalize_answer(reference)
    if not ref:
        return " ".join(response.strip(_EDGE).casefold().split()) == \
            " ".join(reference.strip(_EDGE).casefold().split())
    return (normalize_answer(response) == ref
            and _marks(response) == _marks(reference)
            and _numbers_key(response) == _numbers_key(reference)
            and _units_key(response) == _units_key(reference))


def _number_matches(n: Number, value: Fraction, ref: ReferenceNumber, **tol: Any) -> bool | None:
    """Whether ``value`` (the response's number ``n``, in the reference's unit) is the
    reference's: a percentage on one side only matches its fraction (``p% = p/100``), or its
    figure with the sign left out when the plain number is not a fraction (beyond -1..1:
    ``45%`` and ``45``); a figure match within -1..1 alone (``0.98%`` against ``0.98``,
    which ``98%`` matches as a fraction) is None: which the reference meant, no rule can
    tell. Two per-notations of different bases (``50‰`` and ``5%``) are compared in the
    reference's. (A per mille or basis points on one side only is never compared:
    :func:`_unscaled`.)"""
    slack = tol.pop("slack", Fraction(0))
    if n.percent and ref.percent:
        return within(value * ref.per / n.per, ref.value, slack=slack, **tol)
    if not n.percent and not ref.percent:
        return within(value, ref.value, slack=slack, **tol)
    if ref.percent:   # reference p%: the response says p/100, or p
        fraction, plain = within(value * 100, ref.value, **tol), value
    else:
        fraction, plain = within(value / 100, ref.value, **tol), ref.value
    if fraction:
        return True
    if within(value, ref.value, **tol):
        return True if abs(plain) > 1 else None
    return False


def _unscaled(n: Number, ref: ReferenceNumber) -> bool:
    """Whether ``n`` and the reference have a per-notation on one side only that is not a
    percentage (``1‰`` against ``1``, ``25`` against ``25 bp``): which scale the plain
    figure is in, no rule can tell."""
    return n.percent != ref.percent and (n.per if n.percent else ref.per) != 100


def _doubt(response: str, plain: str, *, date: bool, reference: str = "") -> str | None:
    """Why a verdict on ``response`` (``plain``: masked by :func:`_masked`) cannot be proven
    (claims.py: a word or sign that negates, bounds, compares, hedges or re-scales the
    figure, less those ``reference`` holds too), or None."""
    q = unproven(plain, _masked(reference) if reference else "", date=date, shown=response)
    return why(q) if q is not None else None


def _masked(text: str) -> str:
    """``text`` with the numbers and dates it reads masked (claims.masked); a sign written
    as a symbol stays (``--5``: a doubled dash is a qualifier), a sign word does not."""
    spans = [(n.start + (n.text[:1] in SIGNS), n.end)
             for n in extract_numbers(text, limit=MAX_FOUND + 1)]
    return masked(text, spans + date_spans(text))


_FOLLOW = re.compile(r"[ \t]*([^\W\d_]{1,3}(?![\w'\u2019])|[^\s\w.,;:!?)\]}\"\u201d*_~])")
"""What follows a number that reads no unit and may still be one: a word of at most three
letters (``pm``, ``ly``), or a sign other than punctuation and emphasis (``″``, ``'``,
``℉``, ``°``). A longer word is taken for text (``3.5 away``, ``20 degrees``)."""
_CONNECTIVES = frozenset({
    "and", "or", "but", "is", "was", "are", "were", "be", "been", "in", "on", "at", "of",
    "to", "for", "the", "a", "an", "by", "with", "from", "as", "it", "its", "that", "which",
    "this", "these", "those", "so", "then", "when", "where", "while", "into", "onto"})
"""Words after a bare number that name no unit (``20 and rising``): against a reference with
a unit, any other word or sign after a number that reads none may be a unit no rule reads
(``20 Réaumur``, ``5″``, ``5 pm``), so that number decides nothing."""
_CONTINUES = re.compile(
    r"[ \t]*(?:/|\^|\*\*\s*[-+]?\d|[\u00b2\u00b3\u00b9\u2070-\u207f]|(?:per|an?|each|every)\b"
    r"|(?:hourly|daily|weekly|monthly|yearly|annually|squared|cubed)\b)", re.IGNORECASE)
"""After a unit read, more of a unit (``5 km / h``, ``5 km an hour``, ``5 km⁻¹``): the unit
read is not the whole unit."""


def _listed(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def _decide_number(response: str, ref: ReferenceNumber, answer: str, abs_tol: float | None,
                   rel_tol: float | None, question: str,
                   plain: str) -> tuple[str | None, str, str]:
    """Pass when every candidate number agrees with the reference, fail when none does,
    inconclusive when some do and some do not (which one is the answer?). Candidates: the
    response's numbers less those inside a date, those the question states (context, not an
    answer) and those in a unit of another dimension."""
    rule = "number" if ref.unit is None else "unit"
    stated = {n.value for n in extract_numbers(question, limit=MAX_FOUND)}
    in_dates = [(d.start, d.end) for d in find_dates(response, limit=MAX_FOUND)]
    matched: list[str] = []
    converted_any = False
    tried: list[str] = []
    other_units: list[str] = []
    dotted: list[tuple[str, bool]] = []  # one reading of the dot agrees, the other not
    unscaled: list[str] = []  # 1‰ against 1: per mille on one side only
    undecided: list[str] = []  # 0.98% against 0.98: a fraction, or a percentage's figure?
    numbers = extract_numbers(response, limit=MAX_FOUND + 1)
    if len(numbers) > MAX_FOUND:
        return None, "inconclusive", f"more than {MAX_FOUND} numbers in the response"
    consumed = 0  # where the last unit read ends (km^2: the 2 is the unit's)
    for n in numbers:
        if n.start < consumed:
            continue
        if n.value in stated or any(a <= n.start < b for a, b in in_dates):
            continue
        value, converted, shown, unit = n.value, False, n.text.strip(), None
        if ref.unit is not None and n.percent:  # a percentage is not a length or a mass
            other_units.append(shown)
            continue
        if ref.unit is not None:
            unit, end = unit_after(response, n.end)
            if unit is None:  # no unit read: a word or sign that may be one (20 Réaumur, 5″)
                follow = _FOLLOW.match(response, n.end)
                if follow and follow.group(1).casefold() not in _CONNECTIVES:
                    other_units.append(response[n.start:follow.end()].strip())
                    continue
            elif more := _CONTINUES.match(response, end):  # 5 km / h, 5 km an hour
                other_units.append(response[n.start:more.end()].strip())
                continue
            if unit is not None:
                consumed = end
                shown = response[n.start:end].strip()
                value = convert(n.value, unit, ref.unit)
                if value is None:
                    other_units.append(shown)
                    continue
                converted = unit != ref.unit
        if _unscaled(n, ref):
            unscaled.append(shown)
            continue
        slack = CONVERSION_SLACK if converted else Fraction(0)
        agrees = _number_matches(n, value, ref, abs_tol=abs_tol, rel_tol=rel_tol, slack=slack)
        if agrees is not None and n.grouped is not None and not ref.dotted:  # 1.000: 1 or 1000
            other = n.grouped if not converted else convert(n.grouped, unit, ref.unit)
            if other is None or agrees != _number_matches(
                    n, other, ref, abs_tol=abs_tol, rel_tol=rel_tol, slack=slack):
                dotted.append((shown, agrees))
        if agrees is None:
            undecided.append(shown)
        elif agrees:
            matched.append(shown)
            converted_any |= converted
        else:
            tried.append(shown)
    if dotted:
        shown, agrees = dotted[0]
        return None, "inconclusive", (
            f"{shown} is ambiguous: read with a decimal point it "
            f"{'matches' if agrees else 'differs from'} {answer}, with a thousands dot it "
            f"{'differs' if agrees else 'matches'}")
    if undecided:
        return None, "inconclusive", (
            f"{undecided[0]} against {answer}: it matches only if the plain figure is a "
            "percentage with its sign left out; as a fraction (p% = p/100) it differs: "
            "which is meant?")
    if unscaled:
        return None, "inconclusive", (f"{unscaled[0]} has a per-notation the reference "
                                      f"{answer} does not have: which scale is it in?")
    unread = ambiguity(plain, scales=ref.unit is None)  # dates masked: their slashes too
    if matched and not tried:
        how = "unit" if converted_any else "number"
        if converted_any:
            said = f"{_listed(matched)} = {answer}"
        else:
            said = f"{_listed(matched)} {'matches' if len(matched) == 1 else 'match'} {answer}"
        if unread:
            return None, "inconclusive", f"{said}, but {unread}"
        words = _number_words(plain, pass_=True)
        if words:
            return None, "inconclusive", f"{said}, but a number is written in words ({words!r})"
        return "pass", how, said
    if matched:
        return None, "inconclusive", (f"{matched[0]} matches, but {_listed(tried)} "
                                      f"{'differs' if len(tried) == 1 else 'differ'}: which is "
                                      "the answer?")
    if not tried:
        if other_units:
            return None, "inconclusive", (f"no number in {unit_text(ref.unit)} (only "
                                          f"{_listed(other_units)})")
        return None, "inconclusive", ("no number in the response" if not numbers else
                                      "only numbers the question states or dates")
    differ = f"{_listed(tried)} {'differs' if len(tried) == 1 else 'differ'} from {answer}"
    if unread:
        return None, "inconclusive", f"{differ}, but {unread}"
    if _number_words(plain, pass_=False):
        return None, "inconclusive", f"{differ}, but a number is written in words"
    return "fail", rule, differ


def _number_words(plain: str, *, pass_: bool) -> str | None:
    """A number written in words in a response outside the numbers and dates it reads
    (``plain``, masked: ``5 hundred`` is 500, not a word), or None. Against a pass ``one``
    does not count (``the longest one is 3.5 km``); against a fail it does (``41, or one
    more``)."""
    for m in NUMBER_WORDS.finditer(plain):
        if not (pass_ and m.group(0).lower() == "one"):
            return m.group(0)
    return None


def _decide_date(response: str, iso: str, dayfirst: bool, question: str,
                 ref_other: str | None = None) -> tuple[str | None, str, str]:
    """Pass when every date in the response (less those the question states) is the
    reference, fail when none is; an ambiguous date whose other reading is the reference,
    or dates some equal and some not, leave the case inconclusive."""
    found = find_dates(response, dayfirst=dayfirst, limit=MAX_FOUND + 1)
    if len(found) > MAX_FOUND:
        return None, "inconclusive", f"more than {MAX_FOUND} dates in the response"
    stated = {d.iso for d in find_dates(question, dayfirst=dayfirst, limit=MAX_FOUND)}
    found = [d for d in found if d.iso not in stated]
    equal = [d for d in found if d.iso == iso]
    other = [d for d in found if d.iso != iso]
    if ref_other is not None and any(d.iso == ref_other for d in other):
        return None, "inconclusive", (f"the reference is ambiguous: read as {iso}, the "
                                      f"response says its other reading {ref_other}")
    flipped = [d for d in other if d.other == iso]
    if flipped:
        d = flipped[0]
        return None, "inconclusive", (f"{d.text} is ambiguous: read as {d.iso}, "
                                      f"the other reading is {iso}")
    if equal and not other:
        return "pass", "date", f"{equal[0].text} is {iso}"
    if equal:
        return None, "inconclusive", (f"{equal[0].text} is {iso}, but "
                                      f"{_listed([d.iso for d in other])} also appear")
    if other:
        return "fail", "date", f"{_listed([d.iso for d in other])} is not {iso}"
    return None, "inconclusive", "no date in the response"


def decide(answer: str, response: str | None, *, aliases: Sequence[str] = (),
           abs_tol: float | None = None, rel_tol: float | None = None,
           unit: str | None = None, dayfirst: bool = False, question: str = "",
           squad: SquadVersion = DEFAULT_VERSION) -> Decision:
    """Run the ladder on one response against its reference (the module's rules);
    ``question`` (the user's turn) names the numbers and dates that are context, not an
    answer; ``squad``: the SQuAD version of the exact match and token F1 figures
    (:mod:`queryeval.metrics.squad`; the answer and its aliases are its references)."""
    references = [answer, *aliases]
    if response is None or not response.strip():
        return Decision("fail", "missing", "no response", 0.0, 0.0)
    em, f1 = squad_scores(references, response, squad)
    plain = _masked(response)
    if _same_text(response, answer) and _doubt(response, plain, date=False, reference=answer) is None:
        return Decision("pass", "exact", "same text as the answer", em, f1)
    for alias in aliases:
        if _same_text(response, alias) and _doubt(response, plain, date=False, reference=alias) is None:
            return Decision("pass", "alias", f"same text as the alias {alias!r}", em, f1)
    ref_date = as_date(answer, dayfirst=dayfirst)
    if ref_date is not None:
        verdict, rule, detail = _decide_date(response, ref_date.iso, dayfirst, question,
                                             ref_date.other)
        return _proven(verdict, rule, detail, response, plain, em, f1, date=True)
    ref_number = reference_number(answer, unit)
    if ref_number is not None:
        verdict, rule, detail = _decide_number(response, ref_number, answer, abs_tol, rel_tol,
                                               question, plain)
        return _proven(verdict, rule, detail, response, plain, em, f1, date=False)
    return Decision(None, "inconclusive", "no rule decides a text answer", em, f1)


def _proven(verdict: str | None, rule: str, detail: str, response: str, plain: str, em: float,
            f1: float, *, date: bool) -> Decision:
    """The date or number rule's decision, unless the response qualifies the figure (it
    negates, bounds, compares, hedges or re-scales it): then no verdict, pass or fail, is
    proven, and the case is inconclusive with the reason beside the rule's detail."""
    doubt = _doubt(response, plain, date=date) if verdict is not None else None
    if doubt:
        return Decision(None, "inconclusive", f"{detail}, but {doubt}", em, f1)
    return Decision(verdict, rule, detail, em, f1)  # type: ignore[arg-type]
