"""A fork server for tests that start `python -m MODULE ...` over and over (crash loops).

    with ForkServer(preload=["tests.storage.crash_cli"]) as server:
        done = server.run([sys.executable, "-m", "tests.storage.crash_cli", "sql", "7", ...],
                          cwd=ROOT, env=env, timeout=120)     # a subprocess.CompletedProcess
        with server.popen([...], stdout=subprocess.PIPE) as proc:  # Popen-like: readline, kill
            ...

Each call forks a child of a zygote (`archive_testkit.zygote`) that imported the preloads
once, instead of paying a fresh interpreter's ~2 s of imports. The child is a real process:
its own pid, argv, environment (replaced, not merged, as with subprocess's env=), working
directory and stdio; `kill -9` kills it for real, its exit code or -signal comes back as a
subprocess's does, and an uncaught exception exits 1 with its traceback on stderr. What
differs from a fresh interpreter: the preloaded modules are already imported (so whatever they
read from the environment at import time, they read from the zygote's), every child shares
the zygote's str hash seed, and stdin is /dev/null.

Safe from several threads at once (one connection per child). stop() (or leaving the `with`,
or the interpreter's exit) kills every child's process group and ends the zygote; so does the
zygote when its client dies. Linux only (pidfds, SOCK_SEQPACKET).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import locale
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from archive_testkit.zygote import MAX_MESSAGE

StrPath = str | Path


class ForkServerError(RuntimeError):
    """The zygote failed (a preload did not import, or it died); its log is in the message."""


class ForkedProcess:
    """A child of the zygote, used like subprocess.Popen: `pid`, `returncode` (negative: the
    signal that killed it), `stdout` (a text stream when asked for PIPE), poll(), wait(),
    send_signal(), kill(), communicate(). stderr=PIPE is collected in a temp file (no pipe to
    fill up) and returned by communicate(); `stderr` is then None. One thread per instance."""

    def __init__(self, server: ForkServer, args: list[str], conn: socket.socket,
                 *, stdout: IO[str] | None, stderr_file: IO[bytes] | None) -> None:
        self.args = args
        self.stdout = stdout
        self.stderr: IO[str] | None = None
        self.returncode: int | None = None
        self._server = server
        self._conn = conn
        self._stderr_file = stderr_file
        self._stderr_text: str | None = None
        reply, fds = _receive(conn, server)
        if "pid" not in reply:
            raise ForkServerError(f"the zygote could not start {args}: {reply.get('error')}")
        self.pid: int = reply["pid"]
        self._pidfd = fds[0]

    def poll(self) -> int | None:
        if self.returncode is None:
            self._conn.settimeout(0.0)
            with contextlib.suppress(BlockingIOError):
                self._exited(_receive(self._conn, self._server)[0])
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._conn.settimeout(timeout)
            try:
                reply, _fds = _receive(self._conn, self._server)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0) from None
            self._exited(reply)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Signal the child itself (not what it started), as Popen does; through its pidfd,
        so a child that already ended and was reaped is never mistaken for a newer process."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """The rest of stdout and the whole stderr, after the exit: text where PIPE, else
        None (typed Any, as Popen's is, so that callers need not check each time)."""
        out = self.stdout.read() if self.stdout is not None else None
        self.wait(timeout)
        if self.stdout is not None:
            self.stdout.close()
        return out, self._stderr_text

    def kill_group(self) -> None:
        """SIGKILL the child and everything it started (its process group), by hanging up:
        the zygote does it, while the child is not reaped yet. The timeout of run()."""
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self._conn.shutdown(socket.SHUT_WR)

    def _exited(self, reply: dict[str, Any]) -> None:
        if "exit" not in reply:
            raise ForkServerError(f"unexpected reply from the zygote: {reply}")
        self.returncode = reply["exit"]
        if self._stderr_file is not None:  # read now: no file left open for communicate()
            self._stderr_text = _read(self._stderr_file)
        self._close()
        self._server._forget(self)

    def _close(self) -> None:
        self._conn.close()
        os.close(self._pidfd)
        if self._stderr_file is not None:
            self._stderr_file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        """As Popen's: close the streams, wait for the child."""
        if self.stdout is not None:
            self.stdout.close()
        self.wait()


class ForkServer:
    """A zygote that imported `preload` (module names; `package.*` for a package and each
    module in it), forking a child per run()/popen(); see the module docstring. `cwd` and
    `env` are the zygote's own (defaults: this process's, at start)."""

    def __init__(self, preload: Sequence[str] = (), *, cwd: StrPath | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.preload = list(preload)
        self.cwd = cwd
        self.env = env
        self._zygote: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._log: IO[bytes] | None = None
        self._socket_path = ""
        self._children: set[ForkedProcess] = set()
        self._lock = threading.Lock()

    def start(self) -> Self:
        """Start the zygote; returns once it listens (the preloads go on while callers
        connect: their first request waits for them)."""
        # A private folder for the socket (the zygote removes it if this process dies first);
        # the zygote's stderr in a nameless file.
        self._dir = Path(tempfile.mkdtemp(prefix="forkserver-"))
        socket_path = self._dir / "zygote.sock"
        self._socket_path = str(socket_path)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self._zygote = subprocess.Popen(
            [sys.executable, "-m", "archive_testkit.zygote", str(socket_path), *self.preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, cwd=self.cwd,
            env=None if self.env is None else dict(self.env),
            start_new_session=True)  # a terminal's Ctrl-C goes to the tests, which stop() it
        atexit.register(self.stop)
        assert self._zygote.stdout is not None
        listening = self._zygote.stdout.readline()
        self._zygote.stdout.close()
        if listening != b"listening\n":
            error = self.failed("the zygote did not start")
            self.stop()
            raise error
        return self

    def stop(self) -> None:
        """Kill every child's process group, end the zygote, remove its temp folder."""
        atexit.unregister(self.stop)
        if self._zygote is not None:
            assert self._zygote.stdin is not None
            self._zygote.stdin.close()  # EOF: the zygote kills its children, then ends
            try:
                self._zygote.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._zygote.kill()
                self._zygote.wait()
            self._zygote = None
        with self._lock:
            children, self._children = self._children, set()
        for child in children:
            child._close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def failed(self, what: str) -> ForkServerError:
        """The error to raise when the zygote is gone, with what it wrote to stderr (a
        preload's traceback, say) once it has ended."""
        if self._zygote is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._zygote.wait(timeout=5)
        log = ""
        if self._log is not None:  # pread: the zygote shares the file's offset
            fd = self._log.fileno()
            log = os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")
        return ForkServerError(f"{what}; the zygote's log:\n{log}")

    def popen(self, args: Sequence[StrPath], *, cwd: StrPath | None = None,
              env: Mapping[str, str] | None = None, stdout: int | None = None,
              stderr: int | None = None) -> ForkedProcess:
        """Start `[python, "-m", MODULE, *ARGS]` in a forked child. stdout/stderr: None
        (inherit this process's), subprocess.DEVNULL or subprocess.PIPE; env None is this
        process's environment now, cwd None its working directory now."""
        sent: list[int] = []  # this side's copies of the child's fds: closed once sent
        stdout_stream = stderr_file = None
        try:
            if stdout == subprocess.PIPE:
                read_end, write_end = os.pipe()
                sent.append(write_end)
                stdout_stream = open(read_end, encoding=_encoding())  # noqa: SIM115 (the caller's)
            else:
                sent.append(_stream_fd(stdout, 1))
            if stderr == subprocess.PIPE:
                stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (closed with the child)
                sent.append(os.dup(stderr_file.fileno()))
            else:
                sent.append(_stream_fd(stderr, 2))
            return self._launch(args, cwd, env, out_fd=sent[0], err_fd=sent[1], stdout=stdout_stream,
                                stderr_file=stderr_file)
        except BaseException:
            for stream in (stdout_stream, stderr_file):
                if stream is not None:
                    stream.close()
            raise
        finally:
            for fd in sent:
                os.close(fd)

    def run(self, args: Sequence[StrPath], *, cwd: StrPath | None = None,
            env: Mapping[str, str] | None = None, timeout: float | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """subprocess.run(args, capture_output=True, text=True, ...) in a forked child. On a
        timeout the child's process group is killed and subprocess.TimeoutExpired raised."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = self._launch(args, cwd, env, out_fd=out.fileno(), err_fd=err.fileno(), stdout=None,
                                stderr_file=None)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill_group()
                proc.wait()
                raise subprocess.TimeoutExpired(proc.args, timeout or 0.0, _read(out),
                                                _read(err)) from None
            done = subprocess.CompletedProcess(proc.args, proc.wait(), _read(out), _read(err))
        if check:
            done.check_returncode()
        return done

    def _launch(self, args: Sequence[StrPath], cwd: StrPath | None,
                env: Mapping[str, str] | None, *, out_fd: int, err_fd: int,
                stdout: IO[str] | None, stderr_file: IO[bytes] | None) -> ForkedProcess:
        argv = [str(arg) for arg in args]
        if len(argv) < 3 or argv[1] != "-m":
            raise ValueError(f"a fork server runs `python -m MODULE ARGS...` only, not {argv}")
        if self._zygote is None:
            raise ForkServerError("the fork server is not started")
        request = {"module": argv[2], "argv": argv[3:], "cwd": os.path.abspath(cwd or "."),
                   "env": dict(os.environ if env is None else env)}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            try:
                conn.connect(self._socket_path)
                with open(os.devnull, "rb") as stdin:
                    socket.send_fds(conn, [json.dumps(request).encode()],
                                    [stdin.fileno(), out_fd, err_fd])
            except (ConnectionError, FileNotFoundError) as exc:
                raise self.failed(f"the zygote is gone ({exc})") from exc
            child = ForkedProcess(self, argv, conn, stdout=stdout, stderr_file=stderr_file)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._children.add(child)
        return child

    def _forget(self, child: ForkedProcess) -> None:
        with self._lock:
            self._children.discard(child)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _receive(conn: socket.socket, server: ForkServer) -> tuple[dict[str, Any], list[int]]:
    try:
        data, fds, _flags, _addr = socket.recv_fds(conn, MAX_MESSAGE, 1)
    except ConnectionError as exc:
        raise server.failed(f"the zygote hung up ({exc})") from exc
    if not data:
        raise server.failed("the zygote hung up")
    return json.loads(data), fds


def _stream_fd(choice: int | None, inherited: int) -> int:
    """A new fd for a child's stdout or stderr: this process's own (None), or /dev/null."""
    if choice is None:
        return os.dup(inherited)
    if choice == subprocess.DEVNULL:
        return os.open(os.devnull, os.O_WRONLY)
    raise ValueError(f"stdout/stderr: None, DEVNULL or PIPE, not {choice}")


def _encoding() -> str:
    """subprocess's text mode: the locale's encoding."""
    return locale.getpreferredencoding(False)


def _text(data: bytes) -> str:
    """Bytes as subprocess's text mode decodes them (universal newlines)."""
    return data.decode(_encoding()).replace("\r\n", "\n").replace("\r", "\n")


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return _text(file.read())
