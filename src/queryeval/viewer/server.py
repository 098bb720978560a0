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


MAX_COMPARE = 8
"""Most runs in one ``/api/compare`` (each adds a column and pairwise tests)."""


class Unreadable(Exception):
    """A run that cannot be shown: its reason is listed in the index and returned as a 422."""


def _files(entry: Entry) -> list[Path]:
    """Every file the viewer opens for a run: batch, results (JSONL and CSV), metrics."""
    d, i = entry.path.parent, entry.batch_id
    return [entry.path, d / f"results_{i}.jsonl", d / f"results_{i}.csv", d / f"metrics_{i}.json"]


def scan(root: Path) -> dict[str, Entry]:
    """Every ``batch_<id>.json`` under ``root`` (symlinked folders are not entered; a batch
    any of whose files (batch, results JSONL/CSV, metrics) resolves outside ``root`` is left
    out)."""
    real = root.resolve()
    out: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not (name.startswith("batch_") and name.endswith(".json")):
                continue
            path = Path(folder) / name
            entry = Entry(name[len("batch_"):-len(".json")], path)
            if all(_inside(p, real) for p in _files(entry) if p.exists() or p.is_symlink()):
                out.setdefault(entry.batch_id, entry)
    return out


def read_batch(entry: Entry, root: Path) -> dict:
    """The batch document after checking the run's files: each one present resolves inside
    ``root`` and is a regular file (never a FIFO or device: nothing here can block), and the
    batch's own ``batch_id`` is the one in its file name (the id that names the files
    :func:`queryeval.report.compare.load_run` opens). Raises :class:`Unreadable`."""
    from queryeval.errors import QueryevalError
    from queryeval.io.files import check_input, read_input_bytes

    real = root.resolve()
    for p in _files(entry):
        if not (p.exists() or p.is_symlink()):
            continue
        if not _inside(p, real):
            raise Unreadable(f"{p.name} resolves outside the folder")
        try:
            check_input(p, "responses")
        except QueryevalError as exc:
            raise Unreadable(_reason(exc).replace(f"{p}:", f"{p.name}:")) from None
    try:
        raw = read_input_bytes(entry.path, "suite")
        batch = json.loads(raw.decode("utf-8"))
    except QueryevalError as exc:
        raise Unreadable(_reason(exc).replace(f"{entry.path}:", f"{entry.path.name}:")) from None
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{entry.path.name}: not JSON: {_reason(exc)}") from None
    if not isinstance(batch, dict):
        raise Unreadable(f"{entry.path.name}: a JSON {type(batch).__name__}, not an object")
    if batch.get("batch_id") != entry.batch_id:
        raise Unreadable(f"{entry.path.name}: batch_id {str(batch.get('batch_id'))[:60]!r} "
                         "differs from the file name")
    for key in ("evaluation_config", "suite_info"):
        if not isinstance(batch.get(key, {}), (dict, type(None))):
            raise Unreadable(f"{entry.path.name}: {key} is not an object")
    return batch


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _text(v: Any) -> str | None:
    """A batch field shown as text (None stays None; a number or object becomes its JSON)."""
    if v is None or isinstance(v, str):
        return v
    try:
        return json.dumps(_finite(v), ensure_ascii=False)[:200]
    except (TypeError, ValueError):
        return str(v)[:200]


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
        for p in _files(entry):
            try:
                st = p.stat()
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def load(self, entry: Entry) -> tuple[Any, list[dict]]:
        """(LoadedRun, one row per case: id, name, status, tags, per-case metrics). Raises
        :class:`Unreadable` for a run whose files are not a readable run log."""
        from queryeval.errors import QueryevalError
        from queryeval.report.compare import case_metrics, load_run

        stamp = self._stamp(entry)
        with self._lock:
            hit = self._cache.get(entry.batch_id)
            if hit and hit[0] == stamp:
                self._cache.move_to_end(entry.batch_id)
                return hit[1], hit[2]
        read_batch(entry, self.root)  # every file checked before load_run opens it
        try:
            run = load_run(entry.path)
            records = run.records  # read here: a bad results file is this run's reason
        except QueryevalError as exc:
            raise Unreadable(_reason(exc)) from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise Unreadable(f"results_{entry.batch_id}.jsonl: {_reason(exc)}") from None
        rows = []
        for k, r in enumerate(records):
            if not isinstance(r, dict) or r.get("case_id") is None:
                raise Unreadable(f"results_{entry.batch_id}.jsonl: record {k + 1} is not an "
                                 "object with a case_id")
            try:
                metrics = case_metrics(run.task, r)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise Unreadable(f"results_{entry.batch_id}.jsonl: case "
                                 f"{str(r['case_id'])[:60]!r}: {_reason(exc)}") from None
            tags = r.get("tags")
            rows.append({"case_id": str(r["case_id"]), "name": _text(r.get("name")),
                         "status": _text(r.get("status")),
                         "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
                         "metrics": metrics, "index": k})
        with self._lock:
            self._cache[entry.batch_id] = (stamp, run, rows)
            self._cache.move_to_end(entry.batch_id)
            while len(self._cache) > CACHED_RUNS:
                self._cache.popitem(last=False)
        return run, rows

    def summary(self, entry: Entry) -> dict:
        """One index row, read from the batch and metrics files only (cheap); a run that
        cannot be read is a row with ``status: "unreadable"`` and its ``error``."""
        rel = entry.path.relative_to(self.root).as_posix()
        try:
            batch = read_batch(entry, self.root)
        except Unreadable as exc:
            return {"id": entry.batch_id, "path": rel, "status": "unreadable",
                    "error": str(exc), "metrics": {}}
        cfg = batch.get("evaluation_config") or {}
        opts = cfg.get("task_options") if isinstance(cfg.get("task_options"), dict) else {}
        metrics_path = entry.path.with_name(f"metrics_{entry.batch_id}.json")
        headline: dict[str, Any] = {}
        if metrics_path.is_file():
            from queryeval.io.files import read_input_bytes

            try:
                doc = json.loads(read_input_bytes(metrics_path, "suite").decode("utf-8"))
                overall = doc.get("overall_metrics") if isinstance(doc, dict) else None
                headline = {str(k): v for k, v in (overall or {}).items()
                            if isinstance(v, (int, float)) and not isinstance(v, bool)}
            except (Exception, RecursionError):  # noqa: BLE001 - a bad metrics file: no figures
                headline = {}
        k = _top_k(opts)
        if "recall_at_k" in headline and k is not None:  # say which k
            value = headline.pop("recall_at_k")
            headline.setdefault(f"recall@{k}", value)
        # quality figures first (the page shows the first few); timings last
        headline = dict(sorted(headline.items(), key=lambda kv: "time" in kv[0]))
        suite_info = batch.get("suite_info") or {}
        total = cfg.get("num_samples") or suite_info.get("cases")
        total = total if isinstance(total, int) and not isinstance(total, bool) else None
        done = total if batch.get("status") == "complete" and total else _count_lines(
            entry.path.with_name(f"results_{entry.batch_id}.jsonl"))
        suite = cfg.get("suite") or suite_info.get("path") or ""
        system = _system(batch, cfg, opts, entry.batch_id)
        if batch.get("derived_from") is not None and k is not None:
            system += f" (derived, k={k})"
        return {
            "id": entry.batch_id, "path": rel,
            "task": _text(batch.get("task")), "suite": Path(str(suite)).name,
            "system": system, "label": _label(batch, cfg), "date": _text(batch.get("timestamp")),
            "status": _text(batch.get("status")), "cases": total, "done": done,
            "metrics": headline, "derived_from": _text(batch.get("derived_from")),
        }


