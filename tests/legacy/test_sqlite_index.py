from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_pipelines.legacy.sqlite_index import ArchiveBoxIndex, ArchiveBoxIndexError

pytestmark = pytest.mark.unit

UUID_A = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
UUID_B = "ffeeddccbbaa99887766554433221100"

# 0.4: integer ids, tags as a text column, added/updated, no results table.
V04 = """
CREATE TABLE core_snapshot (id integer PRIMARY KEY AUTOINCREMENT, url varchar(2000) UNIQUE,
    timestamp varchar(32) UNIQUE, title varchar(128), tags varchar(256), added datetime,
    updated datetime);
INSERT INTO core_snapshot (url, timestamp, title, tags, added, updated) VALUES
    ('https://a.example/', '1600000001', 'A', 'x, y,,x', '2020-09-13 12:26:41.000000', NULL),
    ('javascript:alert(1)', '1600000002', 'evil', NULL, '2020-09-13 12:26:42', NULL),
    ('https://c.example/', '1600000003.0', NULL, '', '2020-09-13 12:26:43', NULL),
    ('https://d.example/', '../../etc', 'bad ts', NULL, '2020-09-13 12:26:43', NULL);
"""

# 0.6: uuid ids (32 hex), core_tag m2m, results with integer ids.
V06 = f"""
CREATE TABLE core_snapshot (id char(32) PRIMARY KEY, url varchar(2000), timestamp varchar(32),
    title varchar(512), added datetime, updated datetime);
CREATE TABLE core_tag (id integer PRIMARY KEY, name varchar(100), slug varchar(100));
CREATE TABLE core_snapshot_tags (id integer PRIMARY KEY, snapshot_id char(32), tag_id integer);
CREATE TABLE core_archiveresult (id integer PRIMARY KEY, snapshot_id char(32), extractor
    varchar(32), cmd text, pwd varchar(256), cmd_version varchar(128), output varchar(1024),
    start_ts datetime, end_ts datetime, status varchar(16));
INSERT INTO core_snapshot VALUES
    ('{UUID_A}', 'https://a.example/', '1600000001', 'A', '2020-09-13 12:26:41', NULL),
    ('{UUID_B}', 'https://b.example/', '1600000002', '  ', '2020-09-13 12:26:42', NULL);
INSERT INTO core_tag VALUES (1, 'news', 'news'), (2, 'Python', 'python');
INSERT INTO core_snapshot_tags VALUES (1, '{UUID_A}', 2), (2, '{UUID_A}', 1), (3, '{UUID_B}', 1);
INSERT INTO core_archiveresult VALUES
    (1, '{UUID_A}', 'wget', '["wget", "https://a.example/"]', '/data/archive/1600000001',
     'GNU Wget 1.20', 'a.example/index.html', '2020-09-13 12:27:00.5', '2020-09-13 12:27:02',
     'succeeded'),
    (2, '{UUID_A}', 'pdf', 'not json', '/x', NULL, '../../etc/passwd',
     '2020-09-13 12:27:03', NULL, 'succeeded'),
    (3, '{UUID_A}', 'wget', NULL, NULL, NULL, 'Timeout', '2020-09-13 12:26:59', NULL, 'failed'),
    (4, '{UUID_A}', '../evil', '[]', NULL, NULL, 'x', NULL, NULL, 'succeeded');
"""

# 0.8: uuid ids, abids, bookmarked_at/created_at/downloaded_at, uuid result ids.
V08 = f"""
CREATE TABLE core_snapshot (id char(32) PRIMARY KEY, abid varchar(30), url varchar(2000),
    timestamp varchar(32), title varchar(512), bookmarked_at datetime, created_at datetime,
    modified_at datetime, downloaded_at datetime, created_by_id integer);
CREATE TABLE core_tag (id integer PRIMARY KEY, abid varchar(30), name varchar(100),
    slug varchar(100));
CREATE TABLE core_snapshot_tags (id integer PRIMARY KEY, snapshot_id char(32), tag_id integer);
CREATE TABLE core_archiveresult (id char(32) PRIMARY KEY, abid varchar(30), snapshot_id
    char(32), extractor varchar(32), cmd text, pwd varchar(256), cmd_version varchar(128),
    output varchar(1024), start_ts datetime, end_ts datetime, status varchar(15));
INSERT INTO core_snapshot VALUES
    ('{UUID_A}', 'snp_1', 'https://a.example/', '1600000001', 'A title',
     '2020-09-13 12:26:41', '2024-01-01 00:00:00', '2024-01-02 00:00:00',
     '2024-01-03 00:00:00+00:00', 1);
INSERT INTO core_tag VALUES (1, 'tag_1', 'news', 'news');
INSERT INTO core_snapshot_tags VALUES (1, '{UUID_A}', 1);
INSERT INTO core_archiveresult VALUES
    ('{UUID_B}', 'res_1', '{UUID_A}', 'screenshot', '["chromium", "--screenshot"]', '/d',
     'Chromium 118', 'screenshot.png', '2024-01-03 00:00:00', '2024-01-03 00:00:01',
     'succeeded');
"""


