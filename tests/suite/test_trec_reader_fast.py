"""The compiled TREC reader (``queryeval._trecread``) equals the exact Python reader.

Every reading rule of trec_eval 10.0 (comments, extra run columns, strtod/atol prefixes, C
whitespace, blank lines, CRLF, a missing final newline, ``--strict``) is checked by running
both readers on the same bytes: the compiled one must give the same columns (names in the same
first-appearance order, codes, values bit for bit) or, where the exact reader raises, refuse the
file so that the exact reader names the line. ``QUERYEVAL_NO_EXT=1`` forces the pure readers.
"""

from __future__ import annotations

import importlib.util
import math
import os
import random
import struct
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest

from queryeval.errors import InputError
from queryeval.metrics.ranking._columns import names_list
from queryeval.suite import trec, trec_readers
from queryeval.suite.trec import evaluate_files

NO_EXT = os.environ.get("QUERYEVAL_NO_EXT", "") not in ("", "0")
MOD = trec.native_reader()
needs_ext = pytest.mark.skipif(MOD is None, reason="compiled reader not built (or QUERYEVAL_NO_EXT)")


def test_extension_is_built_in_this_install() -> None:
    """CI installs with ``pip install -e .``: a compiler is there, so a silent fallback to the
    pure readers (``optional=True`` in setup.py) would show up here."""
    if NO_EXT:
        pytest.skip("QUERYEVAL_NO_EXT=1 forces the pure readers")
    from queryeval import _trecread  # noqa: F401  (raises if the build fell back)

    assert MOD is not None and hasattr(MOD, "scan")


def test_no_ext_env_forces_the_pure_readers(monkeypatch) -> None:
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    assert trec.native_reader() is None
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "0")
    built = importlib.util.find_spec("queryeval._trecread") is not None
    assert (trec.native_reader() is not None) == built


# --------------------------------------------------------------------------- comparison


def _canon(cols) -> tuple:
    """Columns as plain data: names in code order, codes, values (floats as their bits)."""
    value = np.asarray(cols.value)
    bits = value.view(np.uint64) if value.dtype == np.float64 else value.astype(np.int64)
    return (names_list(cols.names_q), names_list(cols.names_doc),
            np.asarray(cols.q).tolist(), np.asarray(cols.doc).tolist(), value.dtype.kind,
            bits.tolist())


def _check_same(path: Path, kind: str, strict: bool, threads: int) -> str:
    """The compiled reader gives the exact reader's columns, or refuses what it refuses;
    returns "ok" or the exact reader's error."""
    try:
        want = _canon(trec._parse_python(path, kind, strict))
    except InputError as exc:
        assert trec._parse_native(path, kind, strict, threads=threads) is None, (
            f"compiled reader accepted a file the exact reader refuses: {exc}")
        return str(exc)
    got = trec._parse_native(path, kind, strict, threads=threads)
    assert got is not None, f"compiled reader refused a valid {kind} file ({path.read_bytes()!r})"
    assert _canon(got) == want
    return "ok"


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