def _top_k(opts: dict) -> int | None:
    """The k a retrieval run is scored at (its largest ``k`` option), else None."""
    k = opts.get("k")
    ks = k if isinstance(k, list) else [k]
    ks = [x for x in ks if isinstance(x, int) and not isinstance(x, bool)]
    return max(ks) if ks else None


def _system(batch: dict, cfg: dict, opts: dict, batch_id: str) -> str:
    """The system as the HTML report names it: ``--system``, the responses file, else the
    task's built-in system (``built-in: bm25``)."""
    from queryeval.report.compare_nway import run_label

    if cfg.get("system") or cfg.get("responses"):
        return run_label({"system": cfg.get("system"), "responses": cfg.get("responses"),
                          "batch_id": batch_id})
    label = None
    try:
        from queryeval.tasks.base import get_task

        hook = getattr(get_task(str(batch.get("task") or ""), opts), "system_label", None)
        label = hook() if callable(hook) else None
    except Exception:  # noqa: BLE001 - a task not installed or bad options: no label
        label = None
    return f"built-in: {label}" if label else "built-in"


def _label(batch: dict, cfg: dict) -> str:
    """The run's label as stored in its batch (``--name`` or the default of
    :func:`queryeval.run.results.default_label`, read the same way by every surface)."""
    from queryeval.run.results import default_label

    stored = batch.get("label")
    return stored if isinstance(stored, str) and stored else default_label(cfg)


def _count_lines(path: Path) -> int:
    from queryeval.errors import QueryevalError
    from queryeval.io.files import open_input

    try:
        with open_input(path, "responses") as fh:
            return sum(1 for line in fh if line.strip())
    except (OSError, QueryevalError):
        return 0


