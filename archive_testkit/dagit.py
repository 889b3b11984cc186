"""Dagit for tests: `dagster-webserver` and `dagster-daemon` on this repo's workspace, a data
dir and a DAGSTER_HOME, and the GraphQL API that the UI itself uses.

Each server runs in its own process group (a new session), so stopping it reaches the code
servers and run workers it started: SIGTERM to the group, SIGKILL if it outlives the timeout.
Two processes rather than `dagster dev`, so the instance can be prepared between them: the
webserver loads the code location first, then (optionally) the sensors and schedules are
stopped, then the daemon starts ticking. Both write to one log file, quoted in every error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self, TypeVar

import yaml

from archive_pipelines.server_process import free_port
from archive_testkit.process_groups import stop_groups

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = ROOT / "workspace.yaml"
BIN = Path(sys.executable).parent
LOCATION = "archive_pipelines.definitions"
TERMINAL_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
TERMINAL_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
T = TypeVar("T")

_AUTOMATION = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  sensors { name sensorState { id status } } schedules { name scheduleState { id status } } } } } }"""


class DagitError(RuntimeError):
    """Dagit did not start, answered with errors, or a wait ran out (the log tail included)."""


def tune_test_instance(dagster_home: Path, *, dequeue_interval_seconds: int = 1) -> None:
    """Shorten the run queue's polling in `dagster_home/dagster.yaml` (Dagster's default is
    5 s): a run launched from the UI starts within a second. The rest of the file is kept."""
    path = dagster_home / "dagster.yaml"
    config = (yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None) or {}
    coordinator = config.setdefault("run_coordinator", {
        "module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator", "config": {}})
    coordinator.setdefault("config", {})["dequeue_interval_seconds"] = dequeue_interval_seconds
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


