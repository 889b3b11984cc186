"""`scrub`, `replication-status --verify` and `verify` as a person runs them, against a local
zstd replica and a moto_server bucket: loss and rot at rest are found, recorded, and
repaired by the next `replicate`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.replication import flip_byte

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

FILES = 12


def make_data_dir(tmp_path: Path, endpoint: str, bucket: str) -> tuple[Path, list[str]]:
    """primary + a local zstd replica + an S3 replica, retention 3, FILES blobs replicated."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(
        '[replication]\nretention = 3\n'
        '[[stores]]\nname = "primary"\npath = "cas"\ncodec = "raw"\n'
        '[[stores]]\nname = "local"\npath = "replicas/local"\ncodec = "zstd"\n'
        f'[[stores]]\nname = "s3"\nkind = "s3"\nbucket = "{bucket}"\nprefix = "archive"\n'
        f'endpoint_url = "{endpoint}"\ncodec = "zstd"\n')
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    site = tmp_path / "site"
    site.mkdir()
    for i in range(FILES):
        (site / f"{i}.html").write_text(f"<p>page {i}</p>" * (50 + i * 40))
    ingested = run_cli("--data-dir", str(data), "ingest", "--url", "https://a.test/", "wget",
                       str(site))
    assert ingested.returncode == 0, ingested.stderr
    replicated = run_cli("--data-dir", str(data), "replicate")
    assert replicated.returncode == 0 and f"{2 * FILES} copies made" in replicated.stdout
    with sqlite3.connect(data / "catalog.sqlite3") as db:
        hashes = sorted(h for (h,) in db.execute("SELECT sha256 FROM blob"))
    assert len(hashes) == FILES
    return data, hashes


def copy_status(data: Path, store: str, sha: str) -> str:
    with sqlite3.connect(data / "catalog.sqlite3") as db:
        row = db.execute("SELECT c.status FROM blob_copy c JOIN blob b ON b.id = c.blob_id "
                         "JOIN store s ON s.id = c.store_id WHERE s.name = ? AND b.sha256 = ?",
                         (store, sha)).fetchone()
    return str(row[0])


