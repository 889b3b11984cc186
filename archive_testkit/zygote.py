"""The fork server's zygote: a Python process that imports the slow modules once, then forks a
child per request that runs `python -m MODULE ARGS...` without paying for the imports again.

    python -m archive_testkit.zygote SOCKET_PATH [PRELOAD_MODULE | PACKAGE.* ...]

Crash tests start a fresh `python -m ...` per kill point, and importing the app (SQLAlchemy,
botocore, alembic, pydantic, ...) costs ~2 s of CPU each time. A child forked from a process
that has already imported them starts in milliseconds, and a SIGKILL of it is as real as of
any process. `archive_testkit.forkserver` is the client side.

The zygote stays single-threaded and opens nothing but its own sockets before it forks
(checked after the preloads): a fork copies only the calling thread, and a child must not
share a connection or file offset with its siblings. It binds its socket first, so clients
can connect while the preloads run (their requests wait in the listen backlog); it writes
`listening` on stdout once bound.

Protocol (AF_UNIX SOCK_SEQPACKET, one JSON message each way per step, one connection per
child):

* client -> zygote: {"module", "argv", "cwd", "env"}, with three fds (stdin, stdout, stderr);
* zygote -> client: {"pid"} with the child's pidfd (the client signals through it: no pid
  reuse race), then {"exit": returncode} once the zygote has reaped it (negative: killed by
  that signal), or {"error"} if it could not fork;
* client hangs up (EOF) before the exit: the zygote SIGKILLs the child's process group (each
  child leads its own), which is how a timeout or a stopped server leaves nothing behind.

EOF on the zygote's stdin (the client stopped, or died) kills every child's group, reaps
them, and ends the zygote.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import pkgutil
import runpy
import selectors
import signal
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

MAX_MESSAGE = 1 << 20  # a request carries the child's whole environment


@dataclass
class Request:
    """What a child runs: `python -m module *argv` in `cwd` with exactly `env`."""

    module: str
    argv: list[str]
    cwd: str
    env: dict[str, str]


@dataclass
class _Child:
    pid: int
    pidfd: int
    conn: socket.socket
    hung_up: bool = False


@dataclass
class Zygote:
    """The serving loop. `serve()` returns only in a forked child, with the request to run."""

    listener: socket.socket
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    pending: set[socket.socket] = field(default_factory=set)  # connected, no request yet
    children: dict[int, _Child] = field(default_factory=dict)  # by pid

    def serve(self) -> Request:
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(0, selectors.EVENT_READ, "control")
        while True:
            for key, _events in self.selector.select():
                if self.selector.get_map().get(key.fd) is not key:
                    continue  # unregistered by an earlier event of this batch
                if key.data == "accept":
                    conn, _addr = self.listener.accept()
                    self.pending.add(conn)
                    self.selector.register(conn, selectors.EVENT_READ, "request")
                elif key.data == "control":
                    if not os.read(0, 4096):
                        self.shutdown()
                elif key.data == "request":
                    request = self._start(key.fileobj)  # type: ignore[arg-type]
                    if request is not None:
                        return request  # in the child
                elif key.data == "hangup":
                    self._hung_up(key.fileobj)  # type: ignore[arg-type]
                else:
                    self._reap(key.data)

    def _start(self, conn: socket.socket) -> Request | None:
        """Read a request and fork its child; in the child, return the request."""
        self.selector.unregister(conn)
        self.pending.discard(conn)
        try:
            data, fds, _flags, _addr = socket.recv_fds(conn, MAX_MESSAGE, 3)
        except OSError:
            data, fds = b"", []
        if not data or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.close()
            return None
        request = Request(**json.loads(data))
        try:
            pid = os.fork()
        except OSError as exc:
            with contextlib.suppress(OSError):
                _send(conn, {"error": f"fork failed: {exc}"})
            conn.close()
            for fd in fds:
                os.close(fd)
            return None
        if pid == 0:
            self._close_all()
            conn.close()
            _become_child(request, fds)
            return request
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):  # also here, so a kill cannot precede it
            os.setpgid(pid, pid)
        pidfd = os.pidfd_open(pid)
        self.children[pid] = _Child(pid, pidfd, conn)
        with contextlib.suppress(OSError):  # a client already gone is seen hanging up next
            socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
        self.selector.register(pidfd, selectors.EVENT_READ, pid)
        self.selector.register(conn, selectors.EVENT_READ, "hangup")
        return None

    def _hung_up(self, conn: socket.socket) -> None:
        """The client hung up before its child ended (a timeout, a stop): kill the group."""
        self.selector.unregister(conn)
        child = next(c for c in self.children.values() if c.conn is conn)
        child.hung_up = True
        _kill_group(child.pid)

    def _reap(self, pid: int) -> None:
        child = self.children.pop(pid)
        self.selector.unregister(child.pidfd)
        _pid, status = os.waitpid(pid, 0)
        os.close(child.pidfd)
        if not child.hung_up:
            self.selector.unregister(child.conn)
        with contextlib.suppress(OSError):  # the client may be gone
            _send(child.conn, {"exit": os.waitstatus_to_exitcode(status)})
        child.conn.close()

    def shutdown(self) -> None:
        """Kill every child's process group, reap the children, remove the socket (and its
        folder, when that is left empty: a client that died cannot), end the zygote."""
        for child in self.children.values():
            _kill_group(child.pid)
        for child in self.children.values():
            os.waitpid(child.pid, 0)
        socket_path = self.listener.getsockname()
        with contextlib.suppress(OSError):
            os.unlink(socket_path)
            os.rmdir(os.path.dirname(socket_path))
        sys.exit(0)

    def _close_all(self) -> None:
        """In a new child: close the zygote's sockets and pidfds (fd 0 is replaced next)."""
        self.selector.close()
        self.listener.close()
        for conn in self.pending:
            conn.close()
        for child in self.children.values():
            os.close(child.pidfd)
            child.conn.close()


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode())


