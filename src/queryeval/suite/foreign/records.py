"""Records (one dict each) from the containers other tools write, each with where it lies.

* ``.jsonl``: one object a line (``line``);
* ``.json``: an array of objects, or an object holding one (``{"data": [...]}``, the form
  HF hub files use) (``record``: its index); or one object a line, what ``datasets``'
  ``to_json`` writes by default (``line``);
* ``.csv`` / ``.xlsx``: a header row and one record a row (``line``: the row), cells text;
* ``.parquet``: one record a row (``record``), columns keep their types (lists stay lists);
* a folder written by ``datasets.Dataset.save_to_disk`` (``record``).

``where`` is the keyword arguments an :class:`~queryeval.errors.InputError` takes to name
the record (``{"line": 3}`` or ``{"record": "2"}``).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

TABLE_SUFFIXES = (".csv", ".xlsx")


@dataclass
class Record:
    data: dict[str, Any]
    where: dict[str, Any]
    table: bool = False
    """From a CSV/xlsx table: every cell is text (a list is written as a list literal)."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _json_lines(text: str) -> bool:
    """A ``.json`` file that is JSON Lines: its first line alone is one JSON object."""
    first = text.lstrip().split("\n", 1)[0]
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def read_json_records(path: Path) -> list[Record]:
    from queryeval.io.files import decode_text, read_input_bytes
    from queryeval.io.jsonl import load_json_document

    text = decode_text(read_input_bytes(path, "suite"), path)
    try:
        data = load_json_document(text, path=path)
    except InputError:
        if _json_lines(text):  # what datasets' to_json writes by default (lines=True)
            return read_jsonl_records(path)
        raise
    if isinstance(data, dict):
        lists = [k for k, v in data.items() if isinstance(v, list)]
        if "data" in lists:
            data = data["data"]
        elif len(lists) == 1 and len(data) == 1:
            data = data[lists[0]]
        else:
            data = [data]
    if not isinstance(data, list):
        raise InputError(f"expected a JSON array of records (or {{\"data\": [...]}}), got "
                         f"{type(data).__name__}", path=path)
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError(f"a record must be an object, got {type(item).__name__}",
                             path=path, record=str(i))
        out.append(Record(item, {"record": str(i)}))
    return out


def read_jsonl_records(path: Path) -> list[Record]:
    from queryeval.io.jsonl import iter_jsonl

    return [Record(obj, {"line": line}) for line, obj in iter_jsonl(path, strict=True)]


def read_table_records(path: Path) -> list[Record]:
    from queryeval.suite.fields import read_rows

    header, rows = read_rows(path, TABLE_SUFFIXES)
    return [Record(dict(zip(header, cells, strict=True)), {"line": line}, table=True)
            for line, cells in rows]


def table_header(path: Path) -> list[str]:
    from queryeval.suite.fields import read_rows

    return read_rows(path, TABLE_SUFFIXES)[0]


MAX_DECODED_BYTES = 256 << 20
"""The most Arrow data a Parquet file or a saved HF dataset may decode to (256 MiB): a few
kilobytes of Parquet (one long value in a zstd dictionary page, repeated a million times)
decode to hundreds of gigabytes, so the size is checked before and while reading."""
PARQUET_BATCH_ROWS = 256


def _too_big(path: Path, size: int) -> InputError:
    return InputError(f"decodes to more than {MAX_DECODED_BYTES / 2**20:g} MiB of data ({size:,} "
                      "bytes so far): a compressed bomb or a table too large to hold", path=path)


