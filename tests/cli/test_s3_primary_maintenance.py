"""The maintenance commands on an S3 primary (moto_server), as a person runs them: `status`,
`show`, `rebuild-views`, `replicate` to a local store and to another bucket, `gc` (its trash
in the bucket, untracked objects), `verify` (--deep, --fix), `scrub`; rot and loss at rest
in the primary's bucket found and repaired from a replica; ending with `verify --deep` and
`scrub` clean."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import boto3
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.s3_primary import s3_primary_data_dir
from tests.helpers.storage import sha

FILES = 6
REPLICAS = """[replication]
retention = 3

[[stores]]
name = "local"
path = "replicas/local"
codec = "zstd"

[[stores]]
name = "copies"
kind = "s3"
bucket = "{bucket}"
prefix = "copies"
endpoint_url = "{endpoint}"
codec = "zstd"
"""


def _key(sha256: str) -> str:
    return f"archive/sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"


class Deployment:
    """A data dir whose primary is `bucket`/archive, with a local and an S3 replica."""

    def __init__(self, tmp_path: Path, endpoint: str, bucket: str) -> None:
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        self.bucket = bucket
        copies = f"{bucket}-copies"
        self.client.create_bucket(Bucket=copies)
        self.data = tmp_path / "data"
        s3_primary_data_dir(self.data, endpoint_url=endpoint, bucket=bucket,
                            extra=REPLICAS.format(bucket=copies, endpoint=endpoint))
        self.site = tmp_path / "site"
        self.site.mkdir()

    def run(self, *args: str, code: int = 0) -> str:
        done = run_cli("--data-dir", str(self.data), *args)
        assert done.returncode == code, (args, done.stdout, done.stderr)
        return done.stdout + done.stderr

    def object_keys(self, under: str = "archive/") -> list[str]:
        listing = self.client.list_objects_v2(Bucket=self.bucket, Prefix=under)
        return sorted(o["Key"] for o in listing.get("Contents", []))

    def copy_status(self, store: str, sha256: str) -> str:
        with sqlite3.connect(self.data / "catalog.sqlite3") as db:
            row = db.execute(
                "SELECT c.status FROM blob_copy c JOIN blob b ON b.id = c.blob_id "
                "JOIN store s ON s.id = c.store_id WHERE s.name = ? AND b.sha256 = ?",
                (store, sha256)).fetchone()
        return str(row[0])

    def rot(self, sha256: str) -> None:
        """Flip a byte of the primary's object behind our back (same size)."""
        body = bytearray(self.client.get_object(Bucket=self.bucket, Key=_key(sha256))
                         ["Body"].read())
        body[10] ^= 0xFF
        self.client.put_object(Bucket=self.bucket, Key=_key(sha256), Body=bytes(body))


@pytest.fixture
def deployment(tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> Deployment:
    return Deployment(tmp_path, s3_endpoint_url, s3_bucket)


def test_every_maintenance_command_on_an_s3_primary(deployment: Deployment) -> None:
    d = deployment
    pages = {f"{i}.html": f"<p>page {i}</p>".encode() * (40 + i * 30) for i in range(FILES)}
    for name, body in pages.items():
        (d.site / name).write_bytes(body)
    ingest = ("ingest", "--url", "https://a.test/", "--timestamp", "1700000000.5", "wget",
              str(d.site))
    d.run(*ingest)
    (d.site / "0.html").write_bytes(b"<p>page 0, changed</p>")  # the old body is garbage now
    d.run(*ingest)
    garbage = sha(pages["0.html"])
    kept = sorted(sha(body) for name, body in pages.items() if name != "0.html")
    changed = sha(b"<p>page 0, changed</p>")

    status = d.run("status")
    assert f"s3://{d.bucket}/archive  (s3, raw)" in status
    with sqlite3.connect(d.data / "catalog.sqlite3") as db:
        (snapshot,) = db.execute("SELECT id FROM snapshot").fetchone()
    assert f"blobs in s3://{d.bucket}/archive; no folder views" in d.run("show", snapshot)
    assert "no symlink views" in d.run("rebuild-views")
    assert "no symlink views" in d.run("rebuild-views", "--view", "by_domain", code=2)

    assert f"{2 * FILES} copies made" in d.run("replicate")  # each referenced blob, twice
    for sha256 in [*kept, changed]:
        assert d.copy_status("local", sha256) == d.copy_status("copies", sha256) == "present"

    # gc: a dry run changes nothing; a run moves the blob to the trash; the next deletes it.
    assert "would move 1 (" in d.run("gc", "--dry-run", "--grace-hours", "0")
    assert _key(garbage) in d.object_keys()
    assert "moved 1 (" in d.run("gc", "--grace-hours", "0")
    assert _key(garbage) not in d.object_keys() and f"archive/gc-trash/{garbage}" in d.object_keys()
    assert "deleted 1 (" in d.run("gc", "--grace-hours", "0")
    assert not d.object_keys("archive/gc-trash/")

    # An object put into the bucket by hand: reported by verify, collected by gc --untracked.
    stray = b"left by an interrupted ingest"
    d.client.put_object(Bucket=d.bucket, Key=_key(sha(stray)), Body=stray)
    found = json.loads(run_cli("--data-dir", str(d.data), "verify", "--json").stdout)
    assert found["found"]["untracked_blob_files"] == 1 and found["problems"] == 1
    assert "untracked objects: moved 1 (" in d.run("gc", "--untracked", "--grace-hours", "0")
    d.run("verify")

    # Rot at rest in the primary: only --deep and scrub read it; scrub sets it aside and
    # replicate copies the blob back from a replica.
    rotten = kept[1]
    d.rot(rotten)
    d.run("verify")  # same size: a listing cannot tell
    deep = d.run("verify", "--deep", code=1)
    assert "corrupt_blob_files" in deep and rotten in deep
    scrub = d.run("scrub", "--store", "primary", code=1)
    assert f"blob {rotten} is corrupt" in scrub and "set aside" in scrub
    assert d.copy_status("primary", rotten) == "missing"
    assert [k for k in d.object_keys("archive/quarantine/") if rotten in k]
    assert "1 copies made" in d.run("replicate")
    assert d.copy_status("primary", rotten) == "present"

    # Rot and loss repaired by verify --fix from a replica.
    rotten, lost = kept[2], kept[3]
    d.rot(rotten)
    d.client.delete_object(Bucket=d.bucket, Key=_key(lost))
    shallow = d.run("verify", code=1)
    assert "missing_blob_files" in shallow and lost in shallow and rotten not in shallow
    fixed = d.run("verify", "--deep", "--fix")
    assert "fixed 1" in fixed and "corrupt_blob_files" in fixed
    assert d.copy_status("primary", rotten) == d.copy_status("primary", lost) == "present"

    final = d.run("verify", "--deep")
    assert f"primary: healthy ({FILES} referenced blobs hashed)" in final
    assert "views: none to check (an S3 primary has no symlink views)" in final
    scrub = d.run("scrub")
    assert f"all {FILES * 3} copies read are intact" in scrub
