"""The S3 endpoint dies mid-replication and comes back empty (its bucket gone): `replicate`
says so and exits 1, nothing it did not upload is recorded present, `scrub` finds the
copies the restart lost, and once the bucket is back a rerun converges."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import boto3
import pytest

from archive_testkit.servers.moto import LocalMotoServer
from tests.helpers.cli import run_cli

FILES = 40


def present_in_catalog(data: Path, store: str) -> set[str]:
    with sqlite3.connect(data / "catalog.sqlite3") as db:
        rows = db.execute(
            "SELECT b.sha256 FROM blob_copy c JOIN blob b ON b.id = c.blob_id "
            "JOIN store s ON s.id = c.store_id WHERE s.name = ? AND c.status = 'present'",
            (store,)).fetchall()
    return {row[0] for row in rows}


def in_bucket(client: object, bucket: str) -> set[str]:
    try:
        pages = client.get_paginator("list_objects_v2").paginate(  # type: ignore[attr-defined]
            Bucket=bucket)
        return {item["Key"].rsplit("/", 1)[-1].removesuffix(".zst") for page in pages
                for item in page.get("Contents", [])}
    except client.exceptions.NoSuchBucket:  # type: ignore[attr-defined]
        return set()


@pytest.mark.faults
def test_s3_restarted_empty_mid_replication(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_MAX_ATTEMPTS", "2")):
        monkeypatch.setenv(name, value)
    with LocalMotoServer() as moto:
        client = boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1")
        client.create_bucket(Bucket="archive")
        data = tmp_path / "data"
        data.mkdir()
        (data / "archive.toml").write_text(
            '[replication]\nretention = 2\nbatch_size = 10\n'
            '[[stores]]\nname = "primary"\npath = "cas"\ncodec = "raw"\n'
            f'[[stores]]\nname = "s3"\nkind = "s3"\nbucket = "archive"\nprefix = "blobs"\n'
            f'endpoint_url = "{moto.url}"\ncodec = "zstd"\n')
        assert run_cli("--data-dir", str(data), "init").returncode == 0
        site = tmp_path / "site"
        site.mkdir()
        for i in range(FILES):
            (site / f"{i}.html").write_text(f"<p>page {i}</p>" * (20 + i))
        assert run_cli("--data-dir", str(data), "ingest", "--url", "https://a.test/", "wget",
                       str(site)).returncode == 0

        first = run_cli("--data-dir", str(data), "replicate", "--max-batches", "2")
        assert first.returncode == 0 and "stopped at the batch limit" in first.stdout
        uploaded = present_in_catalog(data, "s3")
        assert 0 < len(uploaded) < FILES and in_bucket(client, "archive") == uploaded

        moto.kill()
        moto.start()  # the same port, nothing kept: the bucket is gone too

        lost = run_cli("--data-dir", str(data), "replicate")
        assert lost.returncode == 1
        report = lost.stdout + lost.stderr
        assert "bucket 'archive' does not exist" in report, report
        assert report.count("! store 's3'") == 1, report  # named once, not per object
        assert present_in_catalog(data, "s3") == uploaded  # nothing new claimed present

        # The operator makes the bucket again; scrub finds what the restart lost.
        client = boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1")
        client.create_bucket(Bucket="archive")
        scrub = run_cli("--data-dir", str(data), "scrub", "--store", "s3")
        assert scrub.returncode == 1, scrub.stdout + scrub.stderr
        assert present_in_catalog(data, "s3") == set()  # every lost copy marked so

        again = run_cli("--data-dir", str(data), "replicate")
        assert again.returncode == 0, again.stdout + again.stderr
        assert present_in_catalog(data, "s3") == in_bucket(client, "archive")
        assert len(in_bucket(client, "archive")) == FILES
        assert run_cli("--data-dir", str(data), "scrub").returncode == 0
