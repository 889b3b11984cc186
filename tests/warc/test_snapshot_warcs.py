"""The WARCs inside an adopted ArchiveBox 0.7 collection (`warc/<unix>.warc.gz`, written as wget
writes them) indexed into captures linked to their snapshot.

Adoption (`update`) indexes them: every URL of every valid WARC is found by `captures`, each
body the payload warcio reads; a truncated WARC and a file that is no WARC are reported with
their file (and offset), exit 1, while every snapshot is adopted all the same and the adoption's
own checks hold (every original path opens the same bytes, `verify --deep` healthy).
`index-warcs` does it for a collection adopted without it, one snapshot or all, and a rerun
indexes nothing new.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.catalog.models import CrawlSession, PageFetch, Snapshot
from archive_pipelines.datadir import initialize
from archive_pipelines.migration import import_orphans
from archive_pipelines.migration.collection import migrate_all
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.warc.importer import import_session_id
from archive_pipelines.warc.snapshot_warcs import is_snapshot_warc
from archive_testkit.archivebox import Aged07, Collection07, generate_collection
from archive_testkit.manifest import check_manifest, manifest
from tests.helpers.cli import run_cli

NOT_A_WARC = b"<html><body>404 Not Found</body></html>\n" * 20


@dataclass(frozen=True)
class SnapshotWarcFile:
    """A snapshot's WARC as the collection had it, and what warcio reads of its responses."""

    timestamp: str
    snapshot_id: str
    relative_path: str
    sha256: str
    responses: frozenset[tuple[str, str]]  # (url, sha256 of the decoded payload)

    @property
    def source(self) -> str:
        return f"archive/{self.timestamp}/{self.relative_path}"


def _warc_files(root: Path, collection: Collection07, *, spoiled: tuple[str, str]
                ) -> list[SnapshotWarcFile]:
    """The snapshots' WARCs but the spoiled ones."""
    found = []
    for snapshot in collection.snapshots:
        for path in sorted((root / snapshot.folder / "warc").glob("*.warc.gz")):
            if f"archive/{snapshot.timestamp}/warc/{path.name}" in spoiled:
                continue
            responses = set()
            with open(path, "rb") as handle:
                for record in ArchiveIterator(handle):
                    if record.rec_type == "response":
                        body = hashlib.sha256(record.content_stream().read()).hexdigest()
                        responses.add((record.rec_headers.get_header("WARC-Target-URI"), body))
            found.append(SnapshotWarcFile(
                snapshot.timestamp, snapshot.snapshot_id, f"warc/{path.name}",
                hashlib.sha256(path.read_bytes()).hexdigest(), frozenset(responses)))
    return found


def _generate(data: Path, *, snapshots: int, seed: int) -> Collection07:
    collection = generate_collection(data, Aged07(files_per_snapshot=20), snapshots=snapshots,
                                     seed=seed)
    initialize(Settings(data_dir=data))
    return collection


