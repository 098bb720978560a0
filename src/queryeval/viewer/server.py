"""The ``queryeval view`` server: a read-only Starlette app over one folder of run logs.

Every run is found by walking the folder (symbolic links are not followed, and a run whose
files resolve outside the folder is left out); a run is addressed by its batch id only, looked
up in that index, so no request path ever becomes a file path. The page and its two assets are
package data served from memory; the data comes from a JSON API (``/api/runs``,
``/api/runs/{id}``, ``/api/runs/{id}/cases?offset=&limit=&q=&status=&verdict=&sort=&desc=``,
``/api/runs/{id}/cases/{case_id}?repeat=R``, or for any id, ``.`` and ``..`` too, which a
URL's path cannot carry: ``/api/runs/{id}/case?id=ID&repeat=R``, what the page uses), ``/api/compare?run=…&run=…&pairs=``). Every
figure comes from the functions the HTML report and ``queryeval compare`` use, through
:mod:`queryeval.viewer.results`; the files opened are checked by :mod:`queryeval.viewer.files`.
A run's and a comparison's charts come as SVG text in their documents (``charts``), drawn by
:mod:`queryeval.report.html_charts` as in the HTML pages; the page parses them as SVG.
The browser renders every text with ``textContent`` under a strict Content-Security-Policy.
See docs/viewer.md.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from queryeval.viewer.files import Entry, Unreadable, _files, _reason, open_run, read_batch, scan
from queryeval.viewer.index import _finite, _grouped, summary

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
MAX_LIMIT = 500
SCAN_SECONDS = 2.0
"""How long one walk of the folder is reused (a page asks several times in a row)."""
CACHED_RUNS = 8
"""Loaded runs kept in memory (least recently used dropped first)."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


class _AnyText(Convertor[str]):
    """A path parameter that is the rest of the path, whatever it holds (``{x:path}`` is
    ``.*``, which stops at a newline: a case id holding LF was a 404)."""

    regex = "[\\s\\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anytext", _AnyText())


def case_id_of(request: Request) -> str | None:
    """The case id of ``/api/runs/{run}/cases/{id}``, decoded once from the raw path (the page
    sends ``encodeURIComponent(id)``), so that any id (CR/LF, NUL, ``/``, ``?``, a literal
    ``%2F``) is matched exactly; the routed parameter when the raw path is unknown."""
    if "case_id" not in request.path_params:  # /api/runs/{run}/case?id=…
        return request.query_params.get("id")
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes) and b"/cases/" in raw:
        tail = raw.split(b"?", 1)[0].split(b"/cases/", 1)[1]
        return unquote(tail.decode("latin-1"), encoding="utf-8", errors="surrogateescape")
    return str(request.path_params["case_id"])


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


MAX_COMPARE = 8
"""Most runs in one ``/api/compare`` (each adds a column and pairwise tests)."""


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(_finite(data), status_code=status)


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Viewer:
    """The index of runs and a cache of the loaded ones (reloaded when a file changes)."""

    def __init__(self, root: Path, *, resamples: int = 10_000) -> None:
        self.root = Path(root)
        self.resamples = resamples
        self._lock = threading.Lock()
        self._scanned: tuple[float, dict[str, Entry]] | None = None
        self._cache: OrderedDict[str, tuple[tuple, Any, list[dict]]] = OrderedDict()
        self._figures: dict[str, tuple[tuple, dict]] = {}
        self._charts: dict[str, tuple[tuple, list[dict]]] = {}

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
        """(RunResults, one row per case: :func:`queryeval.report.case_rows.case_rows`). Raises
        :class:`Unreadable` for a run whose files are not a readable run log."""
        from queryeval.errors import QueryevalError
        from queryeval.report.case_rows import case_rows

        stamp = self._stamp(entry)
        with self._lock:
            hit = self._cache.get(entry.batch_id)
            if hit and hit[0] == stamp:
                self._cache.move_to_end(entry.batch_id)
                return hit[1], hit[2]
        read_batch(entry, self.root)  # every file checked before the run is opened
        try:
            run = open_run(entry, self.root)
            records = run.records  # read here: a bad results file is this run's reason
        except QueryevalError as exc:
            raise Unreadable(_reason(exc)) from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            # by kind only: the text of such an error may quote the file
            raise Unreadable(f"results_{entry.batch_id}.jsonl: {type(exc).__name__} while "
                             "reading the records") from None
        for k, r in enumerate(records):
            if not isinstance(r, dict) or r.get("case_id") is None:
                raise Unreadable(f"results_{entry.batch_id}.jsonl: record {k + 1} is not an "
                                 "object with a case_id")
        try:
            rows = case_rows(run)
        except (ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError,
                OverflowError) as exc:
            raise Unreadable(f"results_{entry.batch_id}.jsonl: {type(exc).__name__} while "
                             "reading the per-case scores") from None
        with self._lock:
            self._cache[entry.batch_id] = (stamp, run, rows)
            self._cache.move_to_end(entry.batch_id)
            while len(self._cache) > CACHED_RUNS:
                self._cache.popitem(last=False)
        return run, rows

    def figures(self, entry: Entry, loaded: Any) -> dict:
        """The report's Overall rows and repeats section (:func:`queryeval.viewer.results.run_figures`),
        computed once per loaded run."""
        from queryeval.viewer.results import run_figures

        key = (id(loaded), self.resamples)
        with self._lock:
            hit = self._figures.get(entry.batch_id)
            if hit and hit[0] == key:
                return hit[1]
        try:
            figs = run_figures(loaded, resamples=self.resamples, seed=0)
        except (ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError,
                OverflowError) as exc:
            raise Unreadable(f"metrics_{entry.batch_id}.json: {type(exc).__name__} while "
                             "computing the overall figures") from None
        with self._lock:
            self._figures[entry.batch_id] = (key, figs)
            while len(self._figures) > CACHED_RUNS:
                self._figures.pop(next(iter(self._figures)))
        return figs

    def charts(self, entry: Entry, loaded: Any, rows: list[dict], figs: dict) -> list[dict]:
        """The run page's charts (:func:`queryeval.report.html_charts.run_charts`), drawn once
        per loaded run (100,000 cases: about 0.5 s of CPU)."""
        from queryeval.report.html_charts import run_charts

        key = (id(loaded), id(figs))
        with self._lock:
            hit = self._charts.get(entry.batch_id)
            if hit and hit[0] == key:
                return hit[1]
        metrics = loaded.metrics if isinstance(loaded.metrics, dict) else {}
        overall = metrics.get("overall_metrics")
        drawn = run_charts(getattr(loaded, "task", None), figs["overall_rows"],
                           overall if isinstance(overall, dict) else {}, rows, figs.get("repeats"))
        with self._lock:
            self._charts[entry.batch_id] = (key, drawn)
            while len(self._charts) > CACHED_RUNS:
                self._charts.pop(next(iter(self._charts)))
        return drawn

    def summary(self, entry: Entry) -> dict:
        """One index row (:func:`queryeval.viewer.index.summary`)."""
        return summary(entry, self.root)


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


