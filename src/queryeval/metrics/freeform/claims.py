"""What in a response keeps a rule from proving its verdict: the words and signs that
negate, bound, compare, hedge or re-scale the figure it states (docs/freeform.md, "What a
rule can prove").

A deterministic rule decides a number or a date only when the response's whole claim is
that figure: ``It is not 5``, ``fewer than 5``, ``<5``, ``about 5``, ``5?``, ``5 times``,
``5k`` and ``10²`` all hold a bare ``5`` or ``10`` that is not what they claim. Each such
*qualifier* is found here by a short pattern; a response that holds one is inconclusive
(the judge decides, when one is set). The patterns run over the response with the numbers
and dates it reads masked (so ``5 hundred``'s scale word, ``minus 5``'s sign word and the
month ``May`` of a date are not qualifiers), and for the ``exact`` and ``alias`` rules
the reference's own qualifiers are subtracted (``No`` against ``No.``). What the lists
cannot see through is a qualifier too: an invisible format character inside a word
(``n\u200bot``) and a word in a script other than Latin (``nоt`` with a Cyrillic ``о``).

A pattern that finds too much only sends a true answer to the judge; one that finds too
little lets a wrong answer pass: the lists lean wide.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b")
_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u207a\u207b"
_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"


def _words(*words: str) -> str:
    return r"\b(?:" + "|".join(words) + r")\b"


_SIMPLE: dict[str, str] = {}
"""Single plain words (lower case) -> their kind: looked up per word, faster than a regex
alternation of some 200 words."""


def _listed(kind: str, *words: str) -> tuple[str, str]:
    """``(kind, pattern)`` for a list of words: the plain ones go to :data:`_SIMPLE`, the
    others (phrases, patterns) into the pattern."""
    rest = []
    for w in words:
        if re.fullmatch(r"[a-z]+", w):
            _SIMPLE[w] = kind
        else:
            rest.append(w)
    return kind, _words(*rest)


# (kind, pattern): the kind names what the qualifier does to the figure, in the detail
_PATTERNS: list[tuple[str, str]] = [
    _listed("negates it",
        "not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "nope", "nah",
        "cannot", r"\w+n['\u2019]t", "aint", "isnt", "arent", "wasnt", "werent", "dont",
        "doesnt", "didnt", "cant", "wont", "couldnt", "shouldnt", "wouldnt", "hasnt",
        "havent", "hadnt", "wrong", "incorrect", "false", "untrue", "mistaken", "inaccurate",
        "erroneous", "except", "excluding", "instead", "unlike", "deny", "denies", "denied",
        "disagree", "refuted?", "doubt(?:ful)?", "hardly", "barely", "scarcely",
        r"(?:anything|all|everything) but", "negative", "kidding", "joking", "opposite",
        "misconception", "myth", r"claim(?:s|ed)?", r"rumou?red", "previously", "formerly",
        "lie", "lies", "lying", "bogus", "fake", "fakes", "faked", "fictional", "fiction",
        "hoax", "nay", "debunked", "disproved", "disproven", "invalid",
        # an event said not to have happened on the date
        "postponed", "cancelled", "canceled", "rescheduled", "delayed", "called off",
        "used to", "originally", "initially", "no longer", "anymore",
        # the negations of other languages written in Latin letters
        "pas", "nicht", "nein", r"kein(?:e|en|er)?", "non", "niet", "geen", "n\u00e3o", "nao",
        "nunca", "jamais", "nie", "nej", "ikke", "inte", "ei", "nem", "hayir"),
    ("negates it", r"[\u2260\u2262\u2249\u00ac\u2717\u2718\u274c\u274e\u26d4]|\U0001f6ab"
                   r"|!=|=/=|<>|<(?:s|del|strike)\b[^<>]*>"
                   r"|(?<=\d)[\u0334-\u0338\u20d2\u20e0\u20e5]"),  # struck through: 5̸, <s>5</s>
    _listed("compares or bounds it",
        "than", "less", "fewer", "more", "most", "least", "greater", "larger", "bigger",
        "smaller", "higher", "lower", r"exceed(?:s|ed|ing)?", "beyond", "between", "range",
        "ranging", "maximum", "minimum", "max", "upwards?", "plus", "later", "earlier",
        "prior", "onwards?", "latest", "earliest", "afterwards", "up to", "down to",
        "excess", r"(?:north|south|shy|short) of", r"(?:and|or) up", r"(?:up|down) from",
        r"(?:next|following|previous|preceding) (?:day|week|month|year)",
        r"(?:day|week|month|year)s? (?:after|before|later|earlier)", r"(?:week|month) of",
        "and counting", "nearest",
        r"as (?:many|much|few|little|high|low|long|far|large|small|big|early|late) as",
        r"(?:or|and) (?:before|after|above|below|over|under|beyond|so)"),
    ("compares or bounds it", r"[+\u2212" + _DASHES + r"]\s*\d+\s*(?:days?|weeks?|months?|years?)\b"),
    ("compares or bounds it", r"[<>\u2264\u2265\u2a7d\u2a7e\u2266\u2267\u2272\u2273\u226a\u226b"
                           r"\uff1c\uff1e]|(?<=\d)\+(?!\d)"),
    # a preposition that bounds the figure that follows it (two words at most between)
    ("compares or bounds it", r"(?P<q>" + _words(
        "over", "under", "above", "below", "beneath", "past", "within", "after", "before",
        "since", "until", "till", "til", "from") + r")(?:\W+[^\W\d]+){0,2}?\W*(?=\d)"),
    _listed("hedges it",
        "about", "around", "approx", "approximate", "approximately", "roughly", "nearly",
        "almost", "circa", r"estimated?", "estimates", "est", "likely", "unlikely",
        "probably", "probable", "possibly", "possible", "perhaps", "maybe", "might",
        "could", "would", "should", "think", "believe", "guess", "suppose", "assume",
        "assuming", r"expect(?:ed)?", "projected", "forecast", "predicted", r"seems?",
        r"appears?", "apparently", "presumably", "supposedly", "reportedly", "allegedly",
        "ish", "or so", "or thereabouts", "give or take", "close to", "near", "unsure",
        "uncertain", "unclear", "unknown", "if", "unless", "whether", "either",
        "somewhere", "something like", r"rounded?", r"some(?=\W*\d)", "unverified",
        "unconfirmed", r"tentative(?:ly)?", "preliminary", r"targets?", "goal", "planned",
        "scheduled", "due", "for example", "for instance", "such as",
        "hypothetically", "hypothetical", "theoretically", "theoretical", "in theory",
        "guessing", "guessed", "guesses", "imagine", "imagined", "pretend",
        "tops", "downwards?",
        "environ", "etwa", "ungef\u00e4hr", "aproximadamente", "cerca", "ongeveer"),
    ("hedges it", r"\be\.\s?g\."),
    ("hedges it", r"\bca?\.(?=\s*\W?\d)"),
    ("hedges it", r"(?-i:\bmay\b)|(?<=\d)[\s\-]*(?:odd|ish)\b|[~\u223c\u2248\u2243\u2245\u00b1\u2213?]"
               r"|\+\s*/?\s*[-\u2212]|[-\u2212]\s*/\s*\+"),
    _listed("re-scales it",
        "times", "fold", "twice", "thrice", r"doubled?", r"tripled?", r"quadrupled?",
        "half", "halved", "halves", "quarters?", "hundreds", "thousands", "millions",
        "billions", "trillions", "dozens", "percentage points?", r"per (?=\d)", "out of",
        "bc", "bce", "basis",
        r"per (?:hundred|thousand|million|billion|capita|head)",
        # powers, roots, logarithms and other functions of the figure
        "squared", "cubed", "factorial", "root", "roots", "log", "logs", "logarithm",
        "exponent", "exponential", "to the power", "power of", "inverse", "reciprocal",
        # fractions named by their denominator, scale words and their abbreviations
        r"(?:ten|hundred|thousand|million|billion|trillion|four|fif|six|seven|eigh|nin|"
        r"eleven|twelf|(?:thir|four|fif|six|seven|eigh|nine)teen|(?:twen|thir|for|fif|six|"
        r"seven|eigh|nine)tie)ths?", "thirds?", "halfs", "quadrillions?", "quintillions?",
        "sextillions?", r"milliards?", r"billiards?", r"lakhs?", "lacs?", r"crores?", "mio",
        "bil", "bill", "mil", "mill", "thou", "tril"),
    # an abbreviation with no vowel re-scales the number it follows, a function's name the
    # number it precedes (elsewhere such a string is no word: b 5 ln is no verdict's doubt)
    ("re-scales it", r"(?<=\d)\s*(?:mn|mln|bn|bln|tn|trn)\b"),
    ("re-scales it", r"\b(?:sqrt|cbrt|ln|lg|exp)\b\W{0,2}(?=\d)"),
    # a capital letter that abbreviates a scale (5 T, 5 G, 5 B: trillion, giga/billion)
    ("re-scales it", r"(?-i:(?<=\d)\s?(?:T|G|B|Bn|BN|Tn|TN|MN|MM|Mn)\b)"),
    ("re-scales it", r"[\u221a\u221b\u221c]|\be\s*\^"),  # a root sign, e^5
    ("re-scales it", r"(?<=\d)\s*\.{2,}\s*(?=\d)|\u2026"),  # 5..6, 5...6: a range
    ("re-scales it", r"(?<=\d)\s*(?:x\b|\u00d7)|\u00d7|(?<=\d)\s*(?:pp|p\.p\.|ppts?|ppm|ppb|ppt|grand|"
                  r"score|gross|myriad)\b|'000|\b000s\b"
                  r"|(?<=\d)[" + _SUPERSCRIPTS + r"]|(?<=\d)\s*(?:\^|\*\*)\s*[-+]?\d"
                  r"|(?<=\d):(?=\W?\d)"),
    # a dash not read as a sign: set apart from the number in a line (a minus? a dash?),
    # doubled, an em dash; at a line's start a hyphen and a space is a markdown bullet
    ("may be a minus sign", r"\b(?:below|under) zero\b|\bsub-?zero\b"),
    # a sign outside parentheses (-(-5)), a figure in parentheses (an accounting negative)
    ("may be a minus sign", r"[" + _DASHES + r"+]\s*\(|\(\s*\d+(?:[.,]\d+)*\s*\)"),
    ("may be a minus sign", r"(?<=[^\S\n])[" + _DASHES + r"]+\s+(?=\d)"
                            r"|(?m:^)[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]\s+(?=\d)"
                            r"|[" + _DASHES + r"]{2,}\s*(?=\d)|[\u2014\u2015]\s*(?=\d)"),
]
_DATE_PATTERNS: list[tuple[str, str]] = [
    # a date is bounded by more prepositions than a number (``by 2020-01-05``), and a date
    # written with its month first follows the preposition with a month name
    ("compares or bounds it", r"(?P<q>" + _words(
        "over", "under", "above", "below", "past", "within", "after", "before", "since",
        "until", "till", "til", "by", "from", "through", "thru", "as of", "starting",
        "beginning", "ending", "between") + r")(?:\W+[^\W\d]+){0,2}?\W*(?=\d|" + _MONTH + ")"),
]
_COMPILED = [(k, re.compile(p, re.IGNORECASE)) for k, p in _PATTERNS]
_WORD = re.compile(r"\w+")
_TAG = re.compile(r"</?(?!(?:s|del|strike)\b)[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>",
                  re.IGNORECASE)
"""An HTML tag (``<b>``, ``</b>``, ``<br/>``): markup, not a comparison; a struck-through
one (``<s>``, ``<del>``, ``<strike>``) negates what it holds."""
_INVISIBLE = re.compile(r"(?!^\ufeff)[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                        r"\u2066-\u206f\ufeff]")
_UNIT_LETTERS = frozenset("\u00b5\u03bc\u03a9\u2126")  # µ, μ, Ω, Ω: unit letters


def _foreign(char: str) -> bool:
    """Whether ``char`` is a letter of a script other than Latin (a Cyrillic ``о`` in
    ``nоt``, a word in Russian or Chinese): the word lists are English and Latin-lettered,
    so such a letter may hide a negation (``нет 5``); µ, μ and Ω are unit letters."""
    return (char.isalpha() and not char.isascii() and char not in _UNIT_LETTERS
            and not unicodedata.name(char, "").startswith("LATIN"))


"""Format characters that hide inside a word (``n\u200bot 5``): no word list can see
through them, so they are a qualifier of their own."""
_COMPILED_DATE = [(k, re.compile(p, re.IGNORECASE)) for k, p in _DATE_PATTERNS]


@dataclass(frozen=True)
class Qualifier:
    """One word or sign that qualifies the figure: what it does (``kind``) and the text."""

    kind: str
    text: str

    def key(self) -> tuple[str, str]:
        return self.kind, " ".join(self.text.lower().split())


def masked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each span (a number or a date it reads) replaced by as many ``9``s:
    the patterns still see a figure there, not the words it was written with."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = "9" * (end - start)
    return "".join(chars)


def qualifiers(text: str, *, date: bool = False, shown: str | None = None) -> list[Qualifier]:
    """Every qualifier in ``text`` (mask its numbers and dates first, :func:`masked`), in
    order; ``date``: also the prepositions that bound a date (``by``, ``from`` ...);
    ``shown``: the text before masking, which the qualifiers quote (same positions)."""
    shown = text if shown is None else shown
    text = _TAG.sub(lambda m: " " * len(m.group(0)), text)
    found: dict[tuple[int, int], Qualifier] = {}
    for m in _WORD.finditer(text):
        kind = _SIMPLE.get(m.group(0).lower())
        if kind is not None:
            found[m.span()] = Qualifier(kind, shown[m.start():m.end()])
    for m in _INVISIBLE.finditer(text):
        found[m.span()] = Qualifier("hides characters in it",
                                    f"U+{ord(m.group(0)):04X}")
    if not text.isascii():
        for m in _WORD.finditer(text):
            if not m.group(0).isascii() and any(_foreign(c) for c in m.group(0)):
                found[m.span()] = Qualifier(
                    "is in a script the qualifier lists do not read", shown[m.start():m.end()])
    for kind, pattern in _COMPILED + (_COMPILED_DATE if date else []):
        for m in pattern.finditer(text):
            span = m.span("q") if "q" in pattern.groupindex else m.span()
            quoted = shown[span[0]:span[1]].strip()
            if quoted and span not in found:
                found[span] = Qualifier(kind, quoted)
    return [found[span] for span in sorted(found, key=lambda span: (span[0], -span[1]))]


def unproven(response: str, reference: str = "", *, date: bool = False,
             shown: str | None = None) -> Qualifier | None:
    """The first qualifier of ``response`` that ``reference`` does not hold too (both texts
    already masked; ``shown``: the response before masking), or None: what keeps a rule
    from proving its verdict."""
    own = Counter(q.key() for q in qualifiers(reference, date=date)) if reference else Counter()
    for q in qualifiers(response, date=date, shown=shown):
        if own[q.key()]:
            own[q.key()] -= 1
            continue
        return q
    return None


def why(q: Qualifier) -> str:
    """A qualifier in words, for a decision's detail: ``'not' negates it``."""
    return f"{q.text!r} {q.kind}"
