"""A day's storage figures count the day's files only, on SQLite and PostgreSQL."""

from datetime import UTC, datetime
from pathlib import Path

from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.day_stats import day_stats, largest_savings
from archive_pipelines.storage.file_ingest import ingest_directory
from tests.helpers.storage import add_snapshot, write_tree

SCRIPT = b"s" * 10_000  # shared by every snapshot of both days
LOGO = b"l" * 3_000  # shared by the second day's snapshots only
DAY_ONE = (datetime(2024, 12, 25, tzinfo=UTC), datetime(2024, 12, 26, tzinfo=UTC))
DAY_TWO = (datetime(2024, 12, 26, tzinfo=UTC), datetime(2024, 12, 27, tzinfo=UTC))


def _snapshot(storage: StorageParts, tmp_path: Path, name: str, *, day: datetime,
              files: dict[str, bytes]) -> None:
    sid = add_snapshot(storage, url=f"https://{name}.test/", timestamp=f"{day.timestamp()}.{name}",
                       day=day)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=sid, extractor="wget",
                              directory=write_tree(tmp_path / name, files))
    assert not report.errors, report.errors


def test_a_days_savings_count_that_days_files(storage: StorageParts, tmp_path: Path) -> None:
    for name in ("a", "b"):
        _snapshot(storage, tmp_path, name, day=datetime(2024, 12, 25, 12, tzinfo=UTC),
                  files={"index.html": name.encode(), "script.js": SCRIPT})
    for name in ("c", "d", "e"):
        _snapshot(storage, tmp_path, name, day=datetime(2024, 12, 26, 12, tzinfo=UTC),
                  files={"index.html": name.encode(), "script.js": SCRIPT, "logo.png": LOGO,
                         "copy/script.js": SCRIPT})
    one, two = day_stats(storage.catalog, *DAY_ONE), day_stats(storage.catalog, *DAY_TWO)
    assert (one.files, one.unique_blobs, one.bytes_saved) == (4, 3, 10_000)
    assert (two.files, two.unique_blobs) == (12, 5)  # three pages, the script, the logo
    assert two.bytes_saved == 5 * 10_000 + 2 * 3_000
    savings = largest_savings(storage.catalog, *DAY_TWO, limit=10)
    assert [(s.size, s.references, s.bytes_saved, s.archive_references) for s in savings] == [
        (10_000, 6, 5 * 10_000, 8), (3_000, 3, 2 * 3_000, 3)]
    assert sum(s.bytes_saved for s in savings) == two.bytes_saved  # every saving listed
    assert {s.example_path for s in savings} == {"wget/copy/script.js", "wget/logo.png"}  # the day's
    [script] = largest_savings(storage.catalog, *DAY_ONE, limit=1)
    assert (script.references, script.bytes_saved, script.archive_references) == (2, 10_000, 8)


def test_a_day_without_shared_blobs_saves_nothing(storage: StorageParts, tmp_path: Path) -> None:
    _snapshot(storage, tmp_path, "a", day=datetime(2024, 12, 25, 12, tzinfo=UTC),
              files={"index.html": b"a", "script.js": SCRIPT})
    _snapshot(storage, tmp_path, "b", day=datetime(2024, 12, 26, 12, tzinfo=UTC),
              files={"index.html": b"b", "script.js": SCRIPT})
    assert largest_savings(storage.catalog, *DAY_TWO, limit=10) == []  # shared across days only
    assert day_stats(storage.catalog, *DAY_TWO).bytes_saved == 0

