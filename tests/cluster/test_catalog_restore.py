"""A tested restore of a PostgreSQL catalog, with the commands of docs/operations.md
("Backup and restore of the catalog"): `pg_dump --format=custom` of the catalog of a
cluster-profile data dir whose blobs are on an S3 primary (moto), the database dropped and
created again, the dump restored with `pg_restore`; `verify --deep` is then clean and
`status` counts what it counted before. An older dump restored over it (`pg_restore --clean
--if-exists`) is not clean: the blobs stored since are in the bucket without a row, and
`verify --deep` names them (exit 1); the crawl's bodies and segments are `crawl_pending`.
The doc's steps after a restore (`ingest-crawl --all`, the later ingest run again) bring the
catalog back to the same counts, clean.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from archive_pipelines.settings import load_settings
from archive_testkit.servers.postgres import drop_database
from archive_testkit.testweb import TestWeb
from tests.helpers.crawls import unique_crawl_name
from tests.helpers.s3_cluster import init_s3_cluster
from tests.helpers.s3_crawls import crawl_onto, run_cli
from tests.helpers.storage import write_tree

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

SHA256_NAME = re.compile(r"[0-9a-f]{64}")  # a blob file's name: every blob is in the bucket


def cli(data: Path, *args: str, code: int = 0) -> str:
    """`archive-pipelines --data-dir data ARGS`: its stdout, after checking its exit code."""
    done = run_cli(data, *args)
    assert done.returncode == code, (args, done.returncode, done.stdout[-3000:],
                                     done.stderr[-3000:])
    return done.stdout


def sh(*command: str) -> None:
    """A PostgreSQL client command as the doc gives it (pg_dump, pg_restore, dropdb...)."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (command, done.stdout, done.stderr)


def verify_deep(data: Path, *, code: int) -> dict:
    report: dict = json.loads(cli(data, "verify", "--deep", "--json", code=code))
    return report


def ingest_files(data: Path, folder: Path, *, url: str, files: int) -> list[str]:
    """`ingest wget` of a folder of `files` distinct files; their sha256, sorted."""
    tree = {f"page{i}.html": f"<p>{url} file {i}</p>".encode() * 30 for i in range(files)}
    write_tree(folder, tree)
    cli(data, "ingest", "wget", str(folder), "--url", url, "--timestamp", "1700000000.5")
    return sorted(hashlib.sha256(body).hexdigest() for body in tree.values())


@pytest.fixture
def cluster_data(tmp_path: Path, postgres_server_url: str, broker_url: str,
                 s3_endpoint_url: str, s3_bucket: str) -> Iterator[tuple[Path, str]]:
    """A cluster-profile data dir (blobs in the bucket) and its catalog's URL, which is
    what pg_dump takes. None of the cluster's processes runs: the restore stops them all."""
    data = tmp_path / "data"
    catalog = init_s3_cluster(data, postgres_server_url=postgres_server_url, broker=broker_url,
                              s3_endpoint_url=s3_endpoint_url, s3_bucket=s3_bucket)
    try:
        yield data, catalog
    finally:
        drop_database(postgres_server_url, str(make_url(catalog).database))


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    with unique_crawl_name(redis_url, "restore") as name:
        yield name


def test_a_dumped_catalog_dropped_and_restored_verifies_clean(
        cluster_data: tuple[Path, str], captures_web: TestWeb, redis_url: str,
        crawl_name: str, tmp_path: Path) -> None:
    data, catalog = cluster_data
    ingest_files(data, tmp_path / "first", url="http://first.example/", files=6)
    older, dump = tmp_path / "catalog-older.dump", tmp_path / "catalog.dump"
    sh("pg_dump", "--format=custom", f"--file={older}", catalog)
    early_status = cli(data, "status")

    # After the older dump: files ingested, and a crawl recorded in the catalog.
    later = ingest_files(data, tmp_path / "later", url="http://later.example/", files=5)
    report = crawl_onto(load_settings(data, environ={}), captures_web, redis_url, crawl_name)
    assert report.failure == "" and report.segments >= 2
    totals = json.loads(cli(data, "ingest-crawl", "--all", "--json"))
    assert totals["segments_ingested"] == report.segments and totals["missing_bodies"] == 0
    status = cli(data, "status")
    assert status != early_status and "outdated" not in status
    before = verify_deep(data, code=0)
    assert before["problems"] == 0 and before["checked"]["referenced_blobs"] > 20
    assert [p for p in data.rglob("*") if p.is_file() and SHA256_NAME.match(p.name)] == []

    # The dump, the database dropped (every connection cut) and created empty, the restore.
    sh("pg_dump", "--format=custom", f"--file={dump}", catalog)
    server, name = _maintenance_url(catalog), make_url(catalog).database
    sh("dropdb", "--force", f"--maintenance-db={server}", str(name))
    assert run_cli(data, "status").returncode != 0  # the catalog is gone
    sh("createdb", f"--maintenance-db={server}", str(name))
    sh("pg_restore", "--no-owner", f"--dbname={catalog}", str(dump))
    assert cli(data, "status") == status
    after = verify_deep(data, code=0)
    assert after == before, (before, after)

    # Not vacuous: the older dump restored over it lacks the later rows. The blobs stored
    # since are in the bucket without a row (problems, named); the crawled bodies are
    # crawl_pending, since their segments are not in the restored ledger.
    sh("pg_restore", "--clean", "--if-exists", "--no-owner", f"--dbname={catalog}", str(older))
    assert cli(data, "status") == early_status
    stale = verify_deep(data, code=1)
    assert sorted(stale["named"]["untracked_blob_files"]) == later, stale["named"]
    assert stale["problems"] == 5 and stale["verdict"] == ["5 problem(s) left"], stale
    # Every other blob the catalog referenced before is the crawl's: a body or a segment.
    crawl_blobs = before["checked"]["referenced_blobs"] - 6 - 5
    assert stale["found"]["crawl_pending"] == crawl_blobs > report.segments, stale["found"]

    # The doc's steps after a restore: the segments still in the bucket become captures
    # again, and the ingest made after the dump is run again.
    cli(data, "ingest-crawl", "--all")
    ingest_files(data, tmp_path / "later", url="http://later.example/", files=5)
    assert _counts(cli(data, "status")) == _counts(status)
    again = verify_deep(data, code=0)
    assert again["problems"] == 0 and again["found"]["crawl_pending"] == 0
    assert again["checked"] == before["checked"]


def _maintenance_url(catalog: str) -> str:
    """The server's `postgres` database, where dropdb and createdb connect."""
    return make_url(catalog).set(database="postgres").render_as_string(hide_password=False)


def _counts(status: str) -> list[str]:
    """The catalog's count lines of `status` (blobs, snapshots, captures...), without the
    lines that name the data dir, the catalog and the store."""
    return [line for line in status.splitlines()
            if not line.startswith(("data dir", "catalog", "primary"))]
