"""The fork server behaves as subprocess.run / Popen of `python -m MODULE ...` would: exit
codes and signals, captured output, a replaced environment, the working directory, timeouts,
tracebacks, threads at once, spawn pools in the child; and it leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from archive_testkit.forkserver import ForkServer, ForkServerError

ROOT = Path(__file__).resolve().parents[2]
CHILD = [sys.executable, "-m", "tests.testkit.forkserver_child"]


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    with ForkServer(preload=["tests.testkit.forkserver_child"], cwd=ROOT) as started:
        yield started


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone(*pids: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_exit_codes_and_output_come_back_as_from_subprocess_run(server: ForkServer) -> None:
    for code in (0, 3):
        done = server.run([*CHILD, "exit", str(code)], cwd=ROOT)
        assert isinstance(done, subprocess.CompletedProcess)
        assert (done.args, done.returncode) == ([*CHILD, "exit", str(code)], code)
        assert (done.stdout, done.stderr) == ("out\n", "err\n")
    with pytest.raises(subprocess.CalledProcessError):
        server.run([*CHILD, "exit", "4"], cwd=ROOT, check=True)


def test_argv_is_as_python_dash_m_makes_it(server: ForkServer) -> None:
    done = server.run([*CHILD, "argv", "a", "b c"], cwd=ROOT)
    assert json.loads(done.stdout) == [str(ROOT / "tests/testkit/forkserver_child.py"), "argv",
                                       "a", "b c"]


def test_an_uncaught_exception_exits_1_with_its_traceback(server: ForkServer) -> None:
    done = server.run([*CHILD, "raise", "boom"], cwd=ROOT)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert done.stderr.endswith("RuntimeError: boom\n")


def test_sigkill_comes_back_as_minus_9(server: ForkServer) -> None:
    with server.popen([*CHILD, "sleep", "60"], cwd=ROOT, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "sleeping\n"
        assert proc.poll() is None
        proc.kill()
        assert proc.wait(timeout=10) == -signal.SIGKILL
    assert not alive(proc.pid)
    proc.kill()  # after the end: nothing happens (the pid may be another process's by now)


def test_popen_communicate_and_wait_timeout(server: ForkServer) -> None:
    proc = server.popen([*CHILD, "sleep", "0.3"], cwd=ROOT, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.01)
    assert proc.communicate() == ("sleeping\n", "")
    assert proc.returncode == 0


def test_the_environment_is_replaced_not_merged(server: ForkServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKSERVER_TEST", "parent")
    replaced = server.run([*CHILD, "env", "ONLY", "FORKSERVER_TEST", "PATH"], cwd=ROOT,
                          env={"ONLY": "1"})
    assert replaced.stdout == "ONLY=1\nFORKSERVER_TEST unset\nPATH unset\n", replaced.stderr
    inherited = server.run([*CHILD, "env", "ONLY", "FORKSERVER_TEST"], cwd=ROOT)
    assert inherited.stdout == "ONLY unset\nFORKSERVER_TEST=parent\n"  # env=None: ours, now


def test_the_working_directory(server: ForkServer, tmp_path: Path) -> None:
    assert server.run([*CHILD, "cwd"], cwd=tmp_path).stdout == f"{tmp_path}\n"
    assert server.run([*CHILD, "cwd"]).stdout == f"{os.getcwd()}\n"  # None: ours, now


def test_a_timeout_kills_the_child_and_what_it_started(server: ForkServer) -> None:
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        server.run([*CHILD, "grandchild"], cwd=ROOT, timeout=1.5)
    assert time.monotonic() - started < 10
    assert expired.value.timeout == 1.5
    assert isinstance(expired.value.output, str) and expired.value.output.endswith("started\n")
    assert gone(int(expired.value.output.split()[0]))


def test_calls_from_threads_at_once(server: ForkServer) -> None:
    def call(code: int) -> tuple[int, str]:
        done = server.run([*CHILD, "exit", str(code)], cwd=ROOT, timeout=60)
        return done.returncode, done.stdout

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(call, range(16))) == [(code, "out\n") for code in range(16)]


def test_children_get_their_own_random_seed(server: ForkServer) -> None:
    draws = {server.run([*CHILD, "random"], cwd=ROOT).stdout for _ in range(4)}
    assert len(draws) == 4


def test_a_child_can_use_a_spawn_process_pool(server: ForkServer) -> None:
    done = server.run([*CHILD, "pool", "6"], cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0, 1, 4, 9, 16, 25]


def test_stop_leaves_no_process_behind() -> None:
    server = ForkServer(preload=["tests.testkit.forkserver_child"], cwd=ROOT).start()
    assert server._zygote is not None
    zygote = server._zygote.pid
    proc = server.popen([*CHILD, "grandchild"], cwd=ROOT, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    assert proc.stdout.readline() == "started\n"
    folder = server._dir
    server.stop()
    proc.stdout.close()
    assert gone(zygote, proc.pid, grandchild)
    assert folder is not None and not folder.exists()


def test_the_zygote_dies_with_its_client() -> None:
    script = f"""
import subprocess, time
from archive_testkit.forkserver import ForkServer
server = ForkServer(preload=["tests.testkit.forkserver_child"]).start()
proc = server.popen({[*CHILD, "grandchild"]!r}, stdout=subprocess.PIPE)
print(server._zygote.pid, proc.pid, proc.stdout.readline().strip(), server._dir, flush=True)
time.sleep(300)
"""
    client = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    assert client.stdout is not None
    *pids, folder = client.stdout.readline().split()
    client.kill()  # no stop(), no atexit: the zygote sees its stdin close
    client.wait()
    client.stdout.close()
    assert len(pids) == 3 and gone(*map(int, pids))
    assert not Path(folder).exists()  # the socket's temp folder: removed by the zygote


def test_a_preload_that_fails_starts_a_thread_or_holds_a_file_is_refused() -> None:
    for module, reason in (("tests.testkit.no_such_module", "No module named"),
                           ("tests.testkit.forkserver_threaded", "the preloads started threads"),
                           ("tests.testkit.forkserver_holds_file", "forkserver_holds_file.py")):
        with ForkServer(preload=[module], cwd=ROOT) as server, \
                pytest.raises(ForkServerError, match=reason):
            server.run([*CHILD, "exit", "0"], cwd=ROOT)


def test_only_python_dash_m_is_served(server: ForkServer) -> None:
    with pytest.raises(ValueError, match="python -m MODULE"):
        server.run(["ls", "-l"])