# Every case of tests/suite/test_trec_files.py's reading-rule tests, and a few more.
CASES = [
    ("qrels", "q1 0 a 1\nq1 0 b x\n"),
    ("qrels", "q1 0 a 1\n\nq1 0 b\n"),
    ("run", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 high t\n"),
    ("run", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 nan t\n"),
    ("run", "q1 Q0 a 1 1.0\n"),
    ("run", "q1 Q0 a 1 1.0 t\nq2 Q0 a 1 1.0 t\nq1 Q0 a 3 0.5 t\n"),
    ("qrels", "q1 0 a 1\nq1 0 a 0\n"),
    ("qrels", "# judged by hand\nq1 0 a 1_0\nq1 0 b abc\nq1 0 c 2.7\n"),
    ("run", "# run\n  # more\nq1 Q0 a 1 0_5 t x y\nq1 Q0 b 2 1.5abc t\nq1 Q0 c 3 0x1p3 t\n"),
    ("qrels", "# c\nq1 0 a 1\n"),
    ("run", "q1 Q0 a 1 1.0 t\n  # c\n"),
    ("run", "q1 Q0 a 1 1.0 t extra\n"),
    ("run", "q1 Q0 a 1 1.5abc t\n"),
    ("run", "q1 Q0 a 1 0_5 t\n"),
    ("qrels", "q1 0 a 1_0\n"),
    ("qrels", "q1 0 a 2.7\n"),
    ("qrels", "q1 0 a 1 x\n"),
    ("qrels", "  # c\nq1 0 a 1\n"),
    ("qrels", "q1 0 #a 1\n"),
    ("run", "q1 Q0 a\xa0b 1 1.0 t\nq1 Q0 c 2 0.5 t\n"),
    ("run", "# c\nq1 Q0 a 1 1.0 t\n# d\nq1 Q0 a 2 0.5 t\n"),
    ("run", "q1 Q0 a 1 -NaN t\n"),
    ("run", "q1 Q0 a 1 nan(0x7) t\n"),
    ("run", "q1 Q0 a 1 nan(abc)x t\n"),
    ("run", "q1 Q0 a 1 ınf t\n"),  # dotless i: no number (the exact reader crashed on it)
    ("run", "q1 Q0 a 1 -Infinity t\nq1 Q0 b 1 INF t\nq1 Q0 c 1 infinit t\n"),
    ("run", "q1 Q0 a 1 1e400 t\nq1 Q0 b 1 -1e-400 t\nq1 Q0 c 1 -0 t\nq1 Q0 d 1 0x1p99999 t\n"),
    ("run", "q1\tQ0  a\v1\f2.5\rt\r\nq1 Q0 b 2 1 t"),  # every C space; CRLF; no final newline
    ("run", "\n \n\t\nq1 Q0 a 1 1 t\n\n"),
    ("run", ""),
    ("qrels", "q1 0 a 99999999999999999999\n"),  # beyond 64 bits: refused
    ("qrels", "q1 0 a -9223372036854775808\nq1 0 b 9223372036854775807\nq1 0 c +3\n"),
    ("qrels", "q1 0 a 9223372036854775808\n"),
    ("qrels", "q1 0 a -\nq1 0 b +\n"),
    ("run", "q1 Q0 a 1 - t\nq1 Q0 b 1 + t\nq1 Q0 c 1 . t\nq1 Q0 d 1 .e5 t\n"),
    ("run", "é Q0 𝔸 1 0.1 t\nz Q0 a\x1fb 1 2 t\nz Q0 a\x00b 2 3 t\n"),
]


@needs_ext
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("kind", "text"), CASES)
def test_reading_rule_cases(tmp_path, kind, text, strict, threads) -> None:
    path = _write(tmp_path, "f", text.encode("utf-8"))
    _check_same(path, kind, strict, threads)


@needs_ext
@pytest.mark.parametrize("data", [b"q1 Q0 \xff 2 1.0 t\n", b"q1 Q0 a 1 1 t\n# \xed\xa0\x80\n",
                                  b"q1 Q0 a 1 1 t\xc3", b"q1 Q0 \xf4\x90\x80\x80 1 1 t\n",
                                  b"q1 Q0 \xe0\x80\x80 1 1 t\n"])
def test_invalid_utf8_is_refused_anywhere_in_the_file(tmp_path, data) -> None:
    """Not UTF-8 (also a surrogate, an overlong form, a truncated tail, above U+10FFFF), even
    in a comment: the exact reader names the line, the compiled one refuses the file."""
    path = _write(tmp_path, "r", data)
    assert "not UTF-8" in _check_same(path, "run", False, 1)


@needs_ext
def test_errors_and_line_numbers_are_the_exact_readers(tmp_path) -> None:
    """Through the public readers: the same error text and line, with and without the
    compiled reader."""
    path = _write(tmp_path, "r", b"# c\nq1 Q0 a 1 1 t\n\nq1 Q0 b 2 1.5x t\n")
    messages = []
    for no_ext in ("0", "1"):
        with pytest.MonkeyPatch.context() as env:
            env.setenv("QUERYEVAL_NO_EXT", no_ext)
            with pytest.raises(InputError) as err:
                trec.read_run(path, strict=True)
            messages.append(str(err.value))
            assert trec.read_run(path) == {"q1": {"a": 1.0, "b": 1.5}}
    assert messages[0] == messages[1] and "r:1:" in messages[0]  # the comment line comes first


# --------------------------------------------------------------------------- random files

IDS = ["q1", "q2", "10", "é", "𝔸", "a\xa0b", "x\x1fy", "#x", "Q0", "d" * 40, "ab#", "\u2028"]
NUMBERS = ["1", "0", "-1", "+2", "0.5", "1.5abc", "0_5", "-2e3x", "1e", ".5", "5.", "0x1p3",
           "0x", "0X1.8P-2", "inf", "-Infinity", "INFIN", "+3.", "1e400", "-0", "1_0", "2.7",
           "abc", "1e-400", "0.1234567890123456789012", "9007199254740993",
           "9223372036854775807", "-9223372036854775808", "00012", "1e+5", "7E-3", "0x.8p1"]
BAD_NUMBERS = ["nan", "NaN(1)", "99999999999999999999", "-nan"]
SEPS = [" ", " ", " ", "\t", "  ", " \t ", "\v", "\f", "\r"]


def _random_file(rng: random.Random, kind: str, bad: bool) -> bytes:
    lines = []
    for _ in range(rng.randrange(1, 60)):
        r = rng.random()
        if r < 0.06:
            lines.append(rng.choice(["", "   ", "\t", "# comment", "  # indented", "\t#x y"]))
            continue
        qid = rng.choice(IDS[:6]) if rng.random() < 0.8 else rng.choice(IDS)
        doc = rng.choice(IDS) + str(rng.randrange(30))
        pool = NUMBERS + (BAD_NUMBERS if bad and rng.random() < 0.05 else [])
        if rng.random() < 0.5:
            number = rng.choice(pool)
        else:
            number = repr(rng.uniform(-1e3, 1e3)) if kind == "run" else str(rng.randrange(-3, 5))
        if kind == "qrels":
            fields = [qid, "0", doc, number]
        else:
            fields = [qid, "Q0", doc, str(rng.randrange(100)), number, "tag"]
            if rng.random() < 0.1:
                fields += ["extra"] * rng.randrange(1, 3)
        if bad and rng.random() < 0.03:
            fields = fields[:-1]
        line = rng.choice(["", "", " ", "\t"]) + "".join(
            f + rng.choice(SEPS) for f in fields[:-1]) + fields[-1]
        lines.append(line + rng.choice(["", "", "", " ", "\r", "\t"]))
    text = "".join(line + rng.choice(["\n", "\n", "\n", "\r\n"]) for line in lines)
    if rng.random() < 0.3:
        text = text.rstrip("\n")
    return text.encode("utf-8")


@needs_ext
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_random_files_compiled_equals_exact(tmp_path, kind) -> None:
    rng = random.Random(f"trec-{kind}")
    outcomes = {"ok": 0, "error": 0}
    for i in range(150):
        path = _write(tmp_path, f"f{i}", _random_file(rng, kind, bad=i % 3 == 0))
        for strict in (False, True):
            for threads in (1, 2, 3):
                result = _check_same(path, kind, strict, threads)
            outcomes["ok" if result == "ok" else "error"] += 1
    # both outcomes occur often enough for the comparison to mean something
    assert outcomes["ok"] >= 50 and outcomes["error"] >= 50, outcomes


@needs_ext
def test_random_files_same_metrics(tmp_path) -> None:
    """Whole evaluations from random lenient files: compiled == pure, per query."""
    rng = random.Random(7)
    names = ["ndcg@5", "map", "mrr", "recall@10", "bpref", "num_rel_ret"]
    for i in range(20):
        q = _write(tmp_path, f"q{i}", "".join(
            f"q{j} 0 d{k}{rng.choice(SEPS)}{rng.choice(['1', '2', '0', '1_0', '2.7'])}\n"
            for j in range(5) for k in rng.sample(range(20), 6)).encode())
        r = _write(tmp_path, f"r{i}", ("# run\n" + "".join(
            f"q{j}\tQ0 d{k} 0  {rng.choice(['0.5', '1.5abc', '0_5', '0x1p-1', repr(rng.random())])}"
            f" t x\r\n" for j in range(6) for k in rng.sample(range(20), 12))).encode())
        results = []
        for no_ext in ("0", "1"):
            with pytest.MonkeyPatch.context() as env:
                env.setenv("QUERYEVAL_NO_EXT", no_ext)
                results.append(evaluate_files(q, r, names, per_query=True))
        assert results[0].qids == results[1].qids
        for name in names:
            np.testing.assert_array_equal(results[0].per_query[name], results[1].per_query[name])


@needs_ext
def test_thread_split_keeps_first_appearance_order(tmp_path) -> None:
    """A file split over threads: names in first-appearance order over the whole file, codes
    and values as one pass gives (also with more threads than lines)."""
    lines = [f"q{i % 7} Q0 d{(i * 13) % 50} 1 {i / 8} t\n" for i in range(500)]
    path = _write(tmp_path, "r", "".join(lines).encode())
    one = _canon(trec._parse_native(path, "run", threads=1))
    for threads in (2, 3, 8, 600):
        assert _canon(trec._parse_native(path, "run", threads=threads)) == one
    assert one[0] == [f"q{i}" for i in range(7)] and one[5][:3] == [
        struct.unpack("<Q", struct.pack("<d", x))[0] for x in (0.0, 0.125, 0.25)]


# --------------------------------------------------------------------------- scores


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _same_score(text: str) -> None:
    want, whole = trec_readers.c_strtod(text)
    got = MOD.score(text.encode("utf-8"))
    if math.isnan(want):
        assert got is None, text
        return
    assert got is not None and _bits(got[0]) == _bits(want) and got[1] == whole, (text, got, want)
    if whole:  # --strict accepts exactly the whole decimal / inf forms
        assert got[2] == bool(trec_readers._STRICT_FLOAT.fullmatch(text)), text


@needs_ext
def test_scores_bit_identical_random_and_adversarial() -> None:
    """Scores equal Python's correctly rounded float() bit for bit: random doubles (repr),
    random 1-25-digit decimals with exponents around the fast paths' limits (|e| 22, 27), and
    decimals within 1e-25 of the midpoint between two doubles (where double rounding in
    80-bit arithmetic would go wrong)."""
    rng = random.Random(11)
    texts = []
    for _ in range(4000):
        texts.append(repr(rng.random()))
        texts.append(repr(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]))
        texts.append(float.hex(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]))
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 26)))
        cut = rng.randrange(len(digits) + 1)
        texts.append(rng.choice(["", "-", "+"]) + digits[:cut] + "." + digits[cut:]
                     + rng.choice(["", "e22", "e-22", "e23", "E-27", "e27", "e-28", "e300"]))
        texts.append(f"{rng.randrange(2**53, 10**19)}e{rng.randrange(-30, 31)}")
    with localcontext() as ctx:
        ctx.prec = 60
        for _ in range(4000):
            d = rng.uniform(1e-10, 1e10)
            mid = (Decimal(d) + Decimal(math.nextafter(d, math.inf))) / 2
            for digits in (17, 18, 19, 25):
                texts.append(format(mid, f".{digits}e"))
    texts += ["2.4703282292062327e-324", "2.4703282292062328e-324", "4.9e-324",
              "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
              "0x1.00000000000008p0", "0x1.00000000000018p0", "0x1.fffffffffffff8p1023",
              "9007199254740993", "9007199254740995", "123456789012345678901234567890",
              "0." + "0" * 400 + "1", "1" + "0" * 400 + "e-400", "0e99999999999999999999",
              "1e-99999999999999999999", "1e99999999999999999999", "00000000000000000000001.5"]
    for text in texts:
        _same_score(text)


