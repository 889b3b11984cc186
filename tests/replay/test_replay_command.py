"""`archive-pipelines replay` as a person runs it: a process that prints where it listens,
answers, and stops cleanly on SIGTERM; clear errors for bad settings. Also the server's
bounds: 5,000 idle connections and a client reading one byte a second do not stop it
serving others, and its memory stays bounded."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.catalog import Catalog
from tests.helpers.cli import CLI, run_cli
from tests.helpers.replay import GALLERY_URL, captures_of, fetch, memento_path


@pytest.fixture(scope="module")
def replay_process(replay_data: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    process = subprocess.Popen([*CLI, "--data-dir", str(replay_data), "replay", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:([0-9]+)/web/", line)
        assert found, f"{line!r} {process.stderr.read() if process.poll() is not None else ''}"
        yield process, int(found.group(1))
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+([0-9]+) kB", status).group(1))  # type: ignore[union-attr]


def test_the_command_serves_a_memento(replay_process: tuple[subprocess.Popen[str], int],
                                      replay_catalog: Catalog) -> None:
    _process, port = replay_process
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    answer = fetch(port, memento_path(first))
    assert answer.status == 200 and b"Gallery" in answer.body


def test_idle_connections_and_a_slow_reader_do_not_starve_others(
        replay_process: tuple[subprocess.Popen[str], int], replay_catalog: Catalog) -> None:
    process, port = replay_process
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    fetch(port, memento_path(first))
    before = rss_kb(process.pid)
    idle = []
    try:
        for _ in range(5000):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        # A slow reader: asks for the page and reads nothing (its window fills).
        slow = socket.create_connection(("127.0.0.1", port), timeout=10)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        slow.sendall(f"GET {memento_path(first)} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        started = time.monotonic()
        answers = [fetch(port, memento_path(first)) for _ in range(20)]
        elapsed = time.monotonic() - started
        assert all(a.status == 200 for a in answers)
        assert elapsed < 10, f"20 requests took {elapsed:.1f} s beside 5,000 idle connections"
        grown = rss_kb(process.pid) - before
        print(f"5,000 idle connections + a slow reader: 20 requests in {elapsed:.2f} s, "
              f"RSS +{grown / 1024:.1f} MB")
        assert grown < 200 * 1024, f"the server grew by {grown / 1024:.0f} MB"
        assert slow.recv(1)  # the slow reader still gets its answer, one byte at a time
        slow.close()
    finally:
        for connection in idle:
            connection.close()
    assert fetch(port, "/healthz").status == 200


def test_sigterm_stops_it_cleanly(replay_process: tuple[subprocess.Popen[str], int]) -> None:
    process, port = replay_process
    assert fetch(port, "/healthz").status == 200
    process.send_signal(signal.SIGTERM)
    assert process.wait(20) == 0


def test_a_bad_exclusion_is_a_clear_error(replay_data: Path, tmp_path: Path) -> None:
    import shutil

    data_dir = tmp_path / "data"
    shutil.copytree(replay_data, data_dir, symlinks=True)
    (data_dir / "archive.toml").write_text('[replay]\nexclusions = ["not a prefix"]\n')
    done = run_cli("--data-dir", str(data_dir), "replay", "--port", "0")
    assert done.returncode == 2
    assert "replay.exclusions" in done.stderr and "Traceback" not in done.stderr