def scrub_json(data: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("--data-dir", str(data), "scrub", "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    return done.returncode, {store["store"]: store for store in report["stores"]}


def local_object(data: Path, sha: str) -> Path:
    return data / "replicas" / "local" / "sha256" / sha[:2] / sha[2:4] / f"{sha}.zst"


def delete_from_bucket(endpoint: str, bucket: str, sha: str) -> None:
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").delete_object(
        Bucket=bucket, Key=f"archive/sha256/{sha[:2]}/{sha[2:4]}/{sha}.zst")


def test_scrub_finds_loss_and_rot_and_the_next_replicate_repairs(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data, hashes = make_data_dir(tmp_path, s3_endpoint_url, s3_bucket)
    lost, rotten = hashes[3], hashes[7]
    delete_from_bucket(s3_endpoint_url, s3_bucket, lost)  # the endpoint lost it at rest
    flip_byte(local_object(data, rotten), 30)

    # The catalog alone cannot know: the status says so, and --verify reads the stores.
    blind = run_cli("--data-dir", str(data), "replication-status")
    assert blind.returncode == 0 and "0 under-replicated" in blind.stdout
    assert "no copy read" in blind.stdout

    scrub = run_cli("--data-dir", str(data), "scrub")
    assert scrub.returncode == 1, scrub.stdout + scrub.stderr
    lines = {line.split()[0]: line.split() for line in scrub.stdout.splitlines()[1:4]}
    # store, read ("12 of 12"), ok, missing, corrupt, set aside
    assert lines["primary"][1:7] == ["12", "of", "12", "12", "0", "0"]
    assert lines["local"][1:8] == ["12", "of", "12", "11", "0", "1", "1"]
    assert lines["s3"][1:7] == ["12", "of", "12", "11", "1", "0"]
    assert "2 copies missing or corrupt, recorded so" in scrub.stdout
    assert f"blob {lost} is missing" in scrub.stderr
    assert f"blob {rotten} is corrupt" in scrub.stderr and "set aside" in scrub.stderr
    assert copy_status(data, "s3", lost) == "missing"
    assert copy_status(data, "local", rotten) == "missing"  # its object was set aside
    quarantine = list((data / "replicas" / "local" / "quarantine").iterdir())
    assert len(quarantine) == 1 and quarantine[0].name.startswith(rotten)

    status = run_cli("--data-dir", str(data), "replication-status")
    assert status.returncode == 1 and "2 under-replicated" in status.stdout
    repaired = run_cli("--data-dir", str(data), "replicate")
    assert repaired.returncode == 0 and "2 copies made" in repaired.stdout, repaired.stdout
    assert copy_status(data, "s3", lost) == copy_status(data, "local", rotten) == "present"

    clean = run_cli("--data-dir", str(data), "scrub")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "all 36 copies read are intact" in clean.stdout
    assert quarantine[0].exists()  # set aside, never deleted


def test_prefix_store_and_sample_limit_what_is_read(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data, hashes = make_data_dir(tmp_path, s3_endpoint_url, s3_bucket)
    prefix = hashes[0][0]
    code, stores = scrub_json(data, "--store", "local", "--prefix", prefix)
    assert code == 0 and list(stores) == ["local"]
    assert stores["local"]["checked"] == sum(h.startswith(prefix) for h in hashes)

    # A deleted object outside the prefix is not read, so not found.
    outside = next(h for h in hashes if not h.startswith(prefix))
    delete_from_bucket(s3_endpoint_url, s3_bucket, outside)
    code, stores = scrub_json(data, "--store", "s3", "--prefix", prefix)
    assert code == 0 and stores["s3"]["missing"] == 0

    code, stores = scrub_json(data, "--store", "s3", "--sample", "0.01")
    assert stores["s3"]["fraction"] == pytest.approx(0.01) and stores["s3"]["copies"] == FILES
    assert stores["s3"]["checked"] <= 3  # ~1% of 12 copies: a few windows of the hash space
    assert code == (1 if stores["s3"]["missing"] else 0)

    bad = run_cli("--data-dir", str(data), "scrub", "--prefix", "XY")
    assert bad.returncode == 2 and "not a hex prefix" in bad.stderr
    unknown = run_cli("--data-dir", str(data), "scrub", "--store", "nope")
    assert unknown.returncode == 2
    assert "unknown store 'nope'; the configured stores are primary, local, s3" in unknown.stderr


def test_replication_status_verify_reads_a_sample_and_records_what_it_finds(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data, hashes = make_data_dir(tmp_path, s3_endpoint_url, s3_bucket)
    delete_from_bucket(s3_endpoint_url, s3_bucket, hashes[5])
    checked = run_cli("--data-dir", str(data), "replication-status", "--verify")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    # Fewer copies than 1,000 in each store: the sample is all of them.
    assert "1 under-replicated" in checked.stdout
    s3_line = next(line for line in checked.stdout.splitlines() if line.split()[:1] == ["s3"]
                   and "of" in line)
    assert s3_line.split()[1:7] == ["12", "of", "12", "11", "1", "0"]
    assert "1 copy missing or corrupt, recorded so" in checked.stdout
    assert copy_status(data, "s3", hashes[5]) == "missing"
    assert run_cli("--data-dir", str(data), "replicate").returncode == 0
    again = run_cli("--data-dir", str(data), "replication-status", "--sample", "0.5")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 under-replicated" in again.stdout and "copies read are intact" in again.stdout


def test_verify_says_what_it_did_not_check_and_untracked_files_are_problems(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data, hashes = make_data_dir(tmp_path, s3_endpoint_url, s3_bucket)
    delete_from_bucket(s3_endpoint_url, s3_bucket, hashes[0])
    shallow = run_cli("--data-dir", str(data), "verify")
    assert shallow.returncode == 0, shallow.stdout
    assert f"primary: healthy ({FILES} referenced blobs present; contents not hashed" in shallow.stdout
    assert "replicas: not checked (local, s3): run `archive-pipelines scrub`" in shallow.stdout
    deep = run_cli("--data-dir", str(data), "verify", "--deep")
    assert f"primary: healthy ({FILES} referenced blobs hashed)" in deep.stdout
    assert "replicas: not checked (local, s3)" in deep.stdout

    stray = data / "cas" / "sha256" / "ab" / "cd" / ("abcd" + "0" * 60)
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"put here by hand")
    untracked = run_cli("--data-dir", str(data), "verify")
    assert untracked.returncode == 1, untracked.stdout
    assert "untracked_blob_files   1" in untracked.stdout and stray.name in untracked.stdout
    assert "healthy" not in untracked.stdout and "1 problem(s) left" in untracked.stdout
    assert "replicas: not checked" in untracked.stdout


def test_an_unreachable_store_is_reported_and_the_others_are_scrubbed(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data, _hashes = make_data_dir(tmp_path, s3_endpoint_url, s3_bucket)
    toml = data / "archive.toml"
    toml.write_text(toml.read_text().replace(s3_endpoint_url, "http://127.0.0.1:9"))  # discard
    scrub = run_cli("--data-dir", str(data), "scrub")
    assert scrub.returncode == 1, scrub.stdout + scrub.stderr
    lines = {line.split()[0]: line.split() for line in scrub.stdout.splitlines()[1:4]}
    assert lines["local"][1:5] == ["12", "of", "12", "12"]
    assert lines["s3"][1:4] == ["0", "of", "12"]
    assert "could not read store(s) s3" in scrub.stdout
    assert "store 's3'" in scrub.stderr and "Traceback" not in scrub.stderr


def test_a_rotten_object_in_s3_is_set_aside_and_copied_again(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data, hashes = make_data_dir(tmp_path, s3_endpoint_url, s3_bucket)
    rotten = hashes[5]
    client = boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1")
    key = f"archive/sha256/{rotten[:2]}/{rotten[2:4]}/{rotten}.zst"
    bad = b"\x28\xb5\x2f\xfd rotten at rest"
    client.put_object(Bucket=s3_bucket, Key=key, Body=bad)  # rot behind our back

    code, stores = scrub_json(data, "--store", "s3")
    assert code == 1 and (stores["s3"]["corrupted"], stores["s3"]["set_aside"]) == (1, 1)
    assert copy_status(data, "s3", rotten) == "missing"  # the key is free for a good copy
    kept = client.list_objects_v2(Bucket=s3_bucket, Prefix="archive/quarantine/")["Contents"]
    assert len(kept) == 1 and kept[0]["Key"].startswith(f"archive/quarantine/{rotten}.zst.")
    assert client.get_object(Bucket=s3_bucket, Key=kept[0]["Key"])["Body"].read() == bad

    repaired = run_cli("--data-dir", str(data), "replicate")
    assert repaired.returncode == 0 and "1 copies made" in repaired.stdout, repaired.stdout
    assert copy_status(data, "s3", rotten) == "present"
    code, stores = scrub_json(data, "--store", "s3")
    assert code == 0 and stores["s3"]["ok"] == FILES