@needs_ext
def test_score_prefixes_and_strict_forms() -> None:
    """(value, whole, plain): plain is what ``--strict`` accepts (decimal or inf)."""
    cases = {"1.5": (1.5, True, True), "1.5abc": (1.5, False, True), "0_5": (0.0, False, True),
             "abc": (0.0, False, False), "0x1p3": (8.0, True, False), "0x": (0.0, False, True),
             "inf": (math.inf, True, True), "-Infinity": (-math.inf, True, True),
             "infinit": (math.inf, False, True), "ınf": (0.0, False, False),
             "-": (0.0, False, False), "+3.": (3.0, True, True), "1e": (1.0, False, True)}
    for text, want in cases.items():
        assert MOD.score(text.encode()) == want, text
    for text in ("nan", "-NaN", "nan(12)", "NAN(x"):
        assert MOD.score(text.encode()) is None


def test_dotless_i_is_no_number_in_the_exact_reader(tmp_path, monkeypatch) -> None:
    """C's strtod reads ASCII letters only: 'ınf' (dotless i) is no number, so trec_eval reads
    0. The exact reader's case-insensitive regex matched it as "inf" and then crashed in
    float() with a traceback."""
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    monkeypatch.setattr(trec, "_parse_arrow", lambda path, kind: None)
    assert trec_readers.c_strtod("ınf") == (0.0, False) and trec_readers.c_strtod("İNFINITY") == (0.0, False)
    path = _write(tmp_path, "r", "q1 Q0 a 1 ınf t\n".encode())
    assert trec.read_run(path) == {"q1": {"a": 0.0}}
    with pytest.raises(InputError, match=r"r:1: column 5 \(score\).*would read 0.0"):
        trec.read_run(path, strict=True)