def create_app(root: str | Path, *, resamples: int = 10_000, host: str = "127.0.0.1") -> Starlette:
    """The viewer app over the run folder ``root`` (read-only; GET only)."""
    root = Path(root)
    if not root.is_dir():
        from queryeval.errors import ConfigError

        raise ConfigError(f"{root}: not a folder of runs")
    viewer = Viewer(root, resamples=resamples)
    page = _asset("index.html")
    assets = {name: _asset(name) for name in ASSETS}
    # the charts' stylesheet is the HTML pages' (one copy: report/html_svg.py)
    from queryeval.report.html_svg import CHART_CSS

    assets["app.css"] += CHART_CSS.encode("utf-8")
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
        rows = _grouped([viewer.summary(e) for e in viewer.entries().values()])
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
        try:
            return respond(_json(_run_doc(viewer, entry, loaded, rows)))
        except Unreadable as exc:
            return respond(_err(422, f"run {entry.batch_id} is unreadable: {exc}"))

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
        verdict = request.query_params.get("verdict", "")
        sort = request.query_params.get("sort", "")
        desc = request.query_params.get("desc", "") in ("1", "true")
        picked = [r for r in rows if (not status or r["status"] == status)
                  and (not verdict or r["verdict"] == verdict) and (
            not q or q in r["case_id"].lower() or q in str(r["name"] or "").lower()
            or any(q in t.lower() for t in r["tags"]))]
        if sort:
            picked = _sorted(picked, sort, desc)
        return respond(_json({"total": len(rows), "matched": len(picked), "offset": offset,
                              "limit": limit, "rows": picked[offset:offset + limit]}))

    def case(request: Request) -> Response:
        """A case: its row and one attempt's record (``?repeat=R``; default the first),
        through the task's ``report_record`` as the HTML report shows it (retrieval: the
        expected chunk's text)."""
        opened = _opened(request)
        if isinstance(opened, Response):
            return opened
        entry, loaded, rows = opened
        wanted = case_id_of(request)
        row = next((r for r in rows if r["case_id"] == wanted), None) if wanted is not None \
            else None
        if row is None:
            return respond(_err(404, "no such case"))
        raw = request.query_params.get("repeat", "")
        attempt = row["attempts"][0]
        if raw != "":
            attempt = next((a for a in row["attempts"] if str(a["repeat"]) == raw), None)
            if attempt is None:
                return respond(_err(404, "no such attempt of this case"))
        record = _shown(loaded, loaded.records[attempt["index"]])
        withheld = getattr(loaded, "withheld", None)
        return respond(_json({"run": entry.batch_id, "row": row, "attempt": attempt,
                              "record": record,
                              "withheld": withheld.options if withheld else []}))

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
        from queryeval.api.compare import compare as compare_runs
        from queryeval.errors import QueryevalError

        try:
            loaded = [viewer.load(e)[0] for e in entries]  # type: ignore[arg-type]
        except Unreadable as exc:
            return respond(_err(422, f"a run is unreadable: {exc}"))
        try:  # the call `queryeval compare A B … --pairs P` makes
            comp = compare_runs(*loaded, pairs="all" if pairs == "all" else "baseline",
                                groups=True, resamples=viewer.resamples, seed=0).raw
        except QueryevalError as exc:
            return respond(_err(400, str(exc)))
        doc = comp.to_dict()
        doc["run_ids"] = ids
        from queryeval.report.html_charts import nway_charts

        doc["charts"] = nway_charts(comp)  # the compare HTML's SVG, drawn from this model
        return respond(_json(doc))

    routes = [
        Route("/", index, methods=["GET", "HEAD"]),
        Route("/static/{name}", static, methods=["GET", "HEAD"]),
        Route("/api/runs", runs, methods=["GET"]),
        Route("/api/runs/{run_id}", run, methods=["GET"]),
        Route("/api/runs/{run_id}/cases", cases, methods=["GET"]),
        Route("/api/runs/{run_id}/cases/{case_id:anytext}", case, methods=["GET"]),
        Route("/api/runs/{run_id}/case", case, methods=["GET"]),
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


def _shown(loaded: Any, record: dict) -> dict:
    """The record as the HTML report's details show it (the task's ``report_record``)."""
    hook = getattr(loaded.task, "report_record", None)
    if not callable(hook):
        return record
    try:
        return hook(record)
    except Exception:  # noqa: BLE001 - the report goes without the extra text too
        return record


def _run_doc(viewer: Viewer, entry: Entry, loaded: Any, rows: list[dict]) -> dict:
    """Batch info, the HTML report's Overall rows (value, CI, n) and repeats section, the
    metrics' groups, the cases' verdict and status counts."""
    head = viewer.summary(entry)
    figs = viewer.figures(entry, loaded)
    names: list[str] = []
    for r in rows:
        names += [k for k in r["metrics"] if k not in names]
    metrics = loaded.metrics if isinstance(loaded.metrics, dict) else {}
    overall = metrics.get("overall_metrics")
    groups = {}
    for key, value in metrics.items():
        if key == "group_metrics" and isinstance(value, dict):
            groups.update({k: v for k, v in value.items() if isinstance(v, dict)})
        elif key.endswith("_metrics") and key != "overall_metrics" and isinstance(value, dict):
            groups.setdefault(key[: -len("_metrics")], value)
    # an empty group kind (no case has a concept) is not shown, and an older figure name
    # (recall_at_k) is shown as its own (recall@10), as in the HTML report and Run.groups
    from queryeval.report.html import figure_kinds, own_names
    from queryeval.report.html_figures import batch_to_compare, count_columns

    kinds = figure_kinds(getattr(loaded, "task", None))
    run_k = {"k": overall.get("k") if isinstance(overall, dict) else None}
    groups = {k: count_columns({str(m): own_names(f, kinds, run_k, counts=False)
                                for m, f in v.items() if isinstance(f, dict)}, kinds)
              for k, v in groups.items() if any(isinstance(m, dict) for m in v.values())}
    statuses: dict[str, int] = {}
    verdicts: dict[str, int] = {}
    # the figure that decides the cases (test_suite_match, decided_by), the cases table's
    # column beside the verdict: the one most rows name (None when the scores decide)
    decides: dict[str, int] = {}
    for r in rows:
        fig_name = (r.get("decided") or {}).get("figure")
        if fig_name:
            decides[fig_name] = decides.get(fig_name, 0) + 1
    for r in rows:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    charts = viewer.charts(entry, loaded, rows, figs)
    withheld = getattr(loaded, "withheld", None)
    derived = [s["id"] for s in (viewer.summary(e) for e in viewer.entries().values())
               if s["id"] != entry.batch_id and s.get("derived_from") == entry.batch_id]
    return {**head, "overall": overall if isinstance(overall, dict) else {},
            **figs, "metric_names": names, "groups": groups, "statuses": statuses,
            "verdicts": verdicts, "attempts": sum(len(r["attempts"]) for r in rows),
            "decided_by": max(decides, key=decides.__getitem__) if decides else None,
            "to_compare": batch_to_compare(entry.batch_id, loaded.batch.get("derived_batches"),
                                           loaded.batch.get("derived_from")),
            "derived": sorted(derived),
            "withheld": withheld.options if withheld else [],
            "task_error": withheld.task_error if withheld else None,
            "config": loaded.batch.get("evaluation_config") or {},
            # the charts as SVG text (report/html_charts.py), drawn from these figures
            "charts": charts,
            # --stop-when-decided: the decision and the anytime-valid interval, as the run
            # log holds them (absent for any other run)
            **({"sequential": metrics["sequential"]}
               if isinstance(metrics.get("sequential"), dict) else {})}

