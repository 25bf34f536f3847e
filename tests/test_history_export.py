"""`trayvml history` and `log` output: written through to pipes and devices, atomically to files,
``-`` for standard output; streamed; ranges beyond the every-sample tier; bad input in a sentence."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.test_store import _samples, _write
from trayvml import cli

QUERY = "timestamp,index,utilization.gpu"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    _write(folder, _samples("idle:gpus=h100*2", time.time() - 120, 30))
    return folder


def _history(store: Path, *arguments: str) -> int:
    return cli.main(["history", "--store", str(store), "--since", "1h", "--query", QUERY, *arguments])


def test_history_to_a_fifo_writes_through_to_its_reader(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as pipe:
            got.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert _history(store, "--csv", str(fifo)) == 0
    reader.join(5)
    assert not reader.is_alive() and got, "the reader on the pipe got nothing"
    lines = got[0].decode().splitlines()
    assert lines[0] == "timestamp, index, utilization.gpu [%]" and len(lines) == 1 + 30 * 2
    assert fifo.is_fifo()  # not replaced by a plain file
    assert "60 rows written" in capsys.readouterr().err


def test_history_through_a_symlink_writes_its_target_and_keeps_the_link(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert _history(store, "--csv", str(link)) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    lines = target.read_text().splitlines()
    assert lines[0] == "timestamp, index, utilization.gpu [%]" and len(lines) == 61
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_history_to_a_new_file_leaves_no_temporary_and_is_readable_by_others(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    assert _history(store, "--csv", str(out)) == 0
    assert len(out.read_text().splitlines()) == 61
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()  # as `>` makes it, not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "store"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_history_dash_is_standard_output(store: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _history(store, "--csv", "-") == 0
    assert len(capsys.readouterr().out.splitlines()) == 61
    assert not (tmp_path / "-").exists()


def test_log_dash_is_standard_output(tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["log", "--csv", "-", "--count", "1", "--query", QUERY, "--simulate=idle:gpus=h100*2"]) == 0
    out = capfd.readouterr().out
    assert out.splitlines()[0] == "timestamp, index, utilization.gpu [%]" and len(out.splitlines()) == 3
    assert not (tmp_path / "-").exists()


def test_a_relative_store_is_the_folder_under_the_working_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["record", "--simulate=idle:gpus=h100", "--store", "rel", "--count", "1"]) == 0
    assert "1 sample recorded" in capsys.readouterr().err
    assert cli.main(["history", "--store", "rel", "--stats"]) == 0
    assert "1 GPU and the host" in capsys.readouterr().out
