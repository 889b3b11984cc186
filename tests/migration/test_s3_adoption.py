"""Adopting an ArchiveBox 0.7 collection onto an S3 primary (moto_server): every file is
uploaded and verified from the bucket, every snapshot reaches the CAS layout, and the
collection's folders stay exactly as they were (no move, no link, no hard link, no views)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import func, select

from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import PageFetch, Snapshot
from archive_testkit.archivebox import Aged07, generate_collection
from archive_testkit.manifest import manifest
from tests.helpers.cli import run_cli
from tests.helpers.migration import top_level_files
from tests.helpers.s3_bucket_checks import (
    blob_bytes,
    bucket_hashes,
    recorded_files,
    recorded_present,
    s3_client,
)
from tests.helpers.s3_primary import s3_primary_data_dir

Tree = dict[str, tuple[int, int, int, int, int, str | None]]


def _tree(root: Path) -> Tree:
    """Every entry under `root` as it is on disk: mode, size, mtime, inode, links, and a
    symlink's target (not followed)."""
    found: Tree = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            found[os.path.relpath(path, root)] = (
                st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_nlink,
                os.readlink(path) if os.path.islink(path) else None)
    return found


def _without_warcs(data: Path) -> None:
    """Drop the snapshots' own WARCs: indexing them on an S3 primary (the WARC importer) is
    tested with the importer, this module tests the files' adoption alone."""
    for warc in (data / "archive").glob("*/warc/*.warc.gz"):
        warc.unlink()


def _snapshots(catalog: Catalog) -> dict[str, str]:
    with catalog.reading() as tx:
        return dict(tx.session.execute(select(Snapshot.timestamp, Snapshot.fs_version)).all())


def test_update_adopts_onto_s3_and_leaves_every_original_as_it_was(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    data = tmp_path / "data"
    collection = generate_collection(data, Aged07(files_per_snapshot=20, orphans=1),
                                     snapshots=6, seed=7)
    settings = s3_primary_data_dir(data, endpoint_url=s3_endpoint_url, bucket=s3_bucket)
    before, tree, collection_files = manifest(data, "archive"), _tree(data / "archive"), \
        top_level_files(data)

    result = run_cli("--data-dir", str(data), "update")

    assert result.returncode == 0, result.stdout + result.stderr
    assert _tree(data / "archive") == tree  # nothing written, moved, linked or removed
    assert top_level_files(data) == collection_files
    catalog = Catalog.open(settings.catalog_url)
    client = s3_client(s3_endpoint_url)
    stamps = _snapshots(catalog)
    assert set(stamps) == {s.timestamp for s in collection.snapshots}
    assert set(stamps.values()) == {"cas"}  # verified in the bucket: adopted
    warcs = list((data / "archive").glob("*/warc/*.warc.gz"))
    with catalog.reading() as tx:  # the snapshots' own WARCs indexed from the bucket
        captures = tx.session.scalar(select(func.count()).select_from(PageFetch))
    assert warcs and captures and captures >= len(warcs)
    ids = {}
    with catalog.reading() as tx:
        ids = dict(tx.session.execute(select(Snapshot.id, Snapshot.timestamp)).all())
    recorded = {f"archive/{ids[sid]}/{rel}": sha for (sid, rel), sha in recorded_files(catalog).items()}
    assert recorded == before  # every original path, with its own bytes' hash
    bodies = bucket_hashes(client, s3_bucket) - set(before.values())  # the WARCs' payloads
    assert recorded_present(catalog) == set(before.values()) | bodies
    for path, sha in before.items():
        assert blob_bytes(client, s3_bucket, sha) == (data / path).read_bytes(), path

    again = run_cli("--data-dir", str(data), "update")

    assert again.returncode == 0, again.stdout + again.stderr
    assert "migrated 0," in again.stdout and "failed 0," in again.stdout
    assert _tree(data / "archive") == tree
    assert recorded_present(catalog) == set(before.values()) | bodies == bucket_hashes(
        client, s3_bucket)
    catalog.close()


def test_a_file_edited_after_it_was_stored_keeps_its_snapshot_unadopted(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    """`migrate-to-cas` stores the files; one is edited before `--cleanup-legacy`: its snapshot
    is reported (exit 1) and not adopted, the edit stays on disk, the other one is adopted.
    Put back, a rerun adopts it."""
    data = tmp_path / "data"
    generate_collection(data, Aged07(files_per_snapshot=8), snapshots=2, seed=3)
    _without_warcs(data)
    settings = s3_primary_data_dir(data, endpoint_url=s3_endpoint_url, bucket=s3_bucket)

    stored = run_cli("--data-dir", str(data), "migrate-to-cas")  # stores, adopts nothing

    assert stored.returncode == 0, stored.stdout + stored.stderr
    catalog = Catalog.open(settings.catalog_url)
    assert "cas" not in set(_snapshots(catalog).values())
    edited = next(iter(sorted((data / "archive").glob("*/index.html"))))
    original = edited.read_bytes()
    edited.write_bytes(original + b"<!-- edited -->")
    tree = _tree(data / "archive")

    refused = run_cli("--data-dir", str(data), "migrate-to-cas", "--cleanup-legacy")

    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "index.html" in refused.stderr and "other bytes" in refused.stderr
    fs_versions = _snapshots(catalog)
    assert fs_versions[edited.parent.name] != "cas"
    assert set(fs_versions.values()) - {fs_versions[edited.parent.name]} == {"cas"}
    assert _tree(data / "archive") == tree  # the edit too: nothing on disk touched

    edited.write_bytes(original)
    done = run_cli("--data-dir", str(data), "migrate-to-cas", "--cleanup-legacy")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "snapshots verified in the bucket: 1" in done.stdout
    assert set(_snapshots(catalog).values()) == {"cas"}
    assert not any(p.is_symlink() for p in data.rglob("*"))
    catalog.close()
