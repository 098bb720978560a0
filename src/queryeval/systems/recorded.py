"""Recorded outputs as the system under test (``--responses FILE.jsonl``).

Each line records one answer: ``{"case_id": ..., "turn": ..., <task fields>}``. The task
decides how a line is read (:meth:`queryeval.tasks.base.Task.read_recorded_line`); this
module checks every line up front (a bad line stops the run before it starts, naming its
line), checks that the lines fit the suite, and answers requests by (case id, turn).

A JSONL file is *indexed*, not held: the first pass validates each line and keeps only
where it lies (byte offset and length) under a 128-bit key of its case id, about 40 bytes a
line (:mod:`queryeval.io.idindex`); a request reads its line again with ``os.pread`` and
parses it. A line longer than :data:`~queryeval.systems.base.MAX_RESPONSE_BYTES` (64 MiB, the
HTTP adapter's cap) is answered as a ``malformed`` error on its case, so the run goes on and
the output is copied neither into the run log nor into the reports. An output that the run
log cannot store (a NaN or infinite number: JSON readers accept ``NaN`` and ``Infinity``) or a
number no float holds (an integer of 400 digits, :mod:`queryeval.io.numbers`) is answered as a
``malformed`` error on its case
(:func:`~queryeval.systems.base.checked_output`). A million recorded lines therefore cost tens of megabytes, not gigabytes. A CSV
file (a quoted cell may span lines) is parsed into memory as before. Pickling (to ship the
system to Ray workers) sends the outputs themselves, so workers need no access to the file.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from pydantic import ValidationError

from queryeval.errors import InputError, SystemCallError
from queryeval.io.idindex import IdIndex, KeyBuilder
from queryeval.io.jsonl import iter_jsonl_spans, iter_records, read_json_span, read_span
from queryeval.io.numbers import NumberError, read_json
from queryeval.suite.yamlsrc import format_loc, printable
from queryeval.systems.base import MAX_RESPONSE_BYTES, checked_output, may_hold_surrogate

if TYPE_CHECKING:
    from queryeval.tasks.base import Task

Key = tuple[str, "int | None"]
NO_TURN = -1
MAX_TURN = 2**31 - 1  # turns are kept as int32 in the index


def _turn(value: Any, path: Path, lineno: int) -> int | None:
    """A line's ``turn``: an integer, or absent. A CSV cell is text, so digits are read as
    an integer there and an empty cell as absent."""
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        value = int(value)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        if isinstance(value, int) and not 0 <= value <= MAX_TURN:
            raise InputError(f"must be an integer from 0 to {MAX_TURN:,} (an index into the "
                             "conversation)", path=path, line=lineno, field="turn")
        return value
    if isinstance(value, str) and not value.strip():
        return None
    raise InputError(f"must be an integer, got {type(value).__name__}",
                     path=path, line=lineno, field="turn")


#: The output key of each built-in task's recorded lines (a second key for the same task last).
_OUTPUT_KEY = {"indicator_selection": "indicator_selection", "answers": "response",
               "retrieval": "retrieved_chunks", "fields": "fields", "query": "query"}
_KEY_TASK = {**{key: name for name, key in _OUTPUT_KEY.items()}, "generated_sparql": "query"}


def _other_task_line(task: Task, obj: Any, path: Path, lineno: int) -> InputError | None:
    """A line refused because it holds another task's output (SPARQL predictions given to an
    indicator-selection suite): the error says so, instead of the field the task refused."""
    need = _OUTPUT_KEY.get(getattr(task, "name", ""))
    if need is None or not isinstance(obj, dict) or need in obj:
        return None
    held = [k for k in obj if k in _KEY_TASK and _KEY_TASK[k] != task.name]
    if not held:
        return None
    article = "an" if held[0][0] in "aeiou" else "a"
    return InputError(f"this line holds {article} '{held[0]}' output (task {_KEY_TASK[held[0]]}), but "
                      f"the suite's task is {task.name} (it needs '{need}')",
                      path=path, line=lineno)


def _read_line(task: Task, obj: Any, path: Path, lineno: int) -> tuple[str, int | None, Any]:
    if isinstance(obj, dict) and "repeat" in obj:  # read by _repeat, not by the task
        obj = {k: v for k, v in obj.items() if k != "repeat"}
    try:
        case_id, turn, output = task.read_recorded_line(obj)
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        wrong = _other_task_line(task, obj, path, lineno)
        if wrong is not None:
            raise wrong from None
        _refused(exc, path, lineno)
    return case_id, _turn(turn, path, lineno), output


def _csv_integer_id(obj: dict) -> dict:
    """A CSV cell is text: an ``id`` cell holding an integer (``5``) is read as the integer,
    as a JSONL line writes DABench's ids, so readers that tell ``5`` from ``"5"``
    (``compat=infiagent``) read a CSV file's ids as integers."""
    from queryeval.suite.dabench import string_integer_id

    if "id" in obj and string_integer_id({"id": obj["id"]}):
        return {**obj, "id": int(obj["id"])}
    return obj


