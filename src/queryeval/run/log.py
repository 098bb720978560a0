"""The run log, in seed 002's layout, for every task kind::

    OUT/YYYY-MM-DD/batch_<id>.json      config, pinned inputs, status (running/interrupted/complete)
    OUT/YYYY-MM-DD/results_<id>.jsonl   one line per case, appended as cases finish
    OUT/YYYY-MM-DD/results_<id>.csv     flattened results
    OUT/YYYY-MM-DD/metrics_<id>.json    overall_metrics and per-group figures

Every file carries ``log_schema`` (the JSONL through the batch file). JSON and CSV files are
written atomically; the JSONL is append-only and written per line with one unbuffered
``write``, so a killed run loses at most the line being written, which
:meth:`RunLog.read_records` drops (and repairs) on resume.

A write that fails (disk full, read-only folder, file-size limit) raises
:class:`~queryeval.errors.OutputError` naming the file and the OS reason: the CLI prints that
one line and exits 2. A failed append is cut back to the last whole line, so the JSONL stays
valid and ``--resume`` continues from it.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import json
import operator
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.errors import ConfigError, InputError, OutputError
from queryeval.io.atomic import atomic_open, write_text_atomic
from queryeval.io.typedjson import TYPED, record_json, to_json
from queryeval.io.writing import writing
from queryeval.run.logmodel import LOG_SCHEMA, Batch, LogFile, Metrics, Record, validate_records
from queryeval.run.records import RecordStream, scan_records

FSYNC_EVERY = 64


def _json_default(obj: Any) -> Any:
    """What ``json`` cannot write: engine values in their typed form
    (:mod:`queryeval.io.typedjson`: UUID, interval, decimal, bytes, dates and times, IP
    addresses), numpy scalars and arrays, sets (sorted), paths."""
    if isinstance(obj, TYPED):
        return to_json(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=_json_default, allow_nan=False).encode


def dumps(obj: Any, **kw: Any) -> str:
    """The run log's JSON text (what ``json.dumps`` with these settings gives); without
    ``kw`` one encoder built once serves every record (no encoder built per line)."""
    if not kw:
        return _ENCODE(obj)
    return json.dumps(obj, ensure_ascii=False, default=_json_default, allow_nan=False, **kw)


@dataclass(frozen=True)
class RunPaths:
    folder: Path
    batch_id: str

    def _p(self, prefix: str, suffix: str) -> Path:
        return self.folder / f"{prefix}_{self.batch_id}{suffix}"

    @property
    def batch(self) -> Path:
        return self._p("batch", ".json")

    @property
    def results_jsonl(self) -> Path:
        return self._p("results", ".jsonl")

    @property
    def results_csv(self) -> Path:
        return self._p("results", ".csv")

    @property
    def metrics(self) -> Path:
        return self._p("metrics", ".json")

    @property
    def report_xlsx(self) -> Path:
        return self._p("report", ".xlsx")

    @property
    def repeats_csv(self) -> Path:
        """Per-case statistics of a run with ``--repeats`` (docs/repeats.md)."""
        return self._p("repeats", ".csv")


BATCH_FILE = re.compile(r"^(?:results|metrics|report|repeats|dabench)_(?P<id>.+?)"
                         r"\.(?:json|jsonl|csv|xlsx|html)$")


def batch_beside(path: Path) -> Path:
    """The ``batch_<id>.json`` of any file of a batch (``results_<id>.jsonl``,
    ``metrics_<id>.json``, a report, ...) when it lies beside it; else ``path`` itself."""
    match = BATCH_FILE.match(path.name)
    if match is None:
        return path
    batch = path.with_name(f"batch_{match['id']}.json")
    return batch if batch.is_file() else path


def write_all(fh: Any, data: bytes) -> None:
    """Write every byte of ``data`` to the unbuffered file ``fh`` (a raw write may be short).

    The one place the results JSONL is written, so tests can make it fail like a full disk."""
    view = memoryview(data)
    while view:
        n = fh.write(view)
        if not n:
            raise OSError(f"short write to {getattr(fh, 'name', 'file')}")
        view = view[n:]


def now_iso() -> str:
    return dt.datetime.now().isoformat(timespec="microseconds")


def _fsync_quietly(fd: int) -> None:
    """The periodic fsync (a failure shows at :meth:`RunLog.close`, which syncs again)."""
    with contextlib.suppress(OSError):
        os.fsync(fd)


class RunLog:
    """Writes (and re-opens) one batch of the run log."""

    def __init__(self, paths: RunPaths, batch: dict) -> None:
        self.paths = paths
        self.batch = batch
        self._fh: Any = None
        self._size = 0
        self._since_sync = 0
        self._syncer: threading.Thread | None = None

    # --- creating and opening -------------------------------------------------------------
    @classmethod
    def create(cls, out: str | Path, batch_fields: dict, batch_id: str | None = None,
               *, dated: bool = True) -> RunLog:
        """A new batch under ``out/YYYY-MM-DD/`` (or directly in ``out`` when not ``dated``)."""
        batch_id = batch_id or str(uuid.uuid4())
        out = Path(out).resolve()  # fixed now: a system calling os.chdir cannot move the log
        folder = out / dt.date.today().isoformat() if dated else out
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create output folder {folder}: {exc.strerror or exc}") from None
        batch = {"log_schema": LOG_SCHEMA, "batch_id": batch_id, "timestamp": now_iso(),
                 "status": "running", **batch_fields}
        log = cls(RunPaths(folder, batch_id), batch)
        log.write_batch()
        with writing(log.paths.results_jsonl):
            log.paths.results_jsonl.touch()
        return log

    @classmethod
    def open(cls, location: str | Path) -> RunLog:
        """Open a batch from its ``batch_<id>.json``, or a folder holding exactly one
        unfinished batch (searched recursively, so ``OUT`` or ``OUT/YYYY-MM-DD`` both work).

        Derived batches (``derived_from``, e.g. retrieval's smaller k) are not runs of their
        own: their parent rewrites them when it finishes, so a folder search never picks one."""
        location = Path(location).resolve()
        if location.is_dir():
            docs = {p: read_batch_file(p).doc for p in sorted(location.rglob("batch_*.json"))}
            candidates = [p for p, d in docs.items() if "derived_from" not in d]
            running = [p for p in candidates if docs[p].get("status") != "complete"]
            if not candidates:
                raise ConfigError(f"{location}: no batch_<id>.json to resume in this folder")
            if not running and len(candidates) > 1:
                raise ConfigError(
                    f"{location}: all {len(candidates)} runs in this folder are complete, nothing "
                    "to resume; to re-write a run's reports: queryeval report BATCH_FILE, or "
                    f"queryeval run --resume BATCH_FILE (e.g. {candidates[-1]})")
            pick = running or candidates
            if len(pick) != 1:
                names = ", ".join(p.name for p in pick)
                raise ConfigError(
                    f"{location}: expected one unfinished batch to resume, found {len(pick)} "
                    f"({names}); pass the batch_<id>.json file"
                )
            location = pick[0]
        if location.is_file() and not location.name.startswith("batch_"):
            location = batch_beside(location)
        if not location.is_file() or not location.name.startswith("batch_"):
            raise ConfigError(f"{location}: not a batch_<id>.json file, a file of the batch or "
                              "a run folder")
        batch = read_batch_file(location)
        return cls(RunPaths(location.parent, batch.batch_id), batch.doc)

    @property
    def typed_batch(self) -> Batch:
        """The batch as it is now (:attr:`batch`, the dict this log writes), typed."""
        return Batch.model_validate(self.batch)

    # --- writing --------------------------------------------------------------------------
    def write_batch(self) -> None:
        with writing(self.paths.batch):
            write_text_atomic(self.paths.batch, dumps(self.batch, indent=2) + "\n")

    def append(self, record: dict) -> None:
        """Append one case's record with one unbuffered write (the OS has it at once, so it
        survives a kill -9; fsync every ``FSYNC_EVERY`` lines, on a helper thread so the
        caller's event loop is not held for the disk, and at close).

        If the write fails, the file is cut back to its last whole line and
        :class:`OutputError` is raised: the lines already written stay valid."""
        text, _ = record_json(record, dumps)  # a value with no JSON form: an error on its case
        data = (text + "\n").encode("utf-8")
        try:
            if self._fh is None:
                self._fh = open(self.paths.results_jsonl, "ab", buffering=0)  # noqa: SIM115 - kept open across appends
                self._size = os.fstat(self._fh.fileno()).st_size
            write_all(self._fh, data)
            self._size += len(data)
            self._since_sync += 1
            if self._since_sync >= FSYNC_EVERY and not (self._syncer and self._syncer.is_alive()):
                self._since_sync = 0  # (while one runs, the next starts at the next line)
                self._syncer = threading.Thread(target=_fsync_quietly, args=(self._fh.fileno(),),
                                                daemon=True, name="queryeval-fsync")
                self._syncer.start()
        except OSError as exc:
            self._abandon()
            raise OutputError.from_os(self.paths.results_jsonl, exc) from None

    def _join_syncer(self) -> None:
        """Wait for a running fsync (before its file is closed: its descriptor stays ours)."""
        syncer, self._syncer = self._syncer, None
        if syncer is not None:
            syncer.join()

    def _abandon(self) -> None:
        """After a failed append: drop a partly written line (best effort) and close."""
        self._join_syncer()
        fh, self._fh = self._fh, None
        if fh is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fh.fileno(), self._size)
        with contextlib.suppress(OSError):
            fh.close()

    def close(self, *, quiet: bool = False) -> None:
        """Sync and close the results file. ``quiet``: swallow errors (used while another
        error is already on its way up, so it is the one reported)."""
        self._join_syncer()
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            os.fsync(fh.fileno())
        except OSError as exc:
            if not quiet:
                raise OutputError.from_os(self.paths.results_jsonl, exc) from None
        finally:
            with contextlib.suppress(OSError):
                fh.close()

    def read_records(self, *, repair: bool = False) -> list[dict]:
        """Every complete record; a final line cut short by a crash is dropped (and, with
        ``repair``, removed from the file). A later record for the same case id replaces an
        earlier one, in the earlier one's place."""
        return list(self.scan_records(repair=repair))

    def scan_records(self, order: Any = None, *, repair: bool = False, with_ids: bool = False,
                     in_order: bool = False) -> RecordStream:
        """The records as a stream in ``order`` (case ids, or an IdIndex of ranks), read from
        disk on each iteration: see :func:`queryeval.run.records.scan_records`."""
        return scan_records(self.paths.results_jsonl, order, repair=repair, with_ids=with_ids,
                            in_order=in_order)

    def rewrite_records(self, records: Iterable[dict]) -> None:
        """Replace the JSONL atomically (used to drop errored cases before retrying them)."""
        with self.records_writer() as add:
            for r in records:
                add(r)

    @contextlib.contextmanager
    def records_writer(self) -> Iterator[Callable[[dict], None]]:
        """:meth:`rewrite_records` one record at a time: yields ``add(record)``; the new JSONL
        replaces the old one when the block ends without an error (else the old one stays).
        A failed write raises :class:`OutputError` naming this file (even while other files
        are open in the same block)."""
        self.close()
        path = self.paths.results_jsonl
        with writing(path), atomic_open(path) as fh:
            write = fh.write

            def add(record: dict) -> None:
                try:
                    write(_ENCODE(record) + "\n")
                except OSError as exc:
                    raise OutputError.from_os(path, exc) from None

            yield add

    def write_csv(self, columns: list[str], rows: Iterable[dict], *, raw: bool | None = None) -> None:
        """``results_<id>.csv``. A text cell a spreadsheet would run as a formula (``=``, ``+``,
        ``-``, ``@``, tab, CR first) gets a leading ``'``; numbers stay numbers. ``raw``
        (default: the ``QUERYEVAL_CSV_RAW`` environment variable) writes text as it is. See
        :func:`queryeval.io.safetext.csv_cell`; :func:`queryeval.io.safetext.csv_uncell`
        reads a cell back."""
        with self.csv_writer(columns, raw=raw) as add:
            for row in rows:
                add(row)

    @contextlib.contextmanager
    def csv_writer(self, columns: list[str], *, raw: bool | None = None) -> Iterator[Callable[[dict], None]]:
        """:meth:`write_csv` one row at a time: yields ``add(row)``; the file replaces the
        old one when the block ends without an error. A failed write raises
        :class:`OutputError` naming this file."""
        from queryeval.io.safetext import csv_raw_from_env, csv_row

        raw = csv_raw_from_env() if raw is None else raw
        path = self.paths.results_csv
        # a plain dict holding every column: its cells in one C call (what row.get gives)
        pick = operator.itemgetter(*columns) if len(columns) > 1 else None
        with writing(path), atomic_open(path, "w", newline="") as fh:
            writerow = csv.writer(fh).writerow
            writerow(csv_row(columns, raw=raw))

            def add(row: dict) -> None:
                values = None
                if pick is not None and type(row) is dict:
                    try:
                        values = pick(row)
                    except KeyError:  # a column the row lacks: empty, as row.get gives
                        pass
                if values is None:
                    values = [row.get(c) for c in columns]
                try:
                    writerow(csv_row(values, raw=raw))
                except OSError as exc:
                    raise OutputError.from_os(path, exc) from None

            yield add

    def write_metrics(self, metrics: dict) -> None:
        doc = {"log_schema": LOG_SCHEMA, "batch_id": self.paths.batch_id,
               "timestamp": now_iso(), "task": self.batch.get("task"), **metrics}
        with writing(self.paths.metrics):
            write_text_atomic(self.paths.metrics, dumps(doc, indent=2) + "\n")

    def read_metrics(self) -> dict | None:
        """``metrics_<id>.json`` as read (:func:`read_metrics_file`, the document), or None
        when there is none; unreadable (bad JSON, an integer beyond the float range, not a
        metrics file): one InputError naming the file and field."""
        if not self.paths.metrics.is_file():
            return None
        return read_metrics_file(self.paths.metrics).doc

    def typed_records(self) -> list[Record]:
        """Every record (:meth:`read_records`), typed by the batch's task kind
        (:func:`queryeval.run.logmodel.validate_records`): for the surfaces that read a
        finished log; the run itself reads dicts (docs/run-log.md, "Typed records").
        A record that is not one of its kind: one InputError naming the file, the record's
        line and the field."""
        records = self.read_records()
        try:
            return validate_records(self.batch.get("task"), records)
        except ValidationError as exc:
            raise _model_error(exc, self.paths.results_jsonl, Record, records) from None

    def mark_complete(self) -> None:
        self.batch["status"] = "complete"
        self.batch["completed_at"] = now_iso()
        self.write_batch()


_SCHEMA_NAME = re.compile(r"[a-z.]{1,40}/\d{1,4}")  # a version named in an error (no other text)


def read_batch_file(path: Path) -> Batch:
    """``batch_<id>.json``, typed: the one reader of a batch file. Anything that is not a
    batch of this log schema (unreadable, bad JSON, a number no float holds, a field of the
    wrong type, another ``log_schema``): one InputError naming the file and the field."""
    return _read_file(path, Batch)


def read_metrics_file(path: Path) -> Metrics:
    """``metrics_<id>.json``, typed: the one reader of a metrics file (errors as
    :func:`read_batch_file`)."""
    return _read_file(path, Metrics)


def _read_file(path: Path, model: type[LogFile]) -> Any:
    doc = _read_json(path)
    schema = doc.get("log_schema")
    if schema != LOG_SCHEMA:
        shown = f" {schema!r}" if isinstance(schema, str) and _SCHEMA_NAME.fullmatch(schema) else ""
        raise InputError(f"unsupported log schema{shown} (this queryeval reads {LOG_SCHEMA})",
                         path=path, field="log_schema")
    try:
        return model.from_doc(doc)
    except ValidationError as exc:
        raise _model_error(exc, path, model) from None


def _model_error(exc: ValidationError, path: Path, model: type, records: list | None = None) -> InputError:
    """One line for a run log file its model refuses: the file (and a record's line), the
    field, the first error."""
    from queryeval.io.numbers import loc_text
    from queryeval.suite.common import first_error

    msg, loc = first_error(exc, model)
    line = None
    if records is not None and len(loc) >= 3 and isinstance(loc[2], int):
        line, loc = _line_of(path, records[loc[2]]), loc[3:]  # (kind, "records", index, ...)
    return InputError(f"not a run log {'record' if records is not None else 'file'}: {msg}",
                      path=path, line=line, field=loc_text(loc) or None)


def _line_of(path: Path, record: dict) -> int | None:
    """The 1-based line of ``record``'s last line in a results file (error path only)."""
    from queryeval.run.records import attempt_key

    key = attempt_key(str(record.get("case_id")), record.get("repeat") if type(record.get("repeat")) is int else None)
    found = None
    with contextlib.suppress(OSError, ValueError):
        with path.open("rb") as fh:
            for n, line in enumerate(fh, start=1):
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    rep = rec.get("repeat") if isinstance(rec, dict) else None
                    if isinstance(rec, dict) and attempt_key(str(rec.get("case_id")),
                                                             rep if type(rep) is int else None) == key:
                        found = n
    return found


def _read_json(path: Path) -> dict:
    """A batch or metrics file as JSON (a regular file only: never a FIFO or device): one
    InputError naming the file (and the field of a number no float holds,
    :mod:`queryeval.io.numbers`) for anything unreadable."""
    from queryeval.errors import QueryevalError
    from queryeval.io.files import read_input_bytes
    from queryeval.io.numbers import NumberError, read_json

    try:
        doc = read_json(read_input_bytes(path, "suite"), finite=False)
    except NumberError as exc:
        raise InputError(f"cannot read run log file: {exc.reason}", path=path,
                         field=exc.field or None) from None
    except QueryevalError:  # not a regular file, too large: read_input_bytes's line
        raise
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or UTF-8, a huge number
        raise InputError(f"cannot read run log file: {' '.join(str(exc).split())[:300]}",
                         path=path) from None
    except RecursionError:
        raise InputError("cannot read run log file: JSON nested too deep", path=path) from None
    if not isinstance(doc, dict):
        raise InputError(f"cannot read run log file: expected a JSON object, got {type(doc).__name__}",
                         path=path)
    return doc
