"""`make cluster`: the cluster profile on one machine, from this checkout's own files.

Starts a PostgreSQL (Dagster's storage and the catalog), a redis-server (Celery's broker and
result backend, and the crawler's frontier), an S3 endpoint (moto_server: the compute logs),
then on a data dir under --dir made by `archive-pipelines init --profile cluster`: two
dagster-celery workers, dagster-daemon, dagster-webserver, the replay server and a crawler
(`frontier-service serve`). Prints where each is; Ctrl-C (or SIGTERM) stops them all: each
child leads its own process group, stopped in the reverse order of start (SIGTERM, SIGKILL
after a grace), the servers last.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from functools import partial
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's packages, whatever the venv has installed

from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from archive_pipelines.server_process import ServerProcess, free_port, wait_until  # noqa: E402
from archive_testkit.cluster import (  # noqa: E402
    BIN,
    cluster_env,
    start_daemon,
    start_webserver,
    start_worker,
    wait_for_workers,
)
from archive_testkit.process_groups import ProcessGroups  # noqa: E402
from archive_testkit.servers import LocalMotoServer, LocalPostgres, create_database  # noqa: E402

MARKER = ".archive-pipelines-cluster"
BUCKET = "archive-cluster"
WORKERS = ["alpha", "beta"]
AWS_TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}


class Stop(Exception):
    """SIGTERM or SIGINT: stop everything."""


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def prepare_dir(root: Path) -> Path:
    """`root` made afresh: empty, or one this script made before (its servers are gone)."""
    if root.exists() and any(root.iterdir()):
        if not (root / MARKER).exists():
            raise SystemExit(f"error: {root} is not empty and was not made by `make cluster`: "
                             "choose another --dir")
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("made by `make cluster`; removed by the next one\n")
    return root


def start_server(server: ServerProcess, started: list[ServerProcess]) -> None:
    server.new_session = True  # Ctrl-C reaches this script only: it stops them last
    server.start()
    started.append(server)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True,
                        help="made afresh: the data dir (data/) and the processes' logs (logs/)")
    parser.add_argument("--port", type=int, default=0, help="dagster-webserver's port (0: free)")
    parser.add_argument("--smoke", action="store_true",
                        help="stop as soon as everything answers (a check of the script)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    root = prepare_dir(args.dir.resolve())
    data = root / "data"
    servers: list[ServerProcess] = []
    groups: ProcessGroups | None = None
    try:
        print("starting PostgreSQL, redis-server and moto_server ...", flush=True)
        postgres, redis, moto = LocalPostgres(), LocalRedis(root / "redis"), LocalMotoServer()
        for server in (postgres, redis, moto):
            start_server(server, servers)
        instance_db, catalog_db = create_database(postgres.url, "dagster"), create_database(
            postgres.url, "catalog")
        frontier_redis, broker = redis.url, redis.url.rsplit("/", 1)[0] + "/1"
        env = cluster_env(data, {**AWS_TEST_CREDENTIALS,
                                 **{k: v for k, v in os.environ.items() if k.startswith("AWS_")}})
        import boto3

        boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1",
                     aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                     aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=BUCKET)

        data.mkdir()
        (data / "archive.toml").write_text(
            f'[catalog]\nurl = "{catalog_db}"\n\n[redis]\nurl = "{frontier_redis}"\n')
        subprocess.run([str(BIN / "archive-pipelines"), "--data-dir", str(data), "init",
                        "--profile", "cluster", "--instance-db", instance_db, "--broker", broker,
                        "--compute-logs", f"s3://{BUCKET}/compute-logs", "--s3-endpoint", moto.url],
                       env=env, check=True)

        groups = ProcessGroups(root / "logs", env=env, cwd=ROOT)
        print("starting two Celery workers, dagster-daemon, dagster-webserver, the replay server "
              "and a crawler ...", flush=True)
        for name in WORKERS:
            start_worker(groups, data, name=name)
        start_daemon(groups)
        web_port = args.port or free_port()
        start_webserver(groups, port=web_port)
        replay_port = free_port()
        groups.spawn("replay", [str(BIN / "archive-pipelines"), "--data-dir", str(data), "replay",
                                "--port", str(replay_port)])
        groups.spawn("crawler", [str(BIN / "frontier-service"), "--data-dir", str(data), "serve"])
        nodes = wait_for_workers(data, WORKERS, groups=groups)
        for url in (f"http://127.0.0.1:{web_port}/server_info",
                    f"http://127.0.0.1:{replay_port}/healthz"):
            wait_until(partial(answers, url), timeout=180, what=url,
                       alive=partial(_all_alive, groups))
        groups.check_alive()

        host = socket.gethostname()
        rows = [
            ("PostgreSQL", f"{postgres.url.rsplit('/', 1)[0]}/  (databases dagster, catalog)"),
            ("Redis", f"{frontier_redis} (frontier), {broker} (Celery broker and backend)"),
            ("S3 (moto)", f"{moto.url}  bucket {BUCKET} (compute logs)"),
            ("Dagit", f"http://127.0.0.1:{web_port}"),
            ("dagster-daemon", "QueuedRunCoordinator, sensors, schedules, backfills"),
            ("Celery workers", ", ".join(nodes)),
            ("replay", f"http://127.0.0.1:{replay_port}/web/*/<url>"),
            ("crawler", "frontier-service serve (queue: archive-pipelines crawls queue NAME)"),
            ("data dir", f"{data}  (DAGSTER_HOME {data / 'dagster'})"),
            ("logs", f"{root / 'logs'}/*.log"),
        ]
        print()
        for what, where in rows:
            print(f"  {what:<16} {where}")
        print(f"\nenvironment for commands: ARCHIVE_DATA_DIR={data} DAGSTER_HOME={data / 'dagster'}"
              f" (host {host})")
        print("spread a backfill over the workers: dagster job backfill -w workspace.yaml "
              "-j replica_copies_job --all --noprompt")
        print("Ctrl-C stops everything.", flush=True)
        while not args.smoke:
            time.sleep(1.0)
            groups.check_alive()
        return 0
    except Stop as stop:
        print(f"\n{stop}: stopping ...", flush=True)
        return 0
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if groups is not None:
            for name, proc in reversed(groups.children):
                print(f"  stopping {name} (process group {proc.pid})", flush=True)
            groups.stop()
        for started in reversed(servers):
            print(f"  stopping {started.what}", flush=True)
            started.stop()
        print("stopped.", flush=True)


def _all_alive(groups: ProcessGroups) -> bool:
    return all(proc.poll() is None for _, proc in groups.children)


if __name__ == "__main__":
    sys.exit(main())