def _sorted(rows: list[dict], sort: str, desc: bool) -> list[dict]:
    """Rows by a column or per-case metric: numbers before text (each kind in its own order,
    so mixed types never compare), rows without the value last whatever the direction."""
    def value(r: dict) -> Any:
        return r[sort] if sort in ("case_id", "name", "status") else r["metrics"].get(sort)

    def key(r: dict) -> tuple:
        v = value(r)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return (0, float(v), "")
        return (1, 0.0, str(v))

    present = [r for r in rows if value(r) is not None]
    absent = [r for r in rows if value(r) is None]
    return sorted(present, key=key, reverse=desc) + absent


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

    def runs(request: Request) -> Response:
        rows = [viewer.summary(e) for e in viewer.entries().values()]
        rows.sort(key=lambda r: str(r.get("date") or ""), reverse=True)
        return respond(_json({"root": str(root), "runs": rows}))

    def _opened(request: Request) -> tuple[Entry, Any, list] | Response:
        """The run the path names, loaded; or the error response (404 unknown, 422
        unreadable)."""
        entry = viewer.entry(request.path_params["run_id"])
        if entry is None:
            return respond(_err(404, "no such run"))
        try:
            loaded, rows = viewer.load(entry)
        except Unreadable as exc:
            return respond(_err(422, f"run {entry.batch_id} is unreadable: {exc}"))
        return entry, loaded, rows

    def run(request: Request) -> Response:
        opened = _opened(request)
        if isinstance(opened, Response):
            return opened
        entry, loaded, rows = opened
        return respond(_json(_run_doc(viewer, entry, loaded, rows)))

    def cases(request: Request) -> Response:
        if viewer.entry(request.path_params["run_id"]) is None:
            return respond(_err(404, "no such run"))
        try:
            offset = _int(request, "offset", 0, 0, 10**12)
            limit = _int(request, "limit", 50, 1, MAX_LIMIT)
        except ValueError as exc:
            return respond(_err(400, str(exc)))
        opened = _opened(request)
        if isinstance(opened, Response):
            return opened
        _, _, rows = opened
        q = request.query_params.get("q", "").lower()
        status = request.query_params.get("status", "")
        sort = request.query_params.get("sort", "")
        desc = request.query_params.get("desc", "") in ("1", "true")
        picked = [r for r in rows if (not status or r["status"] == status) and (
            not q or q in r["case_id"].lower() or q in str(r["name"] or "").lower()
            or any(q in t.lower() for t in r["tags"]))]
        if sort:
            picked = _sorted(picked, sort, desc)
        return respond(_json({"total": len(rows), "matched": len(picked), "offset": offset,
                              "limit": limit, "rows": picked[offset:offset + limit]}))

    def case(request: Request) -> Response:
        opened = _opened(request)
        if isinstance(opened, Response):
            return opened
        entry, loaded, rows = opened
        wanted = request.path_params["case_id"]
        for r, rec in zip(rows, loaded.records, strict=True):
            if r["case_id"] == wanted:
                return respond(_json({"run": entry.batch_id, "row": r, "record": rec}))
        return respond(_err(404, "no such case"))

    def compare(request: Request) -> Response:
        ids = request.query_params.getlist("run")
        pairs = request.query_params.get("pairs", "baseline")
        if len(ids) > MAX_COMPARE:
            return respond(_err(400, f"compare at most {MAX_COMPARE} runs at a time, "
                                     f"got {len(ids)}"))
        entries = [viewer.entry(i) for i in ids]
        if len(ids) < 2 or any(e is None for e in entries):
            return respond(_err(404 if len(ids) >= 2 else 400,
                                "pass two or more known runs (?run=ID&run=ID)"))
        from queryeval.errors import QueryevalError
        from queryeval.report.compare_nway import compare_many

        try:
            loaded = [viewer.load(e)[0] for e in entries]  # type: ignore[arg-type]
        except Unreadable as exc:
            return respond(_err(422, f"a run is unreadable: {exc}"))
        try:
            comp = compare_many(loaded, pairs="all" if pairs == "all" else "baseline",
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
        bare = host.strip("[]")
        allowed = ["127.0.0.1", "localhost", "[::1]", "::1", bare]
        if ":" in bare:
            allowed.append(f"[{bare}]")
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=sorted(set(allowed))))

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
    counted = loaded.counted()  # the run model: one mean per case, on_error applied
    for m in names:
        vals = [c.means[m] for c in counted if m in c.means]
        ci = stats.bootstrap_ci(vals, resamples=viewer.resamples, seed=0)
        cis.append({"metric": m, "mean": ci.mean, "low": ci.low, "high": ci.high, "n": ci.n})
    metrics = loaded.metrics if isinstance(loaded.metrics, dict) else {}
    overall = metrics.get("overall_metrics")
    groups = {}
    for key, value in metrics.items():
        if key == "group_metrics" and isinstance(value, dict):
            groups.update({k: v for k, v in value.items() if isinstance(v, dict)})
        elif key.endswith("_metrics") and key != "overall_metrics" and isinstance(value, dict):
            groups.setdefault(key[: -len("_metrics")], value)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    return {**summary, "overall": overall if isinstance(overall, dict) else {},
            "case_metrics": cis,
            "metric_names": names, "groups": groups, "statuses": statuses,
            "config": loaded.batch.get("evaluation_config") or {}}