def _refused(exc: Exception, path: Path, lineno: int) -> NoReturn:
    """The line's error as the task (or its pydantic model) gave it."""
    if isinstance(exc, ValidationError):
        err = exc.errors(include_url=False)[0]
        msg = printable(err["msg"][:1].lower() + err["msg"][1:])
        raise InputError(msg, path=path, line=lineno, field=format_loc(err["loc"]) or None) from None
    raise InputError(printable(str(exc).strip("'\"")), path=path, line=lineno) from None


class Oversized:
    """Stands for a recorded output over the size cap: answered as an error, never read."""

    def __init__(self, size: int, line: int) -> None:
        self.size, self.line = size, line

    def error(self, path: Path, limit: int) -> SystemCallError:
        return SystemCallError("malformed", f"recorded response at {path.name} line {self.line} is "
                                            f"{self.size:,} bytes, over the {limit:,}-byte cap")


#: ``turns`` value of a line left out because an earlier line answers the same (case, turn).
DROPPED = -2


def _first_non_empty(task: Task) -> bool:
    """The task reads repeated ids the reference's way: the first non-empty response wins
    (``Task.recorded_duplicates == "first-non-empty"``); otherwise a repeat is refused."""
    return getattr(task, "recorded_duplicates", "refuse") == "first-non-empty"


def _is_empty(output: Any) -> bool:
    """A missing answer as the reference tests it (``not response``): null or empty text."""
    if isinstance(output, dict):
        output = output.get("response")
    return output is None or output == ""


def _duplicate(case_id: str, turn: int | None, first: int, path: Path, line: int,
               repeat: int = NO_TURN) -> InputError:
    return InputError(
        f"duplicate response for case {case_id!r}" + (f" turn {turn}" if turn is not None else "")
        + (f" repeat {repeat}" if repeat != NO_TURN else "")
        + f" (first at line {first})", path=path, line=line, field="case_id",
    )


def _repeat(obj: Any, path: Path, lineno: int) -> int:
    """A JSONL line's ``repeat`` (several answers per case and turn, for ``--repeats``):
    an integer from 0, or absent (:data:`NO_TURN`): then the line answers every repeat."""
    value = obj.get("repeat") if isinstance(obj, dict) else None
    if value is None:
        return NO_TURN
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TURN:
        raise InputError(f"must be an integer from 0 to {MAX_TURN:,}, got {value!r:.40}",
                         path=path, line=lineno, field="repeat")
    return value


