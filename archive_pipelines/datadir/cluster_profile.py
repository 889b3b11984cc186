"""The cluster profile: the Dagster instance and executor files of a deployment on several machines.

`init --profile cluster` writes two files into the data dir's `dagster/` (DAGSTER_HOME):

- `dagster.yaml`: run, event and schedule storage on PostgreSQL (dagster-postgres), the
  QueuedRunCoordinator, run monitoring, and compute logs on S3 (dagster-aws);
- `executor.yaml`: which executor runs the steps of every run, read when each run starts
  (`archive_pipelines.executors`). For `celery` its `execution.config` block is the one the
  dagster-celery workers read (`dagster-celery worker start -y dagster/executor.yaml`): the
  broker and result backend on Redis, and the Celery settings that re-deliver the work of a
  lost worker (`acks_late`, `reject_on_worker_lost`, the broker's visibility timeout).

Without `executor.yaml` (the single-machine default) steps run in subprocesses of the run's
own process (Dagster's multiprocess executor), as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from archive_pipelines.archive_error import DataDirError
from archive_pipelines.catalog import normalize_catalog_url
from archive_pipelines.datadir.initialize import write_atomically

EXECUTOR_FILE = "executor.yaml"
EXECUTORS = ("multiprocess", "celery")

CLUSTER_DAGSTER_YAML = """\
# Dagster instance of archive-pipelines' cluster profile (written by `init --profile cluster`).
# Every machine (webserver, daemon, Celery workers) points DAGSTER_HOME at a copy of this folder.
telemetry:
  enabled: false
storage:
  postgres:
    postgres_url: {postgres_url}
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
concurrency:
  runs:
    max_concurrent_runs: {max_concurrent_runs}
  pools:
    # One step at a time per pool, cluster-wide (the pool claims are rows in PostgreSQL):
    # gc never runs while a step writes blobs (see the single-machine dagster.yaml).
    default_limit: 1
# A run whose process died (its machine lost) is marked failed instead of hanging; the
# daemon then launches it again once (run_retries), which re-runs only what had not finished.
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  max_resume_run_attempts: 0
run_retries:
  enabled: true
  max_retries: 1
compute_logs:
  module: dagster_aws.s3.compute_log_manager
  class: S3ComputeLogManager
  config:
{compute_logs}
freshness:
  enabled: true