@needs_ext
def test_the_file_is_read_not_mapped(tmp_path, monkeypatch) -> None:
    """The compiled reader reads the bytes and never maps the file: a mapped file truncated
    by another process would end this one with SIGBUS (and some file systems refuse mmap)."""
    import mmap

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")

    path = _write(tmp_path, "r", b"q1 Q0 a 1 2.5 t\nq1 Q0 b 2 1.5 t\n")
    monkeypatch.setattr(mmap, "mmap", refuse)
    cols = trec._parse_native(path, "run")
    assert cols is not None and names_list(cols.names_doc) == ["a", "b"]
    assert cols.value.tolist() == [2.5, 1.5]


@needs_ext
@pytest.mark.parametrize("threads", [1, 2])
def test_multibyte_ids_across_block_boundaries(tmp_path, threads) -> None:
    """The UTF-8 check walks the file in 64 KiB blocks: a 4-byte or 2-byte character cut by a
    block boundary at each of its inner offsets is accepted, a bad byte is still refused."""
    for qid in ("q", "q1", "q12", "q123"):  # shifts the characters against the boundary
        for char in ("𝔸", "é"):
            line = f"{qid} Q0 {char * 40000} 1 1.5 t\nq1 Q0 d 2 1 t\n"
            path = _write(tmp_path, "r", line.encode())
            assert _check_same(path, "run", False, threads) == "ok"
            bad = _write(tmp_path, "bad", line.encode() + b"q1 Q0 \xc3( 1 1 t\n")
            assert "not UTF-8" in _check_same(bad, "run", False, threads)


