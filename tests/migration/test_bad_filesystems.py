"""Permission errors, immutable folders and a read-only collection: adopt what can be adopted,
report the rest, delete nothing.

Root ignores file modes, so permission errors are made real by running the import and the
migration in a subprocess without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH (`setpriv`). The
read-only collection is a read-only bind mount of archive/ (`chattr +i` on every folder if
mounting is not permitted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.migration import import_orphans, migrate_batch
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.migration import lost_bytes, snapshots, tree_hashes

ROOT = Path(__file__).resolve().parents[2]
DROP = "-dac_override,-dac_read_search"


def run_unprivileged(storage: StorageParts, what: str) -> dict[str, Any]:
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop root's file-permission override"
    args = [setpriv, f"--inh-caps={DROP}", f"--bounding-set={DROP}", sys.executable, "-m",
            "tests.migration.run_steps", str(storage.settings.data_dir), what]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_permission_errors_are_reported_and_nothing_is_lost(sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    manifest = generate_collection(storage.settings.data_dir, ReleaseMix(), snapshots=10, seed=4)
    names = sorted(p.name for p in storage.layout.archive.iterdir())
    closed_folder, closed_index, closed_file = (storage.layout.archive / n for n in names[:3])
    os.chmod(closed_folder, 0)
    os.chmod(closed_index / "index.json", 0)
    victim = next(p for p in sorted(closed_file.iterdir()) if p.name == "output.html")
    os.chmod(victim, 0)
    try:
        imported = run_unprivileged(storage, "import")
        assert (imported["imported"], imported["skipped"], imported["invalid"]) == (8, 2, 0)
        assert any(names[0] in e and "Permission denied" in e for e in imported["errors"])
        assert any(names[1] in e and "Permission denied" in e for e in imported["errors"])

        migrated = run_unprivileged(storage, "migrate")
        assert (migrated["processed"], migrated["migrated"], migrated["failed"]) == (8, 7, 1)
        assert any(names[2] in e and "Permission denied" in e for e in migrated["errors"])
        assert snapshots(storage)[names[2]].fs_version in ("0.4", "0.6", "0.8")  # not migrated
        assert victim.stat().st_mode & 0o777 == 0  # untouched
    finally:
        os.chmod(closed_folder, 0o755)
        os.chmod(closed_index / "index.json", 0o644)
        os.chmod(victim, 0o644)
    assert lost_bytes(storage, manifest) == []
    # With permissions back, the rest is adopted and migrated.
    assert import_orphans(storage.catalog, storage.layout).imported == 2
    assert migrate_batch(storage.catalog, storage.primary, storage.views,
                         work=storage.work, layout=storage.layout,
                         snapshot_ids=[s.id for s in snapshots(storage).values()]).failed == 0
    assert {s.fs_version for s in snapshots(storage).values()} == {"cas"}
    assert lost_bytes(storage, manifest) == []


def chattr(path: Path, flag: str) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True)


def test_an_immutable_folder_is_adopted_but_left_untouched(sqlite_storage: StorageParts,
                                                          immutable: list[Path]) -> None:
    storage = sqlite_storage
    archive = storage.layout.archive
    generate_collection(storage.settings.data_dir, ReleaseMix(broken=1), snapshots=3, seed=8)
    names = sorted(p.name for p in archive.iterdir())
    good, broken = archive / names[0], archive / names[-1]
    Catalog(storage.catalog.engine).snapshots.add_snapshot(
        url=json.loads((good / "index.json").read_text())["url"], timestamp=names[0], fs_version="0.4",
        title="A catalog title longer than the one index.json has (kept in the catalog)")
    for folder in (good, broken):
        chattr(folder, "+i")
        immutable.append(folder)
    before = tree_hashes(archive)

    report = import_orphans(storage.catalog, storage.layout)

    assert (report.reconciled, report.imported, report.invalid) == (1, 2, 0)
    assert any(names[-1] in e and "cannot move to invalid/" in e for e in report.errors)
    result = migrate_batch(storage.catalog, storage.primary, storage.views,
                           work=storage.work, layout=storage.layout,
                           snapshot_ids=[snapshots(storage)[names[0]].id])
    assert result.failed == 1 and snapshots(storage)[names[0]].fs_version == "0.4"
    assert tree_hashes(archive) == before


@pytest.fixture
def read_only_archive(sqlite_storage: StorageParts, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """archive/ as a read-only bind mount of a generated collection (or every folder +i)."""
    source = tmp_path / "collection"
    generate_collection(source, ReleaseMix(releases=("0.4", "0.8.3"), broken=2), snapshots=12, seed=9)
    archive = sqlite_storage.layout.archive
    mounted = subprocess.run(["mount", "--bind", str(source / "archive"), str(archive)],
                             capture_output=True).returncode == 0
    if mounted:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(archive)], check=True)
        how = "read-only bind mount"
    else:  # no mount permission: make every folder immutable instead
        shutil.rmtree(archive)
        shutil.copytree(source / "archive", archive, symlinks=True)
        for folder in [*archive.iterdir(), archive]:
            chattr(folder, "+i")
        how = "chattr +i"
    try:
        yield archive, how
    finally:
        if mounted:
            subprocess.run(["umount", str(archive)], check=True)
        else:
            for folder in [archive, *archive.iterdir()]:
                chattr(folder, "-i")


def test_a_read_only_collection_is_adopted_and_nothing_changes(sqlite_storage: StorageParts,
                                                               read_only_archive: tuple[Path, str]) -> None:
    archive, how = read_only_archive
    with pytest.raises(OSError):
        (archive / "probe").write_bytes(b"")
    before = tree_hashes(archive)

    report = import_orphans(sqlite_storage.catalog, sqlite_storage.layout)

    assert (report.imported, report.invalid) == (12, 0), how
    assert sum("cannot move to invalid/" in e for e in report.errors) == 2
    migrated = migrate_batch(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                             work=sqlite_storage.work, layout=sqlite_storage.layout,
                             snapshot_ids=[s.id for s in snapshots(sqlite_storage).values()])
    assert (migrated.migrated, migrated.failed) == (0, 12)
    assert {s.fs_version for s in snapshots(sqlite_storage).values()} == {"0.4", "0.8.3"}
    assert tree_hashes(archive) == before
