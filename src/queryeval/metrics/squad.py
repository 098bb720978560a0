"""SQuAD v1.1's answer normalisation, exact match and token F1 (the official evaluation
script's rules), shared by every task that scores a free-text answer against a reference.

* ``normalize_answer``: lower case, punctuation removed, the articles ``a``/``an``/``the``
  removed as whole words, whitespace collapsed;
* ``exact_match``: 1.0 when the normalised texts are equal;
* ``token_f1``: the F1 of the bags of normalised tokens (an empty side: 1.0 when both are
  empty, else 0.0, as SQuAD 2.0's script does for no-answer questions);
* with several references, each figure is the maximum over them (SQuAD's ``metric_max``).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_over(metric, prediction: str, references: Iterable[str]) -> float:
    """The best value of ``metric`` over several references (0.0 when there are none)."""
    return max((metric(prediction, r) for r in references), default=0.0)
