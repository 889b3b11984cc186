"""A cluster-profile data dir whose catalog is on PostgreSQL and whose only blob store is an
S3 bucket: what `archive-pipelines init --profile cluster` makes of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import make_url

from archive_testkit.cluster import cluster_env
from archive_testkit.servers import create_database
from tests.helpers.s3_primary import s3_primary_toml

BIN = Path(sys.executable).parent


def init_s3_cluster(data: Path, *, postgres_server_url: str, broker: str, s3_endpoint_url: str,
                    s3_bucket: str) -> str:
    """Write `data`'s archive.toml (a new catalog database, the bucket as primary) and run
    `init --profile cluster` (a new database for Dagster's storage, Celery on `broker`,
    compute logs in the bucket). Returns the catalog's URL as libpq tools take it
    (`postgresql://...`, the form archive.toml holds too)."""
    catalog = make_url(create_database(postgres_server_url)).set(drivername="postgresql")
    catalog_url = catalog.render_as_string(hide_password=False)
    data.mkdir(parents=True, exist_ok=True)
    (data / "archive.toml").write_text(s3_primary_toml(
        endpoint_url=s3_endpoint_url, bucket=s3_bucket, catalog_url=catalog_url))
    init = subprocess.run(
        [str(BIN / "archive-pipelines"), "--data-dir", str(data), "init", "--profile", "cluster",
         "--instance-db", create_database(postgres_server_url), "--broker", broker,
         "--compute-logs", f"s3://{s3_bucket}/compute-logs", "--s3-endpoint", s3_endpoint_url],
        capture_output=True, text=True, env=cluster_env(data), timeout=120)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "wrote dagster/dagster.yaml, wrote dagster/executor.yaml" in init.stdout, init.stdout
    return catalog_url
