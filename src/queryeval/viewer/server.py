"""The ``queryeval view`` server: a read-only Starlette app over one folder of run logs.

Every run is found by walking the folder (symbolic links are not followed, and a run whose
files resolve outside the folder is left out); a run is addressed by its batch id only, looked
up in that index, so no request path ever becomes a file path. The page and its two assets are
package data served from memory; the data comes from a JSON API (``/api/runs``,
``/api/runs/{id}``, ``/api/runs/{id}/cases?offset=&limit=&q=&status=&sort=&desc=``,
``/api/runs/{id}/cases/{case_id}``, ``/api/compare?run=…&run=…``). The browser renders
every text with ``textContent`` under a strict Content-Security-Policy. See docs/viewer.md.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
MAX_LIMIT = 500
SCAN_SECONDS = 2.0
"""How long one walk of the folder is reused (a page asks several times in a row)."""
CACHED_RUNS = 8
"""Loaded runs kept in memory (least recently used dropped first)."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_warning(host: str) -> str | None:
    """The warning ``queryeval view`` prints for a non-loopback ``--host`` (None otherwise)."""
    if is_loopback(host):
        return None
    return (f"warning: serving on {host}, not only this machine: anyone who can reach it can "
            "read every run under the folder (no authentication)")


def _asset(name: str) -> bytes:
    return resources.files("queryeval.viewer").joinpath("static", name).read_bytes()


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


@dataclass
class Entry:
    batch_id: str
    path: Path


def scan(root: Path) -> dict[str, Entry]:
    """Every ``batch_<id>.json`` under ``root`` (symlinked folders are not entered; a batch
    whose file or results resolve outside ``root`` is left out)."""
    real = root.resolve()
    out: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not (name.startswith("batch_") and name.endswith(".json")):
                continue
            path = Path(folder) / name
            batch_id = name[len("batch_"):-len(".json")]
            beside = [path, path.with_name(f"results_{batch_id}.jsonl"),
                      path.with_name(f"metrics_{batch_id}.json")]
            if all(_inside(p, real) for p in beside if p.exists() or p.is_symlink()):
                out.setdefault(batch_id, Entry(batch_id, path))
    return out


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(_finite(data), status_code=status)


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Viewer:
    """The index of runs and a cache of the loaded ones (reloaded when a file changes)."""

    def __init__(self, root: Path, *, resamples: int = 1000) -> None:
        self.root = Path(root)
        self.resamples = resamples
        self._lock = threading.Lock()
        self._scanned: tuple[float, dict[str, Entry]] | None = None
        self._cache: OrderedDict[str, tuple[tuple, Any, list[dict]]] = OrderedDict()

    def entries(self) -> dict[str, Entry]:
        """The folder's runs, walked again at most every :data:`SCAN_SECONDS`."""
        now = time.monotonic()
        with self._lock:
            if self._scanned is not None and now - self._scanned[0] < SCAN_SECONDS:
                return self._scanned[1]
        found = scan(self.root)
        with self._lock:
            self._scanned = (now, found)
        return found

    def entry(self, batch_id: str) -> Entry | None:
        return self.entries().get(batch_id)

    @staticmethod
    def _stamp(entry: Entry) -> tuple:
        out = []
        for p in (entry.path, entry.path.with_name(f"results_{entry.batch_id}.jsonl"),
                  entry.path.with_name(f"metrics_{entry.batch_id}.json")):
            try:
                st = p.stat()
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def load(self, entry: Entry) -> tuple[Any, list[dict]]:
        """(LoadedRun, one row per case: id, name, status, tags, per-case metrics)."""
        from queryeval.report.compare import case_metrics, load_run

        stamp = self._stamp(entry)
        with self._lock:
            hit = self._cache.get(entry.batch_id)
            if hit and hit[0] == stamp:
                self._cache.move_to_end(entry.batch_id)
                return hit[1], hit[2]
        run = load_run(entry.path)
        rows = [{"case_id": str(r.get("case_id")), "name": r.get("name"),
                 "status": r.get("status"), "tags": [str(t) for t in r.get("tags") or []],
                 "metrics": case_metrics(run.task, r), "index": k}
                for k, r in enumerate(run.records)]
        with self._lock:
            self._cache[entry.batch_id] = (stamp, run, rows)
            self._cache.move_to_end(entry.batch_id)
            while len(self._cache) > CACHED_RUNS:
                self._cache.popitem(last=False)
        return run, rows

    def summary(self, entry: Entry) -> dict:
        """One index row, read from the batch and metrics files only (cheap)."""
        try:
            batch = json.loads(entry.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return {"id": entry.batch_id, "path": str(entry.path.relative_to(self.root)),
                    "status": "unreadable", "error": str(exc)}
        cfg = batch.get("evaluation_config") or {}
        from queryeval.report.compare_nway import run_label

        metrics_path = entry.path.with_name(f"metrics_{entry.batch_id}.json")
        headline: dict[str, Any] = {}
        if metrics_path.is_file():
            try:
                overall = json.loads(metrics_path.read_text(encoding="utf-8")).get(
                    "overall_metrics") or {}
                headline = {k: v for k, v in overall.items()
                            if isinstance(v, (int, float)) and not isinstance(v, bool)}
            except (OSError, ValueError):
                headline = {}
        total = cfg.get("num_samples") or (batch.get("suite_info") or {}).get("cases")
        done = total if batch.get("status") == "complete" and total else _count_lines(
            entry.path.with_name(f"results_{entry.batch_id}.jsonl"))
        suite = cfg.get("suite") or (batch.get("suite_info") or {}).get("path") or ""
        return {
            "id": entry.batch_id, "path": entry.path.relative_to(self.root).as_posix(),
            "task": batch.get("task"), "suite": Path(str(suite)).name,
            "system": run_label({"system": cfg.get("system"), "responses": cfg.get("responses"),
                                 "batch_id": entry.batch_id}),
            "date": batch.get("timestamp"), "status": batch.get("status"),
            "cases": total, "done": done, "metrics": headline,
        }


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return 0


def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw[:40]!r}") from None
    return max(low, min(high, value))


