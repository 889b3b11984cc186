"""Child processes each in its own process group (a new session): started, watched, and
stopped with their descendants (SIGTERM to the group, SIGKILL what outlives a grace).

A terminal's Ctrl-C reaches only the foreground group: the parent decides what stops, in
which order (`dagster-daemon` and `dagster dev` started with a plain `&` ignore SIGINT).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def stop_groups(leaders: list[subprocess.Popen[bytes]], timeout: float) -> None:
    """SIGTERM the process groups `leaders` lead; SIGKILL those alive after `timeout`;
    reap the leaders."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [proc for proc in leaders if group_alive(proc)]
        for proc in alive:
            with contextlib.suppress(ProcessLookupError):  # gone since
                os.killpg(proc.pid, sig)
        deadline = time.monotonic() + timeout
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [proc for proc in alive if group_alive(proc)]
        if not alive:
            break
    for proc in leaders:
        proc.wait()


def group_alive(proc: subprocess.Popen[bytes]) -> bool:
    """True while a process of the group `proc` leads is running (zombies whose parent
    is gone do not count: nothing here can reap them)."""
    proc.poll()  # reap the leader itself
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # exited while we looked
        state, pgrp = fields[0], int(fields[2])
        if pgrp == proc.pid and state != "Z":
            return True
    return False


class ProcessGroups:
    """Named children, each leading its own process group, logging to `logs/<name>.log`.

    `stop()` stops them in the reverse order of their start (the workers before the broker
    they use), each group SIGTERMed, then SIGKILLed after `grace` seconds.
    """

    def __init__(self, logs: Path, *, env: dict[str, str], cwd: Path) -> None:
        self.logs, self.env, self.cwd = logs, env, cwd
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        logs.mkdir(parents=True, exist_ok=True)

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with open(self.log_path(name), "ab") as log:
            proc = subprocess.Popen(args, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.children.append((name, proc))
        return proc

    def log_path(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            text = self.log_path(name).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        """A RuntimeError naming the first child that exited, with its log's tail."""
        for name, proc in self.children:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with status {proc.returncode}:\n"
                                   f"{self.log_tail(name)}")

    def kill(self, name: str) -> None:
        """SIGKILL the whole group of the child `name` at once, no SIGTERM first (a machine
        lost: nothing in it gets to clean up or hand work back), and forget it."""
        [(index, proc)] = [(i, p) for i, (n, p) in enumerate(self.children) if n == name]
        self._signal(name, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while group_alive(proc) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.wait()
        del self.children[index]

    def pause(self, name: str) -> None:
        """SIGSTOP the whole group of the child `name`: frozen as it is, until `resume`."""
        self._signal(name, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)

    def _signal(self, name: str, sig: signal.Signals) -> None:
        [proc] = [p for n, p in self.children if n == name]
        with contextlib.suppress(ProcessLookupError):  # gone already
            os.killpg(proc.pid, sig)

    def stop(self, *, grace: float = 20.0) -> None:
        """Each group in reverse order of start: SIGTERM, SIGKILL after `grace`."""
        while self.children:
            _, proc = self.children.pop()
            stop_groups([proc], grace)
