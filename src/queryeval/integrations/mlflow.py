"""``--mlflow``: a finished run logged to an MLflow tracking server or store (extra ``mlflow``:
mlflow-skinny is enough for a server and for a local file store; a ``sqlite:///`` store needs
the full ``mlflow`` package).

One MLflow run per queryeval run, read from the run log (one source of truth):
* parameters: the task, the label, the batch id, the suite, the system or responses, the
  repeats and each task option (``option.NAME``);
* metrics: every number of ``overall_metrics`` and each group's (``group.KIND.VALUE.NAME``),
  and with repeats the ``repeats.NAME`` figures; a name MLflow refuses is spelled with
  ``@`` as ``_at_``, ``^`` as ``_hat_`` and any other character outside MLflow's set as
  ``_`` (the metrics file, logged as an artifact, keeps the original names);
* artifacts: the run log's files (batch, results JSONL/CSV, metrics, repeats CSV) and its
  reports (xlsx, HTML, exports) under ``queryeval/``, and ``queryeval/cases.json``: one row
  per case with its verdict, pass rate and figures (the run model's).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from queryeval.errors import ConfigError
from queryeval.report.gates import numeric_keys
from queryeval.run.results import RunResults

_BAD = re.compile(r"[^A-Za-z0-9_\-. :/]")


def metric_name(name: str) -> str:
    """A figure's name as MLflow accepts it (see the module's doc)."""
    return _BAD.sub("_", name.replace("@", "_at_").replace("^", "_hat_"))


def _numbers(prefix: str, values: Mapping) -> dict[str, float]:
    out = {}
    for key in numeric_keys(values):
        try:  # a damaged metrics file's 400-digit integer overflows a float: not logged
            v = None if values[key] is None else float(values[key])
        except OverflowError:
            continue
        if v is not None and math.isfinite(v):
            out[metric_name(prefix + str(key))] = v
    return out


def run_metrics(results: RunResults) -> dict[str, float]:
    """What :func:`log_run` logs as metrics, read from the metrics file."""
    doc = results.metrics or {}
    out = _numbers("", doc.get("overall_metrics") or {})
    for kind, groups in (doc.get("group_metrics") or {}).items():
        if isinstance(groups, Mapping):
            for value, figures in groups.items():
                if isinstance(figures, Mapping):
                    out.update(_numbers(f"group.{kind}.{value}.", figures))
    rep = (doc.get("repeats") or {}).get("overall") or {}
    out.update(_numbers("repeats.", {k: v.get("mean") for k, v in rep.items()
                                      if isinstance(v, Mapping)}))
    return out


def case_rows(results: RunResults) -> list[dict]:
    """``cases.json``: per case its verdict, attempts, passes, pass rate and figures."""
    return [{"case_id": c.case_id, "name": c.name, "verdict": c.verdict,
             "attempts": len(c.attempts), "passes": c.passes, "pass_rate": c.pass_rate,
             "metrics": dict(c.means)} for c in results.cases]


def log_run(run: RunResults | Any, *, tracking_uri: str | None = None,
            experiment: str = "queryeval", run_name: str | None = None) -> str:
    """Log ``run`` (a :class:`RunResults`, a ``qe.Run`` or a path) to MLflow; return the
    MLflow run id. ``tracking_uri``: default ``MLFLOW_TRACKING_URI`` (MLflow's own rule)."""
    try:
        from mlflow.entities import Metric, Param
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ConfigError("--mlflow needs the mlflow extra: pip install 'queryeval[mlflow]'") from None
    import time

    results = RunResults.open(getattr(run, "results", run))
    cfg = results.config
    params = {"task": results.task_name, "label": results.label, "batch_id": results.batch_id,
              "suite": cfg.get("suite"), "system": cfg.get("system"),
              "responses": cfg.get("responses"), "repeats": results.repeats,
              **{f"option.{k}": v for k, v in results.task_options.items()}}
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        found = client.get_experiment_by_name(experiment)
        exp_id = found.experiment_id if found else client.create_experiment(experiment)
        mrun = client.create_run(exp_id, run_name=run_name or results.label, tags={
            "queryeval.batch_id": results.batch_id, "queryeval.task": str(results.task_name)})
        rid = mrun.info.run_id
        now = int(time.time() * 1000)
        client.log_batch(rid, params=[Param(metric_name(k), str(v)[:6000])
                                      for k, v in params.items() if v is not None])
        metrics = [Metric(k, v, now, 0) for k, v in run_metrics(results).items()]
        for i in range(0, len(metrics), 1000):  # MLflow's batch limit
            client.log_batch(rid, metrics=metrics[i:i + 1000])
        paths = results.log.paths
        folder = paths.folder
        for p in sorted(folder.glob(f"*_{results.batch_id}.*")):
            client.log_artifact(rid, str(p), "queryeval")
        client.log_dict(rid, {"batch_id": results.batch_id, "cases": case_rows(results)},
                        "queryeval/cases.json")
        client.set_terminated(rid)
    except MlflowException as exc:
        first = str(exc.message if hasattr(exc, "message") else exc).splitlines()[0]
        raise ConfigError(f"--mlflow: {first}") from None
    return rid