def read_parquet_records(path: Path) -> list[Record]:
    """Rows of a Parquet file; refused before reading when its metadata declares more than
    :data:`MAX_DECODED_BYTES` uncompressed, and while reading (a batch of
    :data:`PARQUET_BATCH_ROWS` rows at a time) once the decoded rows pass it."""
    from queryeval.io.files import check_input

    check_input(path, "data")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow", path=path) from None
    rows: list[dict] = []
    try:
        with pq.ParquetFile(path) as pf:
            meta = pf.metadata
            declared = sum(meta.row_group(g).column(c).total_uncompressed_size
                           for g in range(meta.num_row_groups) for c in range(meta.num_columns))
            if declared > MAX_DECODED_BYTES:
                raise _too_big(path, declared)
            # one cell decodes to at most its column chunk's declared size: a batch holds
            # at most a sixteenth of the cap
            chunk = max((meta.row_group(g).column(c).total_uncompressed_size
                         for g in range(meta.num_row_groups) for c in range(meta.num_columns)),
                        default=1)
            rows_per_batch = max(1, min(PARQUET_BATCH_ROWS, MAX_DECODED_BYTES // 16 // chunk))
            size = 0
            for batch in pf.iter_batches(batch_size=rows_per_batch):
                size += batch.nbytes
                if size > MAX_DECODED_BYTES:
                    raise _too_big(path, size)
                rows.extend(batch.to_pylist())
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise InputError(f"invalid Parquet: {_one_line(exc)}", path=path) from None
    return [Record(row, {"record": str(i)}) for i, row in enumerate(rows)]


def is_hf_folder(path: Path) -> bool:
    """A folder ``datasets``' ``save_to_disk`` wrote (a Dataset or a DatasetDict)."""
    return path.is_dir() and ((path / "state.json").is_file()
                              or (path / "dataset_dict.json").is_file())


def read_hf_records(path: Path) -> list[Record]:
    if (path / "dataset_dict.json").is_file():
        splits = sorted(p.name for p in path.iterdir() if is_hf_folder(p))
        raise InputError("a DatasetDict folder: give one split's folder ("
                         + ", ".join(str(path / s) for s in splits) + ")", path=path)
    try:
        import datasets
    except ImportError:
        raise InputError("reading a saved HF dataset needs datasets: pip install 'queryeval[hf]'",
                         path=path) from None
    _check_hf_files(path)
    try:
        ds = datasets.load_from_disk(str(path), keep_in_memory=False)
        table = ds.data.table  # the Arrow rows as stored: no feature decoding, no format
        size = table.nbytes
        if size > MAX_DECODED_BYTES:
            raise _too_big(path, size)
        rows = table.to_pylist()
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets raises many types for bad folders
        raise InputError(f"not a readable saved dataset: {_one_line(exc)}", path=path) from None
    return [Record(dict(row), {"record": str(i)}) for i, row in enumerate(rows)]


def inside_folder(folder: Path, name: object, what: str) -> Path:
    """``folder / name``, which must be a regular file in ``folder`` (no ``..``, no absolute
    path, no symbolic link: each would read a file outside the folder given)."""
    if not isinstance(name, str) or not name or Path(name).is_absolute() \
            or ".." in Path(name).parts or "\\" in name:
        raise InputError(f"{what} {name!r} is not a file name inside the folder", path=folder)
    target = folder / name
    if target.is_symlink() or not target.resolve().is_relative_to(folder.resolve()):
        raise InputError(f"{what} {name!r} is a symbolic link or lies outside the folder: "
                         "only the folder's own files are read", path=folder)
    if not target.is_file():
        raise InputError(f"{what} {name!r}: no such file in the folder", path=folder)
    return target


def _check_hf_files(path: Path) -> None:
    """The files ``datasets.load_from_disk`` opens (``state.json``, ``dataset_info.json`` and
    the data files ``state.json`` names) are the folder's own regular files: a data file
    named ``../other/data.arrow`` or a symbolic link to another dataset would read it."""
    from queryeval.io.files import read_input_bytes

    for name in ("state.json", "dataset_info.json"):
        if (path / name).exists() or (path / name).is_symlink():
            inside_folder(path, name, "metadata file")
    try:
        state = json.loads(read_input_bytes(inside_folder(path, "state.json", "metadata file"),
                                            "suite"))
        files = state["_data_files"]
        names = [f["filename"] for f in files]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InputError(f"state.json is not a saved dataset's state: {_one_line(exc)}",
                         path=path) from None
    for name in names:
        inside_folder(path, name, "data file")


def read_records(path: Path) -> list[Record]:
    if path.is_dir():
        return read_hf_records(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl_records(path)
    if suffix == ".json":
        return read_json_records(path)
    if suffix == ".parquet":
        return read_parquet_records(path)
    return read_table_records(path)


# --- values ---------------------------------------------------------------------------------------
def text(rec: Record, name: str, path: Path, *, required: bool = True) -> str:
    """A text field (a number is read as its text); an absent or null one is "" unless
    ``required``."""
    value = rec.data.get(name)
    if value is None or value == "":
        if required:
            raise InputError("field required", path=path, field=name, **rec.where)
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(f"must be text, got {type(value).__name__}", path=path, field=name,
                         **rec.where)
    return str(value)


NUMPY_ELLIPSIS = "..."
_LIST_OF_TEXTS_START = re.compile(r"""\[\s*(?:\]|[rRbBuU]{0,2}['"])""")
"""How a written list of texts begins: ``[]``, ``['``, ``["`` (JSON, Python's and numpy's
prints). A cell of a joined field (DeepEval's) beginning with ``[`` otherwise that is no list
is a joined text (``[1] Paris ...|[2] ...``)."""


def list_cell(cell: str) -> list[Any]:
    """A table cell holding a list, read by the rule of docs/formats.md "List cells":

    * a JSON array;
    * a Python list literal, items separated by commas (what pandas' ``to_csv`` writes for
      a list column: ragas' ``to_csv``);
    * numpy's print of an array of texts, items separated by white space alone, lines
      wrapped (what ``datasets.Dataset.to_csv`` writes: ``['a' 'b']``), each item its own
      text (Python would join adjacent literals into one).

    ValueError (its text the reason) for anything else: a print cut short with ``...``
    (numpy leaves out the middle of an array of more than 1,000 items), items separated
    by commas in places and by white space in others, an item that is not a literal."""
    try:
        return json.loads(cell)
    except ValueError:
        pass
    import io
    import tokenize
    from itertools import pairwise

    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.COMMENT,
            tokenize.INDENT, tokenize.DEDENT)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(cell).readline)
                  if t.type not in skip]
    except (tokenize.TokenError, SyntaxError, ValueError):
        raise ValueError("not a list: write a JSON array of texts") from None
    if len(tokens) < 2 or tokens[0].string != "[" or tokens[-1].string != "]":
        raise ValueError("not a list: write a JSON array of texts")
    inner = tokens[1:-1]
    if any(t.string == NUMPY_ELLIPSIS for t in inner):
        raise ValueError("a list printed cut short with '...' (numpy prints only the first "
                         "and last 3 items of an array of more than 1,000): the items left "
                         "out are not in the file; save it with to_json or to_parquet")
    items = [t for t in inner if t.string != ","]
    commas = len(inner) - len(items)
    if commas and any(a.string != "," and b.string != "," for a, b in pairwise(inner)):
        raise ValueError("a list whose items are separated by commas in places and by white "
                         "space alone in others (a Python list or numpy's print?): cannot be "
                         "read unambiguously; write a JSON array of texts")
    try:
        if commas or len(items) < 2:  # a Python literal (pandas' repr)
            return ast.literal_eval(cell)
        if not all(t.type == tokenize.STRING for t in items):
            raise ValueError
        return [ast.literal_eval(t.string) for t in items]  # numpy's print: one item a literal
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not a list: write a JSON array of texts") from None


