"""CPU of a command and every process it starts, Chromium's included (Linux).

A crawler's Chromium runs in processes of its own (the browser, its zygote, renderers, the
GPU and network utility processes) under Playwright's driver. getrusage(RUSAGE_CHILDREN)
counts a process's CPU once its parent has waited for it, and an ancestor's count includes
what its waited-for descendants counted; but a process orphaned on the way (its parent
exited first) is re-parented to init and its CPU would be lost. So the bench makes itself
a child subreaper (prctl PR_SET_CHILD_SUBREAPER): orphans of the command's tree are
re-parented to the bench, which reaps them after the command exits (waiting for those
still running, up to `reap_timeout_s`, then killing them, said in the result). The total is
then exact: the RUSAGE_CHILDREN difference over the run, every process of the tree counted
once, whenever it ended.

The share of Chromium is sampled: every `sample_s`, /proc is walked for the command's
descendants (and orphans re-parented to the bench) and each process's own user + system
time kept with its name; the Chromium figure sums the last sample of the processes named
chromium* (a process that ended between two samples loses at most `sample_s` of its time:
a lower bound).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class TreeRun:
    """A finished command: its exit code, stdout, wall and CPU seconds."""

    exit_code: int
    stdout: str
    wall_s: float
    cpu_s: float  # the whole tree, exact (rusage)
    chromium_cpu_s: float  # processes named chromium*, sampled (a lower bound)
    chromium_processes: int  # distinct chromium* processes seen
    killed_orphans: int  # tree processes still running after the command's exit, killed


def become_subreaper() -> None:
    """Make this process the reaper of its descendants' orphans (Linux; raises elsewhere)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def run_measured(command: list[str], *, cwd: Path, log: Path, timeout_s: float,
                 sample_s: float = 0.5, reap_timeout_s: float = 15.0) -> TreeRun:
    """Run `command` (stderr to `log`) and measure its whole process tree."""
    become_subreaper()
    ours_before = set(_children_of(os.getpid()))  # servers the bench started: not the tree's
    before = _rusage_children()
    started = time.monotonic()
    samples: dict[int, tuple[str, float]] = {}
    stop = threading.Event()
    with open(log, "w") as err:
        process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=err,
                                   text=True)
        sampler = threading.Thread(target=_sample, name="tree-cpu", daemon=True,
                                   args=(process.pid, ours_before, samples, stop, sample_s))
        sampler.start()
        try:
            stdout, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, _ = process.communicate()
        wall = time.monotonic() - started
        killed = _reap_orphans(ours_before | {process.pid}, reap_timeout_s)
        stop.set()
        sampler.join(timeout=10)
    chromium = {pid: cpu for pid, (name, cpu) in samples.items() if name.startswith("chrom")}
    return TreeRun(exit_code=process.returncode, stdout=stdout, wall_s=wall,
                   cpu_s=_rusage_children() - before, chromium_cpu_s=sum(chromium.values()),
                   chromium_processes=len(chromium), killed_orphans=killed)


def _rusage_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sample(root: int, exclude: set[int], samples: dict[int, tuple[str, float]],
            stop: threading.Event, every_s: float) -> None:
    while True:
        table = _process_table()
        tree = _descendants(table, {root} | {pid for pid, (ppid, *_) in table.items()
                                             if ppid == os.getpid() and pid not in exclude})
        for pid in tree:
            _, name, cpu, _ = table[pid]
            samples[pid] = (name, cpu)
        if stop.wait(every_s):
            return


def _reap_orphans(exclude: set[int], timeout_s: float) -> int:
    """Wait for (and reap) this process's children not in `exclude`: orphans of the run
    re-parented here. Those still running after `timeout_s` are killed; their count."""
    deadline = time.monotonic() + timeout_s
    killed = 0
    while True:
        table = _process_table()
        left = [pid for pid, (ppid, *_) in table.items()
                if ppid == os.getpid() and pid not in exclude]
        if not left:
            return killed
        for pid in left:
            if table[pid][3] == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
        if time.monotonic() >= deadline:
            for pid in left:
                if table[pid][3] != "Z":
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    killed += 1
            deadline = time.monotonic() + timeout_s  # then reaped as zombies above
        time.sleep(0.05)


def _children_of(parent: int) -> list[int]:
    return [pid for pid, (ppid, *_) in _process_table().items() if ppid == parent]


def _descendants(table: dict[int, tuple[int, str, float, str]], roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def _process_table() -> dict[int, tuple[int, str, float, str]]:
    """pid -> (parent pid, name, own user + system CPU seconds, state) from /proc."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
        table[int(entry.name)] = (int(fields[1]), name, cpu, fields[0])
    return table
