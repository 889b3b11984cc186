"""`ingest` onto an S3 primary (moto_server): copies, checksummed uploads, no views; the
catalog records a blob only once the bucket acknowledged it, also when the endpoint stops
mid-ingest; two data dirs sharing one PostgreSQL catalog and one bucket deduplicate."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.snapshot_ingest import open_ingest
from archive_testkit.servers.tcp_cut import CuttableTcpProxy
from tests.helpers.cli import CLI, run_cli
from tests.helpers.s3_bucket_checks import (
    blob_bytes,
    bucket_hashes,
    recorded_files,
    recorded_present,
    s3_client,
)
from tests.helpers.s3_primary import s3_primary_data_dir

URL = "https://example.com/page"


def _source(root: Path, files: int, *, seed: str = "") -> dict[str, bytes]:
    """`files` small files in nested folders (every tenth a duplicate of another), an empty
    one and one of 300 KB; returns relative path -> bytes."""
    contents: dict[str, bytes] = {}
    for i in range(files):
        body = (f"<html>{seed}{i // 10 * 10 if i % 10 == 9 else i}</html>" * 40).encode()
        contents[f"d{i % 7}/sub{i % 3}/f{i}.html"] = body
    contents["empty.txt"] = b""
    contents["big.bin"] = hashlib.sha256(seed.encode()).digest() * 9600
    for rel, body in contents.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return contents


def _symlinks_under(root: Path) -> list[str]:
    return [os.path.join(d, n) for d, dirs, names in os.walk(root) for n in dirs + names
            if os.path.islink(os.path.join(d, n))]


def test_ingest_copies_into_the_bucket_and_a_rerun_converges(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data = tmp_path / "data"
    settings = s3_primary_data_dir(data, endpoint_url=s3_endpoint_url, bucket=s3_bucket)
    source = tmp_path / "src"
    contents = _source(source, 120)
    modes = {rel: os.stat(source / rel) for rel in contents}

    result = run_cli("--data-dir", str(data), "ingest", "--url", URL, "--hardlink", "wget",
                     str(source))

    assert result.returncode == 0, result.stdout + result.stderr
    assert " complete" in result.stdout
    catalog = Catalog.open(settings.catalog_url)
    client = s3_client(s3_endpoint_url)
    files = recorded_files(catalog)
    assert sorted(rel for _sid, rel in files) == sorted(f"wget/{rel}" for rel in contents)
    distinct = {hashlib.sha256(body).hexdigest() for body in contents.values()}
    assert recorded_present(catalog) == distinct == bucket_hashes(client, s3_bucket)
    for (_sid, rel), sha in files.items():
        assert blob_bytes(client, s3_bucket, sha) == contents[rel.removeprefix("wget/")]
    # Copied, never hard-linked: the sources keep their inode, links and mode.
    for rel, before in modes.items():
        after = os.stat(source / rel)
        assert (after.st_ino, after.st_nlink, after.st_mode) == (before.st_ino, 1, before.st_mode)
    assert _symlinks_under(data) == [] and not (data / "archive" / "by_timestamp").exists()

    again = run_cli("--data-dir", str(data), "ingest", "--url", URL, "wget", str(source))

    assert again.returncode == 0, again.stdout + again.stderr
    assert "new blobs 0," in again.stdout
    assert len(recorded_files(catalog)) == 2 * len(contents)  # a second snapshot, same blobs
    assert recorded_present(catalog) == distinct == bucket_hashes(client, s3_bucket)
    assert _symlinks_under(data) == []
    catalog.close()


def _wait_for_objects(client: object, bucket: str, count: int, process: subprocess.Popen[str],
                      *, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(bucket_hashes(client, bucket)) < count:  # type: ignore[arg-type]
        assert process.poll() is None, "the ingest ended before the endpoint was cut"
        assert time.monotonic() < deadline, "the ingest stored too little"
        time.sleep(0.02)


def test_the_endpoint_stopped_mid_ingest_leaves_nothing_recorded_that_is_not_in_the_bucket(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCHIVE_S3_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("ARCHIVE_S3_READ_TIMEOUT", "2")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    client = s3_client(s3_endpoint_url)
    with CuttableTcpProxy(s3_endpoint_url) as endpoint:
        data = tmp_path / "data"
        settings = s3_primary_data_dir(data, endpoint_url=endpoint.url, bucket=s3_bucket,
                                       extra="[storage]\ningest_batch_size = 40\n")
        source = tmp_path / "src"
        contents = _source(source, 900)
        distinct = {hashlib.sha256(body).hexdigest() for body in contents.values()}
        command = ["--data-dir", str(data), "ingest", "--url", URL, "wget", str(source)]
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
        process = subprocess.Popen([*CLI, *command], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)
        try:
            _wait_for_objects(client, s3_bucket, 150, process)
            endpoint.cut()
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()

        assert process.returncode != 0, out + err
        assert "S3 endpoint" in err and "incomplete" in err, err
        catalog = Catalog.open(settings.catalog_url)
        recorded = recorded_present(catalog)
        in_bucket = bucket_hashes(client, s3_bucket)
        assert recorded <= in_bucket  # nothing recorded present that is not in the bucket
        assert 0 < len(recorded) < len(distinct)  # cut mid-ingest, after some commits

        endpoint.restore()
        rerun = run_cli(*command)

        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert "resuming snapshot" in rerun.stdout and " complete" in rerun.stdout
        assert recorded_present(catalog) == distinct == bucket_hashes(client, s3_bucket)
        files = recorded_files(catalog)
        assert len(files) == len(contents)
        for (_sid, rel), sha in list(files.items())[::37]:
            assert blob_bytes(client, s3_bucket, sha) == contents[rel.removeprefix("wget/")]
        catalog.close()


def test_two_data_dirs_sharing_a_postgres_catalog_and_a_bucket_deduplicate(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str, postgres_url: str) -> None:
    first, second = (s3_primary_data_dir(tmp_path / name, endpoint_url=s3_endpoint_url,
                                         bucket=s3_bucket, catalog_url=postgres_url)
                     for name in ("machine-a", "machine-b"))
    source_a, source_b = tmp_path / "src-a", tmp_path / "src-b"
    contents = _source(source_a, 30)
    _source(source_b, 30)  # the same bytes at the same paths, in another folder
    with open_storage(first) as a, open_storage(second) as b:
        for parts, source in ((a, source_a), (b, source_b)):
            ingest = open_ingest(parts.catalog, url=URL, extractor="wget", source=source,
                                 timestamp=None, created_at=datetime.now(UTC), created_by="t")
            report = ingest_directory(parts.catalog, parts.primary, parts.views, work=parts.work,
                                      snapshot_id=ingest.snapshot_id, extractor="wget",
                                      directory=source)
            assert not report.errors
        distinct = len({hashlib.sha256(body).hexdigest() for body in contents.values()})
        sent_a = a.primary.store.request_counts()  # type: ignore[attr-defined]
        sent_b = b.primary.store.request_counts()  # type: ignore[attr-defined]
        # A new blob is one conditional PUT; a file whose blob went up before, one HEAD.
        assert sent_a == {"PutObject": distinct, "HeadObject": len(contents) - distinct}
        assert "PutObject" not in sent_b  # every blob deduplicated: no second upload
        assert sent_b.get("HeadObject") == len(contents)  # one lookup per file, no more
        assert a.primary.store_id == b.primary.store_id  # one store row for the bucket
        assert report.deduplicated == len(contents) and report.new_blobs == 0
        for rel, body in contents.items():
            sha = hashlib.sha256(body).hexdigest()
            with b.primary.store.open(sha) as reader:
                assert reader.read() == body, rel
        assert recorded_present(a.catalog) == bucket_hashes(s3_client(s3_endpoint_url), s3_bucket)