class RecordedSystem:
    """Answers requests from a recorded-responses file; build with :meth:`load`."""

    inline = True
    """Answers are at hand: the runner calls it on its own thread, case after case."""
    max_response_bytes = MAX_RESPONSE_BYTES
    """A longer recorded line is a ``malformed`` error on its case (the HTTP adapter's cap)."""

    def __init__(self, path: Path, entries: dict[Key, Any], lines: dict[Key, int]) -> None:
        """In-memory form: ``entries[(case_id, turn)]`` is the output, ``lines`` its line."""
        self.path = path
        self.name = f"responses:{path}"
        self.entries = entries
        self.lines = lines
        self.notes: list[str] = []
        """Warnings the reading left (the samples of a mixed file the task does not read)."""

    @classmethod
    def load(cls, path: str | Path, task: Task) -> RecordedSystem:
        path = Path(path)
        from queryeval.suite.foreign import recorded_records

        corpus = getattr(task, "corpus", None)
        notes: list[str] = []
        foreign = recorded_records(path, corpus if callable(corpus) else None,
                                   getattr(task, "name", None), notes)
        if foreign is not None:  # ragas / DeepEval outputs, a saved dataset (docs/formats.md)
            system = cls._load_in_memory(path, task, foreign)
            system.notes = notes
            return system
        if path.suffix.lower() == ".csv":
            return cls._load_in_memory(path, task)
        return IndexedRecordedSystem.build(path, task)

    @classmethod
    def _load_in_memory(cls, path: Path, task: Task,
                        records: Iterable[tuple[int, Any]] | None = None) -> RecordedSystem:
        entries: dict[Key, Any] = {}
        lines: dict[Key, int] = {}
        first_non_empty = _first_non_empty(task)
        csv_cells = records is None and path.suffix.lower() == ".csv"
        for lineno, obj in (iter_records(path) if records is None else records):
            if csv_cells:
                obj = _csv_integer_id(obj)
            if isinstance(obj, dict) and obj.get("repeat") not in (None, ""):
                raise InputError("several answers per case (repeat) are read from JSONL "
                                 "responses only", path=path, line=lineno, field="repeat")
            case_id, turn, output = _read_line(task, obj, path, lineno)
            key = (case_id, turn)
            if key in entries:
                if not first_non_empty:
                    raise _duplicate(case_id, turn, lines[key], path, lineno)
                if not (_is_empty(entries[key]) and not _is_empty(output)):
                    continue
            entries[key] = output
            lines[key] = lineno
        return cls(path, entries, lines)

    def bind(self, scored: Mapping[str, list[int]] | Iterable[tuple[str, list[int]]]) -> list[str]:
        """Check the file against the suite's scored turns (``(case id, turns)`` pairs, or a
        mapping); returns warnings.

        A line for a turn that is not scored is an error (it names the line); a line
        without ``turn`` is accepted for a case with exactly one scored turn. Lines for case
        ids not in the suite are ignored with a warning (a subset of a suite may be run).
        """
        pairs = scored.items() if isinstance(scored, Mapping) else scored
        known: dict[str, list[int]] = {}
        by_case: dict[str, list[Key]] = {}
        for key in self.lines:
            by_case.setdefault(key[0], []).append(key)
        suite_id = None
        for case_id, turns in pairs:
            suite_id = case_id if suite_id is None else suite_id
            if case_id in by_case:
                known[case_id] = turns
        unknown = 0
        for (case_id, turn), lineno in list(self.lines.items()):
            turns = known.get(case_id)
            if turns is None:
                unknown += 1
                continue
            resolved = self._check_turn(case_id, turn, turns, lineno)
            if resolved != turn:
                if (case_id, resolved) in self.entries:
                    first, again = sorted((lineno, self.lines[(case_id, resolved)]))
                    raise _duplicate(case_id, resolved, first, self.path, again)
                self.entries[(case_id, resolved)] = self.entries.pop((case_id, turn))
                self.lines[(case_id, resolved)] = self.lines.pop((case_id, turn))
        file_id = min(self.lines.items(), key=lambda kv: kv[1])[0][0] if self.lines else None
        return [*self.notes, *self._unknown_warning(unknown, len(self.lines), suite_id, file_id)]

    def _check_turn(self, case_id: str, turn: int | None, turns: list[int], lineno: int) -> int:
        """The scored turn a line answers; an InputError naming the line if none."""
        if turn is None:
            if len(turns) != 1:
                raise InputError(
                    f"turn is required: case {case_id!r} has {len(turns)} scored turns {turns}",
                    path=self.path, line=lineno, field="turn",
                )
            return turns[0]
        if turn not in turns:
            raise InputError(
                f"turn {turn} of case {case_id!r} is not a user turn with a target "
                f"(scored turns: {turns})",
                path=self.path, line=lineno, field="turn",
            )
        return turn

    def _unknown_warning(self, unknown: int, total: int = 0, suite_id: str | None = None,
                         file_id: str | None = None) -> list[str]:
        """The warning for response lines whose case ids the suite lacks; when no line
        matches, one line saying so with an id of each side (a wrong file or id column); a
        file without any response line says so too (every case is then missing), unless its
        notes already said why (every sample was of the other task's kind)."""
        if not total and suite_id is not None and not self.notes:
            return [f"{self.path}: the file holds no response: every case is missing"]
        if not unknown:
            return []
        if unknown == total and suite_id is not None and file_id is not None:
            return [f"{self.path}: 0 of {total} response ids match the suite's case ids, "
                    f"e.g. {file_id!r} in the file vs {suite_id!r} in the suite"]
        return [f"{self.path}: {unknown} response(s) for case ids not in the suite were ignored"]

    def call(self, request: dict, timeout: float | None) -> Any:
        key = (request["case_id"], request.get("turn"))
        if key not in self.entries:
            raise SystemCallError("missing", f"no recorded response in {self.path.name}")
        if isinstance(self.entries[key], Oversized):
            raise self.entries[key].error(self.path, self.max_response_bytes)
        return checked_output(self.entries[key])

    def close(self) -> None:
        pass