def create_app(root: str | Path, *, resamples: int = 1000, host: str = "127.0.0.1") -> Starlette:
    """The viewer app over the run folder ``root`` (read-only; GET only)."""
    root = Path(root)
    if not root.is_dir():
        from queryeval.errors import ConfigError

        raise ConfigError(f"{root}: not a folder of runs")
    viewer = Viewer(root, resamples=resamples)
    page = _asset("index.html")
    assets = {name: _asset(name) for name in ASSETS}
    headers = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
               "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

    def respond(resp: Response) -> Response:
        resp.headers.update(headers)
        return resp

    async def index(request: Request) -> Response:
        return respond(Response(page, media_type="text/html; charset=utf-8"))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return respond(_err(404, "no such asset"))
        return respond(Response(assets[name], media_type=ASSETS[name]))

    async def runs(request: Request) -> Response:
        rows = [viewer.summary(e) for e in viewer.entries().values()]
        rows.sort(key=lambda r: str(r.get("date") or ""), reverse=True)
        return respond(_json({"root": str(root), "runs": rows}))

    def _entry(request: Request) -> Entry | None:
        return viewer.entry(request.path_params["run_id"])

    async def run(request: Request) -> Response:
        entry = _entry(request)
        if entry is None:
            return respond(_err(404, "no such run"))
        loaded, rows = viewer.load(entry)
        return respond(_json(_run_doc(viewer, entry, loaded, rows)))

    async def cases(request: Request) -> Response:
        entry = _entry(request)
        if entry is None:
            return respond(_err(404, "no such run"))
        try:
            offset = _int(request, "offset", 0, 0, 10**12)
            limit = _int(request, "limit", 50, 1, MAX_LIMIT)
        except ValueError as exc:
            return respond(_err(400, str(exc)))
        _, rows = viewer.load(entry)
        q = request.query_params.get("q", "").lower()
        status = request.query_params.get("status", "")
        sort = request.query_params.get("sort", "")
        desc = request.query_params.get("desc", "") in ("1", "true")
        picked = [r for r in rows if (not status or r["status"] == status) and (
            not q or q in r["case_id"].lower() or q in str(r["name"] or "").lower()
            or any(q in t.lower() for t in r["tags"]))]
        if sort:
            def key(r: dict) -> tuple:
                v = r["metrics"].get(sort) if sort not in ("case_id", "name", "status") else r[sort]
                return (v is None, v if isinstance(v, (int, float)) else str(v or ""))
            present = [r for r in picked if key(r)[0] is False]
            absent = [r for r in picked if key(r)[0] is True]
            picked = sorted(present, key=key, reverse=desc) + absent
        return respond(_json({"total": len(rows), "matched": len(picked), "offset": offset,
                              "limit": limit, "rows": picked[offset:offset + limit]}))

    async def case(request: Request) -> Response:
        entry = _entry(request)
        if entry is None:
            return respond(_err(404, "no such run"))
        loaded, rows = viewer.load(entry)
        wanted = request.path_params["case_id"]
        for r, rec in zip(rows, loaded.records, strict=True):
            if r["case_id"] == wanted:
                return respond(_json({"run": entry.batch_id, "row": r, "record": rec}))
        return respond(_err(404, "no such case"))

    async def compare(request: Request) -> Response:
        ids = request.query_params.getlist("run")
        pairs = request.query_params.get("pairs", "baseline")
        entries = [viewer.entry(i) for i in ids]
        if len(ids) < 2 or any(e is None for e in entries):
            return respond(_err(404 if len(ids) >= 2 else 400,
                                "pass two or more known runs (?run=ID&run=ID)"))
        from queryeval.errors import QueryevalError
        from queryeval.report.compare_nway import compare_many

        try:
            comp = compare_many([viewer.load(e)[0] for e in entries],  # type: ignore[union-attr]
                                pairs="all" if pairs == "all" else "baseline",
                                resamples=viewer.resamples)
        except QueryevalError as exc:
            return respond(_err(400, str(exc)))
        doc = comp.to_dict()
        doc["run_ids"] = ids
        return respond(_json(doc))

    async def not_allowed(request: Request) -> Response:
        return respond(_err(405, "read-only"))

    routes = [
        Route("/", index, methods=["GET", "HEAD"]),
        Route("/static/{name}", static, methods=["GET", "HEAD"]),
        Route("/api/runs", runs, methods=["GET"]),
        Route("/api/runs/{run_id}", run, methods=["GET"]),
        Route("/api/runs/{run_id}/cases", cases, methods=["GET"]),
        Route("/api/runs/{run_id}/cases/{case_id:path}", case, methods=["GET"]),
        Route("/api/compare", compare, methods=["GET"]),
    ]
    middleware = []
    if is_loopback(host):  # a page on another site cannot reach us by DNS rebinding
        middleware.append(Middleware(TrustedHostMiddleware,
                                     allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"]))

    async def not_found(request: Request, exc: Exception) -> Response:
        code = getattr(exc, "status_code", 404)
        return respond(_err(code, "read-only" if code == 405 else "not found"))

    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={404: not_found, 405: not_found})


def _run_doc(viewer: Viewer, entry: Entry, loaded: Any, rows: list[dict]) -> dict:
    """Batch info, overall metrics with a bootstrap CI per per-case metric, groups."""
    from queryeval.report import stats

    summary = viewer.summary(entry)
    names: list[str] = []
    for r in rows:
        names += [k for k in r["metrics"] if k not in names]
    cis = []
    for m in names:
        vals = [r["metrics"][m] for r in rows if m in r["metrics"]]
        ci = stats.bootstrap_ci(vals, resamples=viewer.resamples, seed=0)
        cis.append({"metric": m, "mean": ci.mean, "low": ci.low, "high": ci.high, "n": ci.n})
    metrics = loaded.metrics or {}
    groups = {}
    for key, value in metrics.items():
        if key == "group_metrics" and isinstance(value, dict):
            groups.update({k: v for k, v in value.items() if isinstance(v, dict)})
        elif key.endswith("_metrics") and key != "overall_metrics" and isinstance(value, dict):
            groups.setdefault(key[: -len("_metrics")], value)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    return {**summary, "overall": metrics.get("overall_metrics") or {}, "case_metrics": cis,
            "metric_names": names, "groups": groups, "statuses": statuses,
            "config": loaded.batch.get("evaluation_config") or {}}