@needs_ext
def test_refused_file_goes_straight_to_the_exact_reader(tmp_path, monkeypatch) -> None:
    """A file the compiled reader refuses has a line to refuse: the exact reader names it at
    once (pyarrow would only fail too, after reading the whole file)."""
    def no_pyarrow(path, kind):
        raise AssertionError("pyarrow reader tried after the compiled reader refused")

    monkeypatch.setattr(trec, "_parse_arrow", no_pyarrow)
    path = _write(tmp_path, "r", b"q1 Q0 a 1 1 t\nq1 Q0 b 2 1.5x t\n")
    with pytest.raises(InputError, match=r"r:2: column 5 \(score\)"):
        trec.read_run(path, strict=True)
    assert trec.read_run(path) == {"q1": {"a": 1.0, "b": 1.5}}


# --------------------------------------------------------------------------- red-team findings


@pytest.mark.parametrize("ext", [False, True])
def test_relevance_of_thousands_of_digits_is_read_not_crashed(tmp_path, monkeypatch, ext) -> None:
    """A relevance of over 4,300 digits: Python's int() refuses it with a ValueError (a
    traceback, in both readers: the compiled one hands the file to the exact one). Now
    leading zeros count for nothing and any longer value is refused as out of range."""
    if ext and MOD is None:
        pytest.skip("compiled reader not built")
    if not ext:
        monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    assert trec_readers.c_atol("9" * 5000) == (2**64, True)
    assert trec_readers.c_atol("-" + "0" * 5000 + "12x") == (-12, False)
    zeros = _write(tmp_path, "q0", b"q1\t0 a " + b"0" * 5000 + b"3\nq1 0 b -" + b"0" * 6000 + b"\n")
    assert trec.read_qrels(zeros) == {"q1": {"a": 3, "b": 0}}
    for level in (b"9" * 5000, b"-" + b"1" * 4301, b"+" + b"0" * 4000 + b"1" * 20):
        path = _write(tmp_path, "q", b"q1 0 a 1\nq1 0 b " + level + b"x\n")
        with pytest.raises(InputError, match=r"q:2: column 4 \(relevance\).*out of range"):
            trec.read_qrels(path)


