"""SQuAD's answer normalisation, exact match and token F1, as the official evaluation scripts
compute them, shared by every task that scores a free-text answer against a reference.
Every function takes the reference first, then the prediction (the official scripts' order
is the other way round; exact match and token F1 are symmetric, so no figure depends on it).

Two versions (task option ``squad``, ``--option squad=v1.1|v2.0``); **v2.0 is the default**:

* ``normalize_answer`` (both): lower case, punctuation removed, the articles ``a``/``an``/
  ``the`` removed as whole words, whitespace collapsed;
* ``exact_match`` (both): 1.0 when the normalised texts are equal (``'a'`` and ``'The'``
  are both empty, so equal);
* ``token_f1``: the F1 of the bags of normalised tokens. **v2.0** (``compute_f1`` of
  ``evaluate-v2.0.py``): an empty side scores 1.0 when both are empty, else 0.0 (its rule
  for no-answer questions), so ``token_f1('The', 'a') == 1.0``. **v1.1** (``f1_score`` of
  ``evaluate-v1.1.py``): no common token scores 0.0, both sides empty included, so
  ``token_f1('The', 'a', version='v1.1') == 0.0``;
* several references (:func:`squad_scores`): each figure is the maximum over them
  (``metric_max_over_ground_truths``). **v1.1** keeps every reference. **v2.0** first drops
  the references that normalise to the empty text (``get_raw_scores``: ``if
  normalize_answer(a['text'])``) and, when none is left, scores against the one reference
  ``''``. With no references at all v1.1's script fails; here both figures are then 0.0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

SquadVersion = Literal["v1.1", "v2.0"]
DEFAULT_VERSION: SquadVersion = "v2.0"


def _version_name(value: Any) -> Any:
    """``1.1``, ``"1.1"``, ``2``, ``"2.0"`` (``--option squad=1.1`` reads a number) name the
    versions too; anything else is left for the validation to refuse."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        text = str(value).strip().lower().removeprefix("v")
        return {"1.1": "v1.1", "2": "v2.0", "2.0": "v2.0"}.get(text, value)
    return value


SquadOption = Annotated[SquadVersion, BeforeValidator(_version_name)]
"""A task option naming the SQuAD version (``v1.1`` or ``v2.0``; ``1.1``, ``2.0`` too)."""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(reference: str, prediction: str) -> float:
    """1.0 when the normalised texts are equal (the same in v1.1 and v2.0)."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(reference: str, prediction: str, version: SquadVersion = DEFAULT_VERSION) -> float:
    """The token F1 of one pair under ``version`` (see the module docstring)."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    if version == "v2.0" and (not pred or not ref):
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def scored_references(references: Iterable[str],
                      version: SquadVersion = DEFAULT_VERSION) -> list[str]:
    """The references a version scores against: v1.1 all of them; v2.0 those that do not
    normalise to the empty text, or ``['']`` when none is left."""
    refs = list(references)
    if version == "v1.1":
        return refs
    return [r for r in refs if normalize_answer(r)] or [""]


def squad_scores(references: Sequence[str], prediction: str,
                 version: SquadVersion = DEFAULT_VERSION) -> tuple[float, float]:
    """``(exact match, token F1)`` of ``prediction``: the best over the references the
    version keeps (:func:`scored_references`); ``(0.0, 0.0)`` with no reference given."""
    if not references:
        return 0.0, 0.0
    refs = scored_references(references, version)
    return (max(exact_match(r, prediction) for r in refs),
            max(token_f1(r, prediction, version) for r in refs))

