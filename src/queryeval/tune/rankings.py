"""Precomputed rankings for ``queryeval tune`` (retriever-independent input).

Shape (JSON)::

    {
      "fields": {
        "item": {
          "cost": 4,              # optional: tokens per retrieved value
          "n_values": 120,        # optional: number of values the field has (max N)
          "models": {             # listing order matters: the first wins MRR ties
            "bm25":  [["Carrots", "Onions", ...], ...],
            "minilm": [[...], ...]
          }
        }
      }
    }

``models[m]`` holds one ranked list of the field's values per question, in the evaluation
table's order, ideally the full ranking (every value) so that one ranking serves every N.
Missing ``cost``: the largest cl100k token count among the field's values in the data table
when one is given, else among the values found in the rankings. Missing ``n_values``: the data
table's count of distinct values, else the longest ranking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from queryeval.errors import InputError
from queryeval.metrics.fields import ground_truth_ranks
from queryeval.tune.pipeline import FieldInput


def _expect(cond: bool, message: str, path: Path, where: str) -> None:
    if not cond:
        raise InputError(message, path=path, field=where)


def load_rankings(path: str | Path) -> dict:
    """Parse and shape-check the rankings file; returns the ``fields`` mapping."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    _expect(isinstance(data, dict) and isinstance(data.get("fields"), dict),
            "expected an object with a 'fields' object", path, "fields")
    for name, spec in data["fields"].items():
        where = f"fields.{name}"
        _expect(isinstance(spec, dict), "expected an object", path, where)
        models = spec.get("models")
        _expect(isinstance(models, dict) and bool(models), "expected a non-empty 'models' object",
                path, f"{where}.models")
        for model, lists in models.items():
            mwhere = f"{where}.models.{model}"
            _expect(isinstance(lists, list), "expected a list of rankings", path, mwhere)
            for q, ranking in enumerate(lists):
                _expect(isinstance(ranking, list) and all(isinstance(v, str) for v in ranking),
                        "expected a list of strings", path, f"{mwhere}[{q}]")
        for key in ("cost", "n_values"):
            if key in spec:
                value = spec[key]
                _expect(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                        "expected an integer >= 0", path, f"{where}.{key}")
    return data["fields"]


def field_inputs(
    rankings: Mapping[str, dict],
    ground_truth: Mapping[str, Sequence[Sequence[str]]],
    path: str | Path,
    data_values: Mapping[str, Sequence[str]] | None = None,
    cost_texts: Mapping[str, Sequence[str]] | None = None,
) -> list[FieldInput]:
    """Turn rankings + ground truth into tuner input, one :class:`FieldInput` per evaluated field.

    A field's cost is the file's ``cost``, else the largest token count over ``cost_texts``
    (the data table's documents, with ``--cost-from document``), the data table's values, or
    the values in the rankings, in that order."""
    from queryeval.tokens import field_token_cost

    path = Path(path)
    inputs: list[FieldInput] = []
    for name, truths in ground_truth.items():
        spec = rankings.get(name)
        if spec is None:
            raise InputError(f"no rankings for evaluated field {name!r}", path=path,
                             field="fields")
        ranks_by_model = {}
        for model, lists in spec["models"].items():
            if len(lists) != len(truths):
                raise InputError(f"{len(lists)} rankings for {len(truths)} questions", path=path,
                                 field=f"fields.{name}.models.{model}")
            ranks_by_model[model] = [ground_truth_ranks(g, r) for r, g in
                                     zip(lists, truths, strict=True)]
        values = None
        if data_values is not None and name in data_values:
            values = list(data_values[name])
        if "cost" in spec:
            cost = spec["cost"]
        elif cost_texts is not None and name in cost_texts:
            cost = field_token_cost(list(cost_texts[name]))
        else:
            pool = values if values is not None else list(
                dict.fromkeys(v for lists in spec["models"].values() for r in lists for v in r)
            )
            cost = field_token_cost(pool)
        if "n_values" in spec:
            n_values = spec["n_values"]
        elif values is not None:
            n_values = len(values)
        else:
            n_values = max((len(r) for lists in spec["models"].values() for r in lists), default=0)
        inputs.append(FieldInput(name=name, cost=cost, max_n=n_values, ranks_by_model=ranks_by_model))
    return inputs