def build(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


def fingerprint(path: Path) -> tuple[str, int, list[str]]:
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        path.stat().st_mtime_ns,
        sorted(p.name for p in path.parent.iterdir()),
    )


@pytest.fixture(params=[("0.4", V04), ("0.6", V06), ("0.8", V08)], ids=["0.4", "0.6", "0.8"])
def variant(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    name, script = request.param
    path = build(tmp_path / "index.sqlite3", script)
    before = fingerprint(path)
    yield name, path
    assert fingerprint(path) == before, "reading index.sqlite3 changed it"


def test_every_variant_yields_snapshot_a(variant: tuple[str, Path]) -> None:
    name, path = variant
    with ArchiveBoxIndex(path) as db:
        snapshots = list(db.iter_snapshots(batch_size=1))
        by_ts = db.get_by_timestamp("1600000001")
    first = snapshots[0]
    assert first == by_ts
    assert (first.url, first.timestamp) == ("https://a.example/", "1600000001")
    assert first.bookmarked == datetime(2020, 9, 13, 12, 26, 41, tzinfo=UTC)
    assert first.snapshot_id == ("1" if name == "0.4" else "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")


def test_04_text_tags_integer_ids_and_invalid_rows(tmp_path: Path) -> None:
    path = build(tmp_path / "index.sqlite3", V04)
    with ArchiveBoxIndex(path) as db:
        assert db.schema.result == {} and not db.schema.has_tag_tables
        snapshots = list(db.iter_snapshots())
        assert db.count() == 4
        assert [s.timestamp for s in snapshots] == ["1600000001", "1600000003.0"]
        assert snapshots[0].tags == ("x", "y")
        assert snapshots[0].results == {}
        assert snapshots[1].title is None
        assert sorted(db.invalid_rows) == [
            ("2", "url scheme is javascript:, not one of ftp, http, https"),
            ("4", "timestamp '../../etc' is not a timestamp"),
        ]
        assert db.get_by_timestamp("1600000002") is None  # invalid rows are never returned
        assert [s.timestamp for s in db.iter_snapshots(after_timestamp="1600000001")] == ["1600000003.0"]


def test_06_m2m_tags_and_hostile_results(tmp_path: Path) -> None:
    path = build(tmp_path / "index.sqlite3", V06)
    with ArchiveBoxIndex(path) as db:
        a, b = list(db.iter_snapshots())
    assert a.tags == ("Python", "news") and b.tags == ("news",)
    assert b.title is None
    assert a.updated is None and a.created == a.bookmarked
    assert set(a.results) == {"wget", "pdf"}  # "../evil" is no extractor name
    failed, ok = a.results["wget"]  # time order
    assert failed.status == "failed" and failed.output == "Timeout" and failed.cmd == ()
    assert ok.cmd == ("wget", "https://a.example/") and ok.cmd_version == "GNU Wget 1.20"
    assert ok.start_ts == datetime(2020, 9, 13, 12, 27, 0, 500000, tzinfo=UTC)
    pdf = a.results["pdf"][0]
    assert pdf.output is None and pdf.cmd == ()  # path trick and non-JSON cmd dropped
    assert any("dropped" in w for w in a.warnings)
    assert "snapshot_id" not in ok.raw and "extractor" not in ok.raw


def test_08_dates_and_uuid_results(tmp_path: Path) -> None:
    path = build(tmp_path / "index.sqlite3", V08)
    with ArchiveBoxIndex(path) as db:
        (a,) = db.iter_snapshots()
    assert a.created == datetime(2024, 1, 1, tzinfo=UTC)
    assert a.updated == datetime(2024, 1, 3, tzinfo=UTC)
    assert a.tags == ("news",)
    assert a.results["screenshot"][0].output == "screenshot.png"


def test_not_a_database_or_not_archivebox(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ArchiveBoxIndexError, match="not a readable"):
        ArchiveBoxIndex(junk)
    other = build(tmp_path / "other.sqlite3", "CREATE TABLE t (x);")
    with pytest.raises(ArchiveBoxIndexError, match="no core_snapshot"):
        ArchiveBoxIndex(other)
    with pytest.raises(ArchiveBoxIndexError, match="no such"):
        ArchiveBoxIndex(tmp_path / "missing.sqlite3")


def test_the_reader_cannot_write(tmp_path: Path) -> None:
    path = build(tmp_path / "index.sqlite3", V04)
    with ArchiveBoxIndex(path) as db, pytest.raises(sqlite3.OperationalError):
        db._conn.execute("DELETE FROM core_snapshot")