def _spoil(data: Path, collection: Collection07) -> tuple[str, str]:
    """One snapshot's WARC cut in the middle of a record, another's replaced by an HTML page;
    their sources."""
    with_warcs = [s for s in collection.snapshots if list((data / s.folder / "warc").glob("*.warc.gz"))]
    [truncated] = (data / with_warcs[1].folder / "warc").glob("*.warc.gz")
    whole = truncated.read_bytes()
    truncated.write_bytes(whole[:len(whole) * 3 // 5])
    [html] = (data / with_warcs[3].folder / "warc").glob("*.warc.gz")
    html.write_bytes(NOT_A_WARC)
    return (f"archive/{with_warcs[1].timestamp}/warc/{truncated.name}",
            f"archive/{with_warcs[3].timestamp}/warc/{html.name}")


def _captures(parts: StorageParts) -> set[tuple[str, str | None]]:
    with parts.catalog.reading() as tx:
        return {(url, sha) for url, sha in tx.session.execute(
            select(PageFetch.url, PageFetch.body_sha256))}


def _capture_count(parts: StorageParts) -> int:
    with parts.catalog.reading() as tx:
        return int(tx.session.scalar(select(func.count()).select_from(PageFetch)) or 0)


@dataclass
class Adopted:
    collection: Collection07
    parts: StorageParts
    before: dict[str, str]
    valid: list[SnapshotWarcFile]
    spoiled: tuple[str, str]
    update: object


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Adopted]:
    """A 0.7 collection with a truncated WARC and a WARC that is an HTML page, adopted with
    the CLI's `update`."""
    data = tmp_path_factory.mktemp("abx07warcs") / "data"
    collection = _generate(data, snapshots=10, seed=29)
    spoiled = _spoil(data, collection)
    valid = _warc_files(data, collection, spoiled=spoiled)
    before = manifest(data, "archive")
    assert len(valid) >= 6 and all(w.responses for w in valid)

    update = run_cli("--data-dir", str(data), "update", "--import-orphans", "--migrate-fs")

    parts = open_storage(Settings(data_dir=data))
    try:
        yield Adopted(collection, parts, before, valid, spoiled, update)
    finally:
        parts.close()
        parts.catalog.engine.dispose()


def test_adoption_reports_the_unreadable_warcs_and_adopts_every_snapshot(adopted: Adopted) -> None:
    update = adopted.update
    assert update.returncode == 1, update.stdout + update.stderr  # type: ignore[attr-defined]
    out, err = update.stdout, update.stderr  # type: ignore[attr-defined]
    truncated, html = adopted.spoiled
    assert f"{truncated}: offset " in err, err
    assert f"{html}: not a WARC file" in err, err
    assert "2 snapshot WARC file(s) with unreadable records" in err
    assert "not adopted or not migrated" not in err  # no snapshot failed
    assert f"migrated {len(adopted.collection.snapshots)}, failed 0" in out, out
    assert f"snapshot WARCs: indexed {len(adopted.valid) + 1} " in out, out  # + the truncated one
    with adopted.parts.catalog.reading() as tx:
        versions = set(tx.session.scalars(select(Snapshot.fs_version)))
    assert versions == {"cas"}


def test_every_url_of_every_valid_warc_is_a_capture_of_its_payload(adopted: Adopted) -> None:
    held = _captures(adopted.parts)
    expected = set().union(*(w.responses for w in adopted.valid))
    assert len(expected) >= 30
    assert expected - held == set()


def test_captures_finds_them_from_the_command_line(adopted: Adopted) -> None:
    data = adopted.parts.settings.data_dir
    for warc in adopted.valid[:3]:
        url, body = sorted(warc.responses)[0]
        found = run_cli("--data-dir", str(data), "captures", url, "--json")
        assert found.returncode == 0, found.stderr
        captures = json.loads(found.stdout)["captures"]
        session = import_session_id(warc.sha256)
        assert any(c["body_sha256"] == body and c["session_id"] == session for c in captures)


def test_each_warcs_captures_are_linked_to_its_snapshot(adopted: Adopted) -> None:
    with adopted.parts.catalog.reading() as tx:
        sessions = {row.id: row for row in tx.session.scalars(
            select(CrawlSession).where(CrawlSession.kind == "warc"))}
    for warc in adopted.valid:
        session = sessions[import_session_id(warc.sha256)]
        assert (session.source, session.snapshot_id) == (warc.source, warc.snapshot_id)


def test_the_adoptions_fidelity_is_unchanged(adopted: Adopted) -> None:
    """Every original path (the spoiled WARCs too) opens the bytes it had; the store is healthy."""
    root = adopted.parts.settings.data_dir
    assert check_manifest(root, adopted.before) == []
    for snapshot in adopted.collection.snapshots:
        assert (root / snapshot.folder).is_symlink()
    verify = run_cli("--data-dir", str(root), "verify", "--deep")
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_index_warcs_after_adoption_finds_nothing_new(adopted: Adopted) -> None:
    """Every WARC was indexed (the truncated one as far as it reads): skipped. The HTML page
    never is one, so it is reported again, exit 1."""
    data = adopted.parts.settings.data_dir
    count = _capture_count(adopted.parts)
    run = run_cli("--data-dir", str(data), "index-warcs", "--json")
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["warcs"] == len(adopted.valid) + 2 and report["indexed"] == 0
    assert report["files_done_before"] == len(adopted.valid) + 1
    assert report["with_problems"] == [adopted.spoiled[1]] and report["records"] == 0
    assert _capture_count(adopted.parts) == count


def test_index_warcs_indexes_a_collection_adopted_without_it(tmp_path: Path) -> None:
    """Adopted by the migration without the indexing (as before it existed): no capture; then
    `index-warcs --snapshot` indexes one snapshot's, `index-warcs` the rest, and reports the
    spoiled ones; a rerun indexes nothing new."""
    data = tmp_path / "data"
    collection = _generate(data, snapshots=6, seed=31)
    spoiled = _spoil(data, collection)
    valid = _warc_files(data, collection, spoiled=spoiled)
    before = manifest(data, "archive")
    parts = open_storage(Settings(data_dir=data))
    try:
        assert import_orphans(parts.catalog, parts.layout).error_count == 0
        migrated = migrate_all(parts.catalog, parts.primary, parts.views, work=parts.work,
                               layout=parts.layout, batch_size=100, index_warcs=False)
        assert migrated.migrated == len(collection.snapshots) and migrated.warcs_indexed == 0
        assert _capture_count(parts) == 0

        first = valid[0]
        one = run_cli("--data-dir", str(data), "index-warcs", "--snapshot", first.timestamp)
        assert one.returncode == 0, one.stdout + one.stderr
        assert "1 snapshot WARC file(s): 1 indexed now" in one.stdout
        assert {url for url, _sha in _captures(parts)} == {url for url, _sha in first.responses}

        rest = run_cli("--data-dir", str(data), "index-warcs")
        assert rest.returncode == 1, rest.stdout + rest.stderr
        assert f"problem: {spoiled[0]}: offset " in rest.stderr
        assert f"problem: {spoiled[1]}: not a WARC file" in rest.stderr
        assert f"{len(valid) + 2} snapshot WARC file(s): {len(valid)} indexed now, 1 indexed " \
               "before" in rest.stdout, rest.stdout
        assert set().union(*(w.responses for w in valid)) - _captures(parts) == set()
        count = _capture_count(parts)

        again = run_cli("--data-dir", str(data), "index-warcs", "--snapshot", spoiled[0].split("/")[1],
                        *(arg for w in valid for arg in ("--snapshot", w.snapshot_id)))
        assert again.returncode == 0, again.stdout + again.stderr  # the HTML page not asked for
        assert ": 0 indexed now" in again.stdout and _capture_count(parts) == count
        assert check_manifest(data, before) == []
        verify = run_cli("--data-dir", str(data), "verify", "--deep")
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        parts.close()
        parts.catalog.engine.dispose()


def test_index_warcs_names_an_unknown_snapshot(tmp_path: Path) -> None:
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    run = run_cli("--data-dir", str(data), "index-warcs", "--snapshot", "1999999999.0")
    assert run.returncode != 0 and "no snapshot with id or timestamp '1999999999.0'" in run.stderr


@pytest.mark.unit
@pytest.mark.parametrize(("path", "is_warc"), [
    ("warc/1561194909.warc.gz", True),
    ("warc/1561194909.warc", True),
    ("warc/crawl-00000.warc.gz", True),
    ("warc/1561194909.cdx", False),
    ("warc/sub/1561194909.warc.gz", False),
    ("example.com/warc/a.warc.gz", False),
    ("1561194909.warc.gz", False),
    ("warcs/1561194909.warc.gz", False),
])
def test_which_snapshot_files_are_its_warcs(path: str, is_warc: bool) -> None:
    assert is_snapshot_warc(path) is is_warc