class Dagit:
    """The webserver and the daemon for one data dir, on a free port unless `port` is given."""

    def __init__(self, *, data_dir: Path, dagster_home: Path, log_path: Path,
                 workspace: Path = WORKSPACE, port: int = 0,
                 environ: Mapping[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.dagster_home = dagster_home
        self.log_path = log_path
        self.workspace = workspace
        self.port = port
        base = os.environ if environ is None else environ
        self._env = {**base, "ARCHIVE_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(dagster_home)}
        self._log: IO[bytes] | None = None
        self._webserver: subprocess.Popen[bytes] | None = None
        self._daemon: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, automation: bool = True, timeout: float = 180.0) -> Self:
        """Start the webserver, wait for the code location, then the daemon and its heartbeats.

        With `automation=False` every sensor and schedule is stopped before the daemon starts
        (they are declared running by default), so nothing ticks until a test turns it on.
        """
        deadline = time.monotonic() + timeout
        self.port = self.port or free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        try:
            self._webserver = self._spawn([
                str(BIN / "dagster-webserver"), "-w", str(self.workspace), "-h", "127.0.0.1",
                "-p", str(self.port)])
            self._wait(self._answers, deadline, "the webserver to answer /server_info")
            self._wait(self._location_loaded, deadline, f"the code location {LOCATION} to load")
            self._note(f"webserver on {self.url}, {LOCATION} loaded")
            if not automation:
                self._note(f"stopped until a test starts them: {', '.join(self.stop_automation())}")
            self._daemon = self._spawn([str(BIN / "dagster-daemon"), "run", "-w",
                                        str(self.workspace)])
            self._wait(self._daemons_healthy, deadline, "the daemons' first heartbeats")
            self._note("daemons healthy")
        except BaseException:
            self.stop()
            raise
        return self

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None,
                *, timeout: float = 30.0) -> dict[str, Any]:
        """POST to /graphql; the `data` member, or DagitError naming the errors."""
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.loads(response.read())
        if answer.get("errors"):
            raise DagitError(f"GraphQL errors: {answer['errors']}")
        return dict(answer["data"])

    def location_error(self) -> str | None:
        """The code location's load error, None when it loaded (DagitError while loading)."""
        data = self.graphql("""{ workspaceOrError { __typename ... on Workspace {
            locationEntries { name loadStatus locationOrLoadError {
              __typename ... on PythonError { message stack } } } }
            ... on PythonError { message } } }""")
        workspace = data["workspaceOrError"]
        if workspace["__typename"] != "Workspace":
            return str(workspace.get("message"))
        entries = {e["name"]: e for e in workspace["locationEntries"]}
        entry = entries.get(LOCATION)
        if entry is None:
            return f"no code location {LOCATION} in the workspace (found {sorted(entries)})"
        if entry["loadStatus"] != "LOADED":
            raise DagitError(f"{LOCATION} is {entry['loadStatus']}")
        loaded = entry["locationOrLoadError"] or {}
        if loaded.get("__typename") == "PythonError":
            return f"{loaded['message']}\n{''.join(loaded.get('stack') or [])}"
        return None

    def stop_automation(self) -> list[str]:
        """Stop every running sensor and schedule; the names of those stopped."""
        stopped = []
        for repository in self.graphql(_AUTOMATION)["repositoriesOrError"]["nodes"]:
            for sensor in repository["sensors"]:
                if sensor["sensorState"]["status"] == "RUNNING":
                    self.graphql("mutation($id: String!) { stopSensor(id: $id) { __typename } }",
                                 {"id": sensor["sensorState"]["id"]})
                    stopped.append(sensor["name"])
            for schedule in repository["schedules"]:
                if schedule["scheduleState"]["status"] == "RUNNING":
                    self.graphql("mutation($id: String!) { stopRunningSchedule(id: $id) "
                                 "{ __typename } }", {"id": schedule["scheduleState"]["id"]})
                    stopped.append(schedule["name"])
        return stopped

    def wait_for(self, what: str, probe: Callable[[], T], *, timeout: float,
                 interval: float = 1.0) -> T:
        """Call `probe()` until it returns something truthy, which is returned; DagitError
        naming `what` (with the log tail) when `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise DagitError(f"timed out after {timeout:.0f}s waiting for {what}\n"
                                 f"{self.log_tail()}")
            self._check_alive()
            time.sleep(interval)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the servers' log, without colour codes."""
        if not self.log_path.exists():
            return "(no log)"
        text = _ANSI.sub("", self.log_path.read_text(encoding="utf-8", errors="replace"))
        return f"--- last lines of {self.log_path}:\n" + "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM both servers' process groups (the daemon's first, so no run starts as the
        webserver goes), SIGKILL what outlives `timeout`, and reap both."""
        running = [(name, proc) for name, proc in (("dagster-daemon", self._daemon),
                                                   ("dagster-webserver", self._webserver))
                   if proc is not None]
        self._note("stopping " + ", ".join(f"{name} (process group {proc.pid})"
                                           for name, proc in running))
        stop_groups([proc for _, proc in running], timeout)
        self._daemon = self._webserver = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _note(self, line: str) -> None:
        """A line of the kit's own in the servers' log (what it did, and when)."""
        if self._log is not None:
            self._log.write(f"{time.strftime('%H:%M:%S')} archive_testkit.dagit: {line}\n".encode())
            self._log.flush()

    def _spawn(self, args: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(args, cwd=self.workspace.parent, env=self._env,
                                stdin=subprocess.DEVNULL, stdout=self._log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def _wait(self, ready: Callable[[], bool], deadline: float, what: str) -> None:
        self.wait_for(what, ready, timeout=max(deadline - time.monotonic(), 0))

    def _check_alive(self) -> None:
        for name, proc in (("dagster-webserver", self._webserver),
                           ("dagster-daemon", self._daemon)):
            if proc is not None and proc.poll() is not None:
                raise DagitError(f"{name} exited with status {proc.returncode}\n{self.log_tail()}")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/server_info", timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _location_loaded(self) -> bool:
        try:
            error = self.location_error()
        except (DagitError, OSError):
            return False  # still loading (or the webserver died: wait_for says so)
        if error:
            raise DagitError(f"the code location {LOCATION} failed to load: {error}")
        return True

    def _daemons_healthy(self) -> bool:
        statuses = self.graphql("""{ instance { daemonHealth { allDaemonStatuses {
            daemonType required healthy } } } }""")["instance"]["daemonHealth"]
        return all(s["healthy"] for s in statuses["allDaemonStatuses"] if s["required"])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
