"""The Dagster side of a cluster-profile data dir on one machine: dagster-daemon, the
webserver and dagster-celery workers, each in its own process group (`ProcessGroups`).

Used by `make cluster` (scripts/cluster.py) and the cluster tests: the same commands as
the systemd units under deploy/systemd run on each machine.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from archive_testkit.process_groups import ProcessGroups

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = ROOT / "workspace.yaml"
BIN = Path(sys.executable).parent


def cluster_env(data: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every cluster process: the data dir and its DAGSTER_HOME, the venv's
    binaries first on PATH (dagster-celery runs `celery`), this checkout importable."""
    env = dict(os.environ)
    env.update(ARCHIVE_DATA_DIR=str(data), DAGSTER_HOME=str(data / "dagster"),
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))
    env.update(extra or {})
    return env


def executor_yaml(data: Path) -> Path:
    return data / "dagster" / "executor.yaml"


def start_daemon(groups: ProcessGroups) -> None:
    groups.spawn("dagster-daemon", [str(BIN / "dagster-daemon"), "run", "-w", str(WORKSPACE)])


def start_webserver(groups: ProcessGroups, *, port: int) -> None:
    groups.spawn("dagster-webserver", [str(BIN / "dagster-webserver"), "-w", str(WORKSPACE),
                                       "-h", "127.0.0.1", "-p", str(port)])


def start_worker(groups: ProcessGroups, data: Path, *, name: str, concurrency: int = 1) -> None:
    """`dagster-celery worker start -n NAME`: a Celery worker whose node name is NAME@host,
    reading the broker and settings from the data dir's executor.yaml."""
    groups.spawn(f"worker-{name}", [
        str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
        "-y", str(executor_yaml(data)), "-n", name, "--",
        f"--concurrency={concurrency}", "--without-gossip", "--without-mingle"])


def celery_app(data: Path) -> Any:
    """A Celery client app on the cluster's broker (to ping and inspect the workers)."""
    from dagster_celery.cli import get_app

    return get_app(str(executor_yaml(data)))


def wait_for_workers(data: Path, names: list[str], *, groups: ProcessGroups,
                     timeout: float = 120.0) -> list[str]:
    """Wait until a worker of each name answers a ping; their full node names (NAME@host)."""
    app = celery_app(data)
    deadline = time.monotonic() + timeout
    try:
        while True:
            groups.check_alive()
            replies = app.control.ping(timeout=1.0) or []
            nodes = sorted(node for reply in replies for node in reply)
            if all(any(node.startswith(f"{name}@") for node in nodes) for name in names):
                return nodes
            if time.monotonic() > deadline:
                raise RuntimeError(f"Celery workers {names} did not answer within {timeout:.0f}s "
                                   f"(answered: {nodes})")
            time.sleep(0.5)
    finally:
        app.close()