def _kill_group(pid: int) -> None:
    """SIGKILL the child's process group (the child and whatever it started). Only called
    while the child is not reaped yet, so its pid (the group's id) cannot have been reused."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _become_child(request: Request, fds: list[int]) -> None:
    """Turn the fresh fork into what `python -m` in a new process would be at its start."""
    os.setpgid(0, 0)  # its own group: a timeout kills it with what it started
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()  # replaced, not merged: as subprocess.run(env=...)
    os.environ.update(request.env)
    sys.argv = ["-m", *request.argv]  # runpy puts the module's path first, as python -m does
    # python -m runs the module as __main__ only: a preloaded copy under its own name would
    # be a second one (and runpy warns about it). What it imported stays imported.
    sys.modules.pop(request.module, None)
    sys.path[0] = os.getcwd()  # python -m puts the working directory first
    mp_process = sys.modules.get("multiprocessing.process")
    if mp_process is not None:  # its start state, as if imported here and now
        mp_process.ORIGINAL_DIR = os.getcwd()  # type: ignore[attr-defined]
        mp_process.current_process().authkey = os.urandom(32)
    # `random` needs nothing: CPython reseeds it in every forked child (os.register_at_fork).


def _preload(modules: list[str]) -> None:
    """Import the modules (`package.*`: the package and each module in it, e.g. every
    command of a CLI that imports them lazily), and check that they left the zygote fit to
    fork."""
    fds_before = _open_fds()
    for name in modules:
        package = importlib.import_module(name.removesuffix(".*"))
        if name.endswith(".*"):
            for found in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
                importlib.import_module(found.name)
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1:
        raise RuntimeError(f"the preloads started threads ({len(threads)} now): forked "
                           "children would lack them")
    opened = _open_fds() - fds_before
    if opened:
        targets = sorted(os.readlink(f"/proc/self/fd/{fd}") for fd in opened)
        raise RuntimeError(f"the preloads left files open, which every child would share: "
                           f"{targets}")


def _open_fds() -> set[str]:
    """This process's open fds (not the one listing them, closed by now)."""
    return {fd for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")}


def main() -> None:
    socket_path, preload = sys.argv[1], sys.argv[2:]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(socket_path)
    listener.listen(128)
    print("listening", flush=True)
    _preload(preload)
    # What is imported now lives as long as every child: keep the collector off it (fewer
    # pages written, so fewer copied, in each child).
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    request = Zygote(listener).serve()
    # In the child from here: run the module as `python -m` does. Its sys.exit code, or an
    # uncaught exception's traceback and status 1, end this process as they would end python.
    runpy.run_module(request.module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