class IndexedRecordedSystem(RecordedSystem):
    """A JSONL responses file answered from an index of its lines (see the module docstring)."""

    def __init__(self, path: Path, task: Task, index: IdIndex, turns: np.ndarray,
                 offsets: np.ndarray, sizes: np.ndarray, linenos: np.ndarray,
                 repeats: np.ndarray | None = None) -> None:
        super().__init__(path, {}, {})
        self.task = task
        self.repeats = repeats if repeats is not None else np.full(len(turns), NO_TURN, np.int32)
        """row -> the line's ``repeat`` (NO_TURN: none given, answers every repeat)"""
        self.index = index  # case id -> row
        self.turns = turns  # row -> turn (NO_TURN: not given), resolved by bind
        self.offsets = offsets
        self.sizes = sizes
        self.linenos = linenos
        self._fd: int | None = None
        self._lock = threading.Lock()

    @classmethod
    def build(cls, path: Path, task: Task) -> IndexedRecordedSystem:
        keys = KeyBuilder()
        turns, offsets, sizes, linenos = array("q"), array("q"), array("q"), array("q")
        repeats = array("q")
        for lineno, offset, size, obj in iter_jsonl_spans(path):
            case_id, turn, _output = _read_line(task, obj, path, lineno)
            repeats.append(_repeat(obj, path, lineno))
            keys.add(case_id, len(turns))
            turns.append(NO_TURN if turn is None else turn)
            offsets.append(offset)
            sizes.append(size)
            linenos.append(lineno)

        def arr(a: array, dtype: type = np.int32) -> np.ndarray:
            return np.frombuffer(a, dtype=np.int64).astype(dtype) if len(a) else np.empty(0, dtype=dtype)

        system = cls(path, task, keys.build(), arr(turns), arr(offsets, np.int64), arr(sizes),
                     arr(linenos), arr(repeats))
        system._check_duplicates()
        return system

    def _check_duplicates(self) -> None:
        """Two lines for one (case id, turn): the error names the later line of the first
        such pair in the file, as a reader going line by line would."""
        hi, lo, n = self.index.hi, self.index.lo, len(self.index)
        if n < 2:
            return
        same = (hi[1:] == hi[:-1]) & (lo[1:] == lo[:-1])
        if not same.any():
            return
        cuts = np.flatnonzero(~same) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [n]))
        worst: tuple[int, int, int] | None = None  # (later line, first line, row)
        if _first_non_empty(self.task):
            self._keep_first_non_empty(starts, ends)
            return
        for g in np.flatnonzero(ends - starts > 1):
            first_line: dict[tuple[int, int], int] = {}
            for pos in range(int(starts[g]), int(ends[g])):
                row = int(self.index.values[pos])  # rows ascend within a key: file order
                turn, line = int(self.turns[row]), int(self.linenos[row])
                key = (turn, int(self.repeats[row]))
                if key in first_line and (worst is None or line < worst[0]):
                    worst = (line, first_line[key], row)
                first_line.setdefault(key, line)
        if worst is not None:
            line, first, row = worst
            obj = read_json_span(self._descriptor(), int(self.offsets[row]), int(self.sizes[row]))
            case_id, turn, _ = _read_line(self.task, obj, self.path, line)
            raise _duplicate(case_id, turn, first, self.path, line, int(self.repeats[row]))

    def _keep_first_non_empty(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """Of the lines sharing a (case id, turn, repeat), keep the first with a non-empty
        output (or the first, when all are empty) and mark the others ``DROPPED``."""
        fd = self._descriptor()
        for g in np.flatnonzero(ends - starts > 1):
            by_turn: dict[tuple[int, int], list[int]] = {}
            for pos in range(int(starts[g]), int(ends[g])):
                row = int(self.index.values[pos])
                by_turn.setdefault((int(self.turns[row]), int(self.repeats[row])), []).append(row)
            for rows in by_turn.values():
                if len(rows) < 2:
                    continue
                rows.sort()  # file order
                keep = rows[0]
                for row in rows:
                    obj = read_json_span(fd, int(self.offsets[row]), int(self.sizes[row]))
                    if not _is_empty(_read_line(self.task, obj, self.path,
                                                int(self.linenos[row]))[2]):
                        keep = row
                        break
                for row in rows:
                    if row != keep:
                        self.turns[row] = DROPPED

    def bind(self, scored: Mapping[str, list[int]] | Iterable[tuple[str, list[int]]]) -> list[str]:
        pairs = scored.items() if isinstance(scored, Mapping) else scored
        used = np.zeros(len(self.turns), dtype=bool)
        suite_id = None
        for case_id, turns in pairs:
            suite_id = case_id if suite_id is None else suite_id
            resolved: dict[tuple[int, int], int] = {}
            for row in self.index.get_all(case_id):
                used[row] = True
                if int(self.turns[row]) == DROPPED:
                    continue
                given = int(self.turns[row])
                line = int(self.linenos[row])
                turn = self._check_turn(case_id, None if given == NO_TURN else given, turns, line)
                key = (turn, int(self.repeats[row]))
                if key in resolved:
                    first, again = sorted((line, resolved[key]))
                    raise _duplicate(case_id, turn, first, self.path, again, key[1])
                resolved[key] = line
                self.turns[row] = turn
        unknown = int(len(used) - used.sum())
        file_id = None
        if unknown and unknown == len(used):  # no line matched: name one id of the file
            first = int(np.argmin(self.linenos))
            obj = read_json_span(self._descriptor(), int(self.offsets[first]),
                                 int(self.sizes[first]))
            file_id = _read_line(self.task, obj, self.path, int(self.linenos[first]))[0]
        return self._unknown_warning(unknown, len(used), suite_id, file_id)

    def _descriptor(self) -> int:
        with self._lock:
            if self._fd is None:
                # reopened by name after the checking pass: a regular file again, never a FIFO
                from queryeval.io.files import open_input

                with open_input(self.path, "responses") as fh:
                    self._fd = os.dup(fh.fileno())
            return self._fd

    def call(self, request: dict, timeout: float | None) -> Any:
        case_id, turn = request["case_id"], request.get("turn")
        want = NO_TURN if turn is None else turn
        repeat = request.get("repeat")
        rows = [row for row in self.index.get_all(case_id) if int(self.turns[row]) == want]
        # a line for this repeat, else a line without repeat (it answers every repeat);
        # without repeats, a line without repeat, else the line of repeat 0
        order = ([repeat, NO_TURN] if isinstance(repeat, int) else [NO_TURN, 0])
        for wanted in order:
            for row in rows:
                if int(self.repeats[row]) == wanted:
                    if int(self.sizes[row]) > self.max_response_bytes:
                        raise Oversized(int(self.sizes[row]), int(self.linenos[row])).error(
                            self.path, self.max_response_bytes)
                    return self._answer(row)
        raise SystemCallError("missing", f"no recorded response in {self.path.name}")

    def _answer(self, row: int) -> Any:
        """The output of the line at ``row``, read and checked as the run log needs it.

        :func:`~queryeval.systems.base.checked_output` walks an output only when its line
        may hold what the log cannot store: the line is first read refusing NaN, Infinity and
        floats beyond the range (:func:`~queryeval.io.numbers.read_json`, ``finite``), and
        one holding any is read again as before and walked, so the walk names the place; a
        lone surrogate is looked for in the bytes (:func:`~queryeval.systems.base.may_hold_surrogate`).
        A line with none of these holds only finite numbers and whole characters, and so does
        the output the task reads from it: the walk would find nothing (most lines)."""
        line = int(self.linenos[row])
        data = read_span(self._descriptor(), int(self.offsets[row]), int(self.sizes[row]))
        walk = may_hold_surrogate(data)
        try:
            try:
                obj = read_json(data, finite=True, huge="error")
            except NumberError:  # NaN, Infinity, 1e999 (or a huge integer): read as before
                obj, walk = read_json(data, finite=False, huge="error"), True
        except NumberError as exc:  # an integer beyond the float range
            raise SystemCallError("malformed", f"line {line} of {self.path.name}: {exc}") from None
        output = _read_line(self.task, obj, self.path, line)[2]
        return checked_output(output) if walk else output

    def outputs(self) -> tuple[dict[Key, Any], dict[Key, int]]:
        """Every line's output and line number, keyed by (case id, turn): the in-memory form."""
        entries: dict[Key, Any] = {}
        lines: dict[Key, int] = {}
        fd = self._descriptor()
        for row in range(len(self.turns)):
            if int(self.turns[row]) == DROPPED:
                continue
            obj = read_json_span(fd, int(self.offsets[row]), int(self.sizes[row]))
            case_id, _, output = _read_line(self.task, obj, self.path, int(self.linenos[row]))
            if int(self.sizes[row]) > self.max_response_bytes:
                output = Oversized(int(self.sizes[row]), int(self.linenos[row]))
            turn = int(self.turns[row])
            key = (case_id, None if turn == NO_TURN else turn)
            entries[key] = output
            lines[key] = int(self.linenos[row])
        return entries, lines

    def __reduce__(self):
        entries, lines = self.outputs()
        return (RecordedSystem, (self.path, entries, lines))

    def close(self) -> None:
        """Close the file; the index is kept (a closed system still answers, reopening it)."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