"""


@dataclass(frozen=True)
class ClusterProfile:
    """What an operator says about the cluster's shared services (validated by `check`)."""

    instance_db: str  # PostgreSQL URL of Dagster's own storage (not the catalog)
    broker: str  # redis:// URL: Celery's broker and result backend
    compute_logs: str  # s3://bucket/prefix
    s3_endpoint: str | None = None  # an S3-compatible endpoint (MinIO, moto); AWS when None
    max_concurrent_runs: int = 8
    # Seconds after which Redis hands a task no worker acknowledged to another worker: longer
    # than the longest step (a step still running is otherwise run twice), short enough that
    # a lost worker's step restarts soon.
    visibility_timeout: int = 3600

    def check(self) -> ClusterProfile:
        """The profile with its URLs normalized; a DataDirError naming the option otherwise."""
        db = urlsplit(self.instance_db)
        if db.scheme not in ("postgres", "postgresql", "postgresql+psycopg2") or not db.hostname:
            raise DataDirError(f"--instance-db {self.instance_db!r}: expected a PostgreSQL URL "
                               "such as postgresql://user:password@host:5432/dagster")
        broker = urlsplit(self.broker)
        if broker.scheme not in ("redis", "rediss") or not broker.hostname:
            raise DataDirError(f"--broker {self.broker!r}: expected a Redis URL such as "
                               "redis://host:6379/0 (the broker and the result backend)")
        logs = urlsplit(self.compute_logs)
        if logs.scheme != "s3" or not logs.netloc:
            raise DataDirError(f"--compute-logs {self.compute_logs!r}: expected "
                               "s3://bucket/prefix")
        if self.s3_endpoint is not None:
            endpoint = urlsplit(self.s3_endpoint)
            if endpoint.scheme not in ("http", "https") or not endpoint.hostname:
                raise DataDirError(f"--s3-endpoint {self.s3_endpoint!r}: expected an http(s) "
                                   "URL such as http://minio:9000")
        if self.max_concurrent_runs < 1:
            raise DataDirError("--max-concurrent-runs must be at least 1")
        if self.visibility_timeout < 10:
            raise DataDirError("--visibility-timeout must be at least 10 seconds")
        return ClusterProfile(instance_db=normalize_catalog_url(self.instance_db),
                              broker=self.broker, compute_logs=self.compute_logs,
                              s3_endpoint=self.s3_endpoint,
                              max_concurrent_runs=self.max_concurrent_runs,
                              visibility_timeout=self.visibility_timeout)

    def celery_config(self) -> dict[str, Any]:
        """dagster-celery's executor config: Redis as broker and result backend (its defaults
        are a local RabbitMQ and rpc://), and the settings that re-deliver lost work."""
        return {
            "broker": self.broker,
            "backend": self.broker,
            "config_source": {
                # Acknowledged when the step finished, not when a worker took it: a worker
                # that dies mid-step leaves it unacknowledged ...
                "task_acks_late": True,
                # ... its child killed (OOM, kill -9): the task goes back to the queue now ...
                "task_reject_on_worker_lost": True,
                # ... the whole worker (or machine) gone: Redis hands it to another worker
                # after the visibility timeout, at the next sweep of a live worker (kombu's
                # default sweep, 10 s x every 10th call, would add up to ~100 s).
                "broker_transport_options": {
                    "visibility_timeout": self.visibility_timeout,
                    "unacked_restore_interval": self.restore_interval(),
                    "unacked_restore_throttle": 1,
                    "max_retries": 3, "interval_start": 0, "interval_step": 0.2,
                    "interval_max": 0.5,
                },
                "result_backend_transport_options": {"visibility_timeout": self.visibility_timeout},
                "worker_prefetch_multiplier": 1,  # a worker holds no steps it has not started
                "broker_connection_retry_on_startup": True,
            },
        }

    def restore_interval(self) -> int:
        """Seconds between a worker's sweeps for tasks unacknowledged past the visibility
        timeout: a tenth of it, 1 to 10 s (a sweep is one small Redis query)."""
        return max(1, min(10, self.visibility_timeout // 10))

    def dagster_yaml(self) -> str:
        where = urlsplit(self.compute_logs)
        logs: dict[str, Any] = {"bucket": where.netloc, "prefix": where.path.strip("/") or "dagster"}
        if self.s3_endpoint:
            logs["endpoint_url"] = self.s3_endpoint
        lines = [f"    {key}: {json.dumps(value)}" for key, value in logs.items()]
        return CLUSTER_DAGSTER_YAML.format(postgres_url=json.dumps(self.instance_db),
                                           max_concurrent_runs=self.max_concurrent_runs,
                                           compute_logs="\n".join(lines))

    def executor_yaml(self) -> str:
        head = ("# Which executor runs every run's steps, read when each run starts (no code "
                "reload):\n# `celery` (the dagster-celery workers reading this same file) or "
                "`multiprocess`.\n")
        body = {"executor": "celery", "execution": {"config": self.celery_config()}}
        return head + yaml.safe_dump(body, sort_keys=False)


@dataclass(frozen=True)
class ExecutorChoice:
    """The deployment's executor: `multiprocess` (the default) or `celery` with its config."""

    kind: str = "multiprocess"
    celery: dict[str, Any] = field(default_factory=dict)


def read_executor_choice(dagster_home: Path) -> ExecutorChoice:
    """The choice in `dagster_home/executor.yaml`; the multiprocess default without one."""
    path = dagster_home / EXECUTOR_FILE
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        return ExecutorChoice()
    except yaml.YAMLError as exc:
        raise DataDirError(f"{path}: not valid YAML: {exc}") from None
    kind = document.get("executor", "multiprocess") if isinstance(document, dict) else None
    if kind not in EXECUTORS:
        raise DataDirError(f"{path}: `executor` must be one of {', '.join(EXECUTORS)}, "
                           f"not {kind!r}")
    if kind == "multiprocess":
        return ExecutorChoice()
    config = (document.get("execution") or {}).get("config") or {}
    if not isinstance(config, dict) or not config.get("broker"):
        raise DataDirError(f"{path}: executor celery needs `execution: config: broker:` "
                           "(a redis:// URL)")
    return ExecutorChoice(kind="celery", celery=config)


def write_cluster_files(dagster_home: Path, profile: ClusterProfile, *, replace: bool) -> list[str]:
    """Write dagster.yaml and executor.yaml for `profile`; the names written. An existing file
    with other contents is kept (a DataDirError) unless `replace`."""
    files = {"dagster.yaml": profile.dagster_yaml(), EXECUTOR_FILE: profile.executor_yaml()}
    for name, text in files.items():
        path = dagster_home / name
        if path.exists() and path.read_text(encoding="utf-8") != text and not replace:
            raise DataDirError(f"{path} exists with other settings: move it away, or pass "
                               "--replace to overwrite it with the cluster profile's")
    written = []
    for name, text in files.items():
        path = dagster_home / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomically(path, text)
            written.append(name)
    return written
