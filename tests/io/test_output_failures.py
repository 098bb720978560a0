"""Output failures: a full disk (ENOSPC, simulated at the write path, and a real kernel
``File too large`` from RLIMIT_FSIZE) or a read-only output folder give ONE error line naming
the file and the OS reason, exit code 2, no traceback; the JSONL lines already written stay
valid and ``--resume`` finishes the run with the same metrics as an uninterrupted one."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.errors import OutputError
from queryeval.run import log as runlog

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "sdmx" / "suite"
RESPONSES = REPO / "examples" / "sdmx" / "responses.jsonl"
N_CASES = 23
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def run_args(out: Path, *extra: str) -> list[str]:
    return ["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(out), "-q", "-c", "1", *extra]


def files(out: Path) -> dict[str, Path]:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    return {"batch": batch, "jsonl": batch.parent / f"results_{bid}.jsonl",
            "csv": batch.parent / f"results_{bid}.csv", "metrics": batch.parent / f"metrics_{bid}.json",
            "xlsx": batch.parent / f"report_{bid}.xlsx"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("ref")
    assert main(run_args(out, "--no-report")) == 0
    return json.loads(files(out)["metrics"].read_text())


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def valid_lines(path: Path) -> list[dict]:
    data = path.read_text(encoding="utf-8")
    assert data == "" or data.endswith("\n"), "a partial line was left behind"
    return [json.loads(x) for x in data.splitlines()]


def resume_and_compare(out: Path, reference: dict, capsys) -> None:
    assert main(["run", "--resume", str(out), "-q"]) == 0
    capsys.readouterr()
    f = files(out)
    ids = [r["case_id"] for r in valid_lines(f["jsonl"])]
    assert len(ids) == len(set(ids)) == N_CASES
    got = json.loads(f["metrics"].read_text())
    assert got["overall_metrics"] == reference["overall_metrics"]
    assert got["group_metrics"] == reference["group_metrics"]
    assert json.loads(f["batch"].read_text())["status"] == "complete"


def test_disk_full_while_appending_results(tmp_path, monkeypatch, capsys, reference):
    real = runlog.write_all
    calls = []

    def filling_disk(fh, data):
        calls.append(1)
        if len(calls) > 7:  # the 8th line: half of it reaches the disk, then ENOSPC
            fh.write(data[: len(data) // 2])
            raise ENOSPC
        real(fh, data)

    monkeypatch.setattr(runlog, "write_all", filling_disk)
    out = tmp_path / "o"
    assert main(run_args(out)) == 2
    f = files(out)
    assert one_error_line(capsys) == f"error: cannot write {f['jsonl']}: No space left on device"
    assert len(valid_lines(f["jsonl"])) == 7  # the half line was cut off
    assert not f["metrics"].exists()
    assert json.loads(f["batch"].read_text())["status"] == "running"
    monkeypatch.setattr(runlog, "write_all", real)
    resume_and_compare(out, reference, capsys)


@pytest.mark.parametrize("target", ["metrics", "csv"])
def test_disk_full_while_writing_metrics_or_csv(tmp_path, monkeypatch, capsys, reference, target):
    real_text, real_open = runlog.write_text_atomic, runlog.atomic_open

    def text(path, data):
        if Path(path).name.startswith(f"{target}_"):
            raise ENOSPC
        return real_text(path, data)

    def opener(path, *a, **kw):
        if Path(path).name.startswith("results_") and Path(path).suffix == f".{target}":
            raise ENOSPC
        return real_open(path, *a, **kw)

    monkeypatch.setattr(runlog, "write_text_atomic", text)
    monkeypatch.setattr(runlog, "atomic_open", opener)
    out = tmp_path / "o"
    assert main(run_args(out, "--no-report")) == 2
    f = files(out)
    assert one_error_line(capsys) == f"error: cannot write {f[target]}: No space left on device"
    assert len(valid_lines(f["jsonl"])) == N_CASES
    assert json.loads(f["batch"].read_text())["status"] == "running"
    monkeypatch.setattr(runlog, "write_text_atomic", real_text)
    monkeypatch.setattr(runlog, "atomic_open", real_open)
    resume_and_compare(out, reference, capsys)


def test_disk_full_while_saving_the_xlsx(tmp_path, monkeypatch, capsys, reference):
    import openpyxl

    def no_space(self, filename):
        raise ENOSPC

    monkeypatch.setattr(openpyxl.Workbook, "save", no_space)
    out = tmp_path / "o"
    assert main(run_args(out)) == 2
    f = files(out)
    assert one_error_line(capsys) == f"error: cannot write {f['xlsx']}: No space left on device"
    assert not f["xlsx"].exists()
    assert not [p for p in f["xlsx"].parent.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    resume_and_compare(out, reference, capsys)
    assert f["xlsx"].exists()


def test_report_temp_file_names_map_back_to_their_target(tmp_path):
    from queryeval.report.run_reports import written_file as _written_file

    tmp = tmp_path / ".report_ab-12.xlsx.k2j_x9.tmp"
    assert _written_file(OSError(errno.ENOSPC, "x", str(tmp)), tmp_path / "f") == tmp_path / "report_ab-12.xlsx"
    assert _written_file(OSError(errno.ENOSPC, "x"), tmp_path / "f") == tmp_path / "f"
    assert _written_file(OSError(errno.EACCES, "x", "/a/b.html"), tmp_path / "f") == Path("/a/b.html")
    assert str(OutputError.from_os("/x/y.json", PermissionError(errno.EACCES, "Permission denied"))) \
        == "cannot write /x/y.json: Permission denied"


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_real_file_size_limit_from_the_kernel(tmp_path, capsys, reference):
    """RLIMIT_FSIZE makes the kernel refuse writes past a size (EFBIG), like a full disk:
    the results JSONL outgrows it after a few lines, part-way through a line."""
    out = tmp_path / "o"
    proc = subprocess.run([sys.executable, "-m", "queryeval", *run_args(out, "--no-report")], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=_limit_file_size(6000))  # noqa: PLW1509 - single-threaded here
    f = files(out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"error: cannot write {f['jsonl']}: {os.strerror(errno.EFBIG)}\n"
    kept = valid_lines(f["jsonl"])
    assert 0 < len(kept) < N_CASES and f["jsonl"].stat().st_size <= 6000
    resume_and_compare(out, reference, capsys)


@pytest.fixture
def read_only(monkeypatch):
    """Make a folder read-only: chmod when not root; as root (who may write anyway) refuse
    the temporary files of atomic writes inside it, as the kernel would."""
    import queryeval.io.atomic as atomic

    made: list[Path] = []

    def apply(folder: Path) -> None:
        if os.geteuid() != 0:
            folder.chmod(0o555)
            made.append(folder)
            return
        real = atomic.tempfile.mkstemp

        def mkstemp(*a, dir=None, **kw):  # noqa: A002 - tempfile's own name
            if dir is not None and Path(dir).resolve().is_relative_to(folder.resolve()):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
            return real(*a, dir=dir, **kw)

        monkeypatch.setattr(atomic.tempfile, "mkstemp", mkstemp)

    yield apply
    for folder in made:
        folder.chmod(0o755)


def test_read_only_output_folder(tmp_path, capsys, read_only):
    import datetime as dt

    out = tmp_path / "o"
    dated = out / dt.date.today().isoformat()
    dated.mkdir(parents=True)
    read_only(dated)
    assert main(run_args(out)) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: cannot write {dated}/batch_") and line.endswith(".json: Permission denied")


def test_resume_into_a_folder_made_read_only_keeps_the_results(tmp_path, monkeypatch, capsys, read_only):
    real = runlog.write_all
    calls = []

    def filling_disk(fh, data):
        calls.append(1)
        if len(calls) > 5:
            raise ENOSPC
        real(fh, data)

    monkeypatch.setattr(runlog, "write_all", filling_disk)
    out = tmp_path / "o"
    assert main(run_args(out, "--no-report")) == 2
    capsys.readouterr()
    monkeypatch.setattr(runlog, "write_all", real)
    f = files(out)
    before = f["jsonl"].read_bytes()
    read_only(f["batch"].parent)
    assert main(["run", "--resume", str(out), "-q"]) == 2
    assert one_error_line(capsys) == f"error: cannot write {f['batch']}: Permission denied"
    assert f["jsonl"].read_bytes() == before and len(valid_lines(f["jsonl"])) == 5