@needs_ext
@pytest.mark.slow
def test_score_exponent_beyond_the_parsers_cap_is_not_cancelled() -> None:
    """The compiled reader stopped adding exponent digits at 10^8 but still took its exact
    fast path: 1e-100000000 written as a 10^8-digit fraction, times e1000000000, read as
    1.0 instead of inf (and e.g. 1e-900000000 as 1.0 instead of 0)."""
    frac = b"0." + b"0" * 99_999_999 + b"1"  # 1e-100000000, a 100 MB field
    for exp, want in ((b"e1000000000", math.inf), (b"e100000001", 10.0), (b"e100000000", 1.0),
                      (b"e-1000000000", 0.0), (b"e00000000000100000000", 1.0)):
        got = MOD.score(frac + exp)
        assert got is not None and got[0] == want and got[1], (exp, got)
        assert trec_readers.c_strtod((frac + exp).decode()) == (want, True)


def test_a_path_swapped_for_a_fifo_after_the_check_is_refused(tmp_path) -> None:
    """_read_columns checks the path, then the readers opened it again with a plain open():
    a path replaced by a FIFO in between made the read wait for a writer forever. Every
    reader now opens through io/files and checks the open descriptor."""
    import threading

    fifo = tmp_path / "r"
    os.mkfifo(fifo)
    readers = [lambda: trec._parse_python(fifo, "run"), lambda: trec._row_lines(fifo, [0], "run")]
    if MOD is not None:
        readers.append(lambda: trec._parse_native(fifo, "run"))
    for read in readers:
        outcome: list = []

        def call(read=read, outcome=outcome) -> None:
            try:
                read()
            except InputError as exc:
                outcome.append(str(exc))

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(5)
        if worker.is_alive():  # the old code: blocked in open(); release it, then fail
            with open(fifo, "wb"):
                pass
            worker.join(5)
            pytest.fail("the reader opened a FIFO and waited for a writer")
        assert outcome and "not a regular file" in outcome[0], outcome


def test_duplicate_in_a_file_shortened_meanwhile_is_an_input_error(tmp_path) -> None:
    """The line numbers of a duplicate pair are found by reading the file again: a file
    shortened in between raised KeyError (a traceback)."""
    path = _write(tmp_path, "q", b"q1 0 a 1\n")
    with pytest.raises(InputError, match=r"q: the file changed while it was being read"):
        trec._row_lines(path, [0, 3], "qrels")
    assert trec._row_lines(path, [0], "qrels") == [1]


@pytest.mark.parametrize(("data", "want"), [
    (b"q1 Q0 a 1 1.0 t\rq2 Q0 b 1 2.0 t\n", {"q1": {"a": 1.0}}),  # one line, 12 fields
    (b"q1 Q0 a 1 1.0 t\r\rq1 Q0 b 1 2.0 t\r\n", {"q1": {"a": 1.0}}),
    (b"\xef\xbb\xbfq1 Q0 a 1 1.0 t\n", {"\ufeffq1": {"a": 1.0}}),  # the BOM is part of the id
    (b"q1 Q0 a 1 1.0 t\r\nq1 Q0 b 1 2 t\r\n", {"q1": {"a": 1.0, "b": 2.0}}),
])
def test_pure_readers_keep_trec_evals_lines_and_first_id(tmp_path, monkeypatch, data, want):
    """Without the extension pyarrow read the plain files: it ended a line at a lone CR (C
    whitespace for trec_eval, so the second "line" was extra columns) and dropped a leading
    UTF-8 BOM (trec_eval keeps it in the first query id). Such files go to the exact reader."""
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    path = _write(tmp_path, "r", data)
    assert trec.read_run(path) == want
    qrels = _write(tmp_path, "q", data.replace(b" Q0", b" 0").replace(b" 1 1.0 t", b" 1")
                   .replace(b" 1 2.0 t", b" 2").replace(b" 1 2 t", b" 2"))
    if data.count(b"\r") != data.count(b"\r\n"):
        with pytest.raises(InputError, match=r"q:1: expected 4 .*got 8"):
            trec.read_qrels(qrels)
    else:
        assert trec.read_qrels(qrels) == trec._to_dicts(trec._parse_python(qrels, "qrels"), int)