def text_list(rec: Record, name: str, path: Path, *, joined: str = "") -> list[str] | None:
    """A list of texts, or None when absent or null. A table cell holds it by
    :func:`list_cell`'s rule, or as one text (a list of one). ``joined``: the field's
    writer joins a list into one text with it (DeepEval's ``|`` in JSONL and CSV): a text
    is split at it, ``""`` is the empty list, and an empty item (``a||b``, a ``|`` at an
    end: an item holding the delimiter?) is refused as ambiguous; a table cell of such a field
    that begins with ``[`` but not as a list of texts and is no list is such a text."""
    value = rec.data.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        listed = None
        if rec.table and stripped.startswith("["):
            try:
                listed = list_cell(stripped)
            except ValueError as exc:
                if not joined or _LIST_OF_TEXTS_START.match(stripped):
                    raise InputError(str(exc), path=path, field=name, **rec.where) from None
                # a joined text that begins with '[' and is no list ("[1] Paris|[2] ..."):
                # its writer (DeepEval) writes joined texts only
        if listed is not None:
            value = listed
        elif joined:
            value = value.split(joined) if stripped else []
            if len(value) > 1 and any(not item.strip() for item in value):
                raise InputError(
                    f"an empty item in a {joined!r}-joined list: the list cannot be read "
                    f"unambiguously (an item holding {joined!r}?); save it as JSON (a list)",
                    path=path, field=name, **rec.where)
        elif not stripped:
            return None
        else:
            value = [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [str(value)]  # a number as the answer (inspect's target: 4)
    if hasattr(value, "tolist"):  # a numpy array (pandas' parquet)
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise InputError(f"must be a list of texts, got {type(value).__name__}", path=path,
                         field=name, **rec.where)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InputError(f"must be text, got {type(item).__name__}", path=path,
                             field=f"{name}[{i}]", **rec.where)
    return list(value)


def first_fields(records: list[Record]) -> set[str]:
    """The fields of the first record (a null counts as absent; a table's header counts)."""
    if not records:
        return set()
    return {k for k, v in records[0].data.items() if v is not None}