@pytest.mark.parametrize(("line", "score"), [
    (b"q5  Q0 d33\t5 -16.5 tag\n", -16.5), (b"q5  Q0 d33\x0c5 -16.5 tag\n", -16.5),
    (b"q5 Q0 d33 5\t7 -16.5 tag\n", 7.0), (b"q5 Q0  d33\x0b5 -16.5 tag\n", -16.5),
])
def test_pure_readers_see_separators_in_unread_columns(tmp_path, monkeypatch, line, score):
    """Found by ``bench/fuzz.py --trec-native``: two spaces in one place and a tab (VT, FF) in
    a column pyarrow does not keep made pyarrow see 6 columns with docid "Q0" where trec_eval
    reads docid "d33", or score -16.5 where it reads 7; its check looked at the kept columns
    only."""
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    path = _write(tmp_path, "r", line)
    assert trec.read_run(path) == {"q5": {"d33": score}}


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_pure_readers_refuse_bad_utf8_in_unread_columns(tmp_path, monkeypatch, kind) -> None:
    """Found by ``bench/fuzz.py --trec-native``: bad UTF-8 in the Q0/iter (or rank, tag)
    column passed pyarrow, which checks the columns it keeps only; the compiled and the exact
    reader refuse it, so the same file was read or refused depending on the install."""
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    data = (b"q1 Q0 a 1 1.5 t\nq1 Q\xc0\xaf0 b 2 1 t\n" if kind == "run"
            else b"q1 0 a 1\nq1 \xff b 0\n")
    path = _write(tmp_path, "f", data)
    with pytest.raises(InputError, match=r"f:2: not UTF-8"):
        trec.read_run(path) if kind == "run" else trec.read_qrels(path)


def test_a_query_of_tens_of_thousands_of_tied_documents_is_fast(tmp_path) -> None:
    """A run whose documents all share one score (a hostile or lazy run: every score 0):
    breaking the ties compared each relevant document with its whole query, n^2 string
    comparisons (n = 40,000: 145 s; a 1M-line run: about a day). Now one sort. trec_eval's
    order is docid descending: d29999 (not relevant), d29998 (relevant), ... so every second
    document is relevant and AP is exactly 1/2."""
    import time

    n = 30_000
    qrels = _write(tmp_path, "q", b"".join(b"q 0 d%05d %d\n" % (i, 1 - i % 2) for i in range(n)))
    run = _write(tmp_path, "r", b"".join(b"q Q0 d%05d 1 0 t\n" % i for i in range(n)))
    began = time.perf_counter()
    result = evaluate_files(qrels, run, ["map", "P.10", "recip_rank"])
    assert time.perf_counter() - began < 20  # the old code: ~80 s here
    assert result.means == {"map": 0.5, "P.10": 0.5, "recip_rank": 0.5}


def _colliding_ids(count: int) -> np.ndarray:
    """8-byte ids whose hash under the compiled reader's former fixed function (no seed)
    shares its low 24 bits: mix is inverted (xor-shift, multiply by the inverse constant),
    keeping candidates whose bytes are all field bytes (ASCII but no C space)."""
    k, c = 0xD6E8FEB86659FD93, 0x9E3779B97F4A7C15
    k_inv, c_inv = np.uint64(pow(k, -1, 2**64)), np.uint64(pow(c, -1, 2**64))
    rng = np.random.default_rng(7)
    found, total = [], 0
    sep = np.zeros(256, dtype=bool)
    sep[[9, 10, 11, 12, 13, 32]] = True
    sep[128:] = True
    while total < count:
        h = (rng.integers(0, 2**40, size=4_000_000, dtype=np.uint64) << np.uint64(24)) | np.uint64(
            0x5A5A5A)
        h ^= h >> np.uint64(32)
        h *= k_inv
        h ^= h >> np.uint64(32)
        raw = ((h - np.uint64(8)) * c_inv).view(np.uint8).reshape(-1, 8)
        ok = raw[~sep[raw].any(axis=1)]
        found.append(ok)
        total += len(ok)
    return np.unique(np.concatenate(found), axis=0)[:count]


@needs_ext
@pytest.mark.slow
def test_ids_built_to_collide_in_the_hash_table_stay_linear(tmp_path) -> None:
    """Red team: with a fixed hash, 150,000 ids sharing their low hash bits made the id table
    probe every earlier id on each insertion (n^2: ~9 s here, hours for a million). The hash
    is now seeded per process from os.urandom, so such a file cannot be built offline."""
    import time

    ids = _colliding_ids(150_000)
    data = b"".join(b"q 0 " + bytes(row) + b" 1\n" for row in ids)
    path = _write(tmp_path, "q", data)
    began = time.perf_counter()
    cols = trec._parse_native(path, "qrels", threads=1)
    assert time.perf_counter() - began < 3  # the fixed hash: ~9 s
    assert cols is not None and len(cols.names_doc) == len(ids) == 150_000
    assert names_list(cols.names_doc)[:3] == [bytes(r).decode() for r in ids[:3]]
