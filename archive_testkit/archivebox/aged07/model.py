"""Constants, the public snapshot and collection types, and the generator's plan records."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from archive_testkit.archivebox.index_sqlite import SQLITE_NAME

ARCHIVEBOX_VERSION = "0.7.2"
DATA_DIR = "/data"  # the Docker image's data dir: absolute paths in pwd, link_dir and sources
OLD_OUTPUT_DIR = "/home/archivebox/ArchiveBox/output"  # where the 0.4-era collection lived

# Extractors each release ran, in its ARCHIVE_METHODS order.
METHODS_04: tuple[str, ...] = (
    "title",
    "favicon",
    "wget",
    "pdf",
    "screenshot",
    "dom",
    "git",
    "media",
    "archive_org",
)


METHODS_06: tuple[str, ...] = (
    "favicon",
    "headers",
    "singlefile",
    "pdf",
    "screenshot",
    "dom",
    "wget",
    "title",
    "readability",
    "mercury",
    "git",
    "media",
    "archive_org",
)


METHODS_07: tuple[str, ...] = (
    "favicon",
    "headers",
    "singlefile",
    "pdf",
    "screenshot",
    "dom",
    "wget",
    "title",
    "readability",
    "mercury",
    "htmltotext",
    "git",
    "media",
    "archive_org",
)


# Link.latest_outputs() keys ('warc' is never a history key, so always null).
LATEST_METHODS = (
    "title",
    "favicon",
    "wget",
    "warc",
    "singlefile",
    "pdf",
    "screenshot",
    "dom",
    "git",
    "media",
    "archive_org",
)


FAVICON_PROVIDER = "https://www.google.com/s2/favicons?domain={}"
CDN_CSS = "cdn.jsdelivr.net/npm/normalize.css@8.0.1/normalize.css"


@dataclass(frozen=True)
class Snapshot07:
    """One snapshot folder as generated: what SQLite and index.json say about it.

    `results` are the history entries oldest first, each a dict with `id` (the
    core_archiveresult row id; None for an orphan or without SQLite), `uuid` (dashed),
    `extractor`, `cmd` (list), `pwd`, `cmd_version`, `output` (as SQLite stores it),
    `json_output` (as index.json has it), `status`, `start_ts`, `end_ts` (aware UTC) and
    `index_texts`. `files` lists every regular file of the folder relative to it (POSIX);
    `empty_dirs` the output folders an extractor created and left empty (`media`, `mercury`).
    `added`/`updated` are the SQLite values; index.json's `updated` is the start of the last
    archiving run (archive_link sets it before the extractors run), so a little earlier.
    """

    timestamp: str
    snapshot_id: str
    url: str
    title: str | None
    added: datetime
    updated: datetime | None
    tags: tuple[str, ...]
    results: list[dict[str, Any]]
    in_sqlite: bool = True
    files: tuple[str, ...] = ()
    wget_path: str | None = None
    empty_dirs: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        """`archive/<timestamp>`, relative to the collection root."""
        return f"archive/{self.timestamp}"

    @property
    def host(self) -> str:
        return urlparse(self.url).netloc


@dataclass(frozen=True)
class Collection07:
    """A generated collection: its root, its snapshots and how it was written."""

    root: Path
    snapshots: list[Snapshot07]
    write_index_json: bool = True
    with_sqlite: bool = True
    version: str = ARCHIVEBOX_VERSION

    @property
    def sqlite_path(self) -> Path:
        return self.root / SQLITE_NAME

    @property
    def archive_dir(self) -> Path:
        return self.root / "archive"

    def by_timestamp(self) -> dict[str, Snapshot07]:
        return {snapshot.timestamp: snapshot for snapshot in self.snapshots}

    def indexed(self) -> list[Snapshot07]:
        """The snapshots that have a core_snapshot row (all but orphans)."""
        return [snapshot for snapshot in self.snapshots if snapshot.in_sqlite]

    def orphans(self) -> list[Snapshot07]:
        return [snapshot for snapshot in self.snapshots if not snapshot.in_sqlite]


@dataclass(frozen=True)
class Host:
    name: str
    kind: str  # site | git | video | news
    sections: tuple[str, ...] = ()
    accent: tuple[int, int, int] = (170, 30, 85)


HOSTS: tuple[Host, ...] = (
    Host("example.com", "site", ("blog", "guides", "about"), (30, 90, 170)),
    Host("blog.example.org", "site", ("posts", "notes"), (20, 140, 80)),
    Host("docs.example.net", "site", ("reference", "tutorial", "faq"), (120, 60, 160)),
    Host("github.com", "git", (), (36, 41, 47)),
    Host("www.youtube.com", "video", (), (220, 20, 20)),
    Host("news.ycombinator.com", "news", (), (255, 102, 0)),
)


TITLES = (
    "Ünïcode in the wild — Café & Crème",
    "東京の天気: 週末の予報",
    "Привет, мир! A Russian primer",
    "Release notes 🚀 v2.3 <beta>",
    'Why SQLite is "fast enough"',
    "Ελληνικά για αρχάριους",  # noqa: RUF001 (Greek on purpose)
    "Notes on the façade pattern",
    "Data-centric AI: a reading list",
    "Ümlaut, Æsir & Øresund travel guide",
    "Performance tuning 101",
    "مرحبا بالعالم",
    "How we migrated 10 TB without downtime",
    "A tiny guide to tar, gzip & zstd",
    "Résumé tips for engineers",
)


TAGS = ("news", "python", "Reading List", "résumé", "research", "tools", "video", "ToRead")


WORDS = (
    *("archive", "snapshot", "browser", "render", "capture", "history", "preserve", "link", "folder"),
    *("index", "record", "digital", "memory", "public", "source", "network", "fetch", "page", "layout"),
    *("static", "asset", "replay", "offline"),
)


@dataclass
class PlannedResult:
    extractor: str
    cmd: list[str]
    pwd: str
    cmd_version: str | None
    status: str
    json_output: str | None
    db_output: str
    start: datetime
    end: datetime
    index_texts: list[str] | None
    uuid: uuid.UUID
    row_id: int | None = None


@dataclass
class SnapshotPlan:
    index: int
    batch: str  # legacy | bookmarks | text | orphan
    host: Host
    url: str
    timestamp: str
    snapshot_uuid: uuid.UUID
    page_title: str | None  # what the title extractor finds
    title: str | None  # what SQLite and index.json end with
    tags: tuple[str, ...]
    added: datetime
    source: str
    static: bool
    main_rel: str | None  # wget main html path relative to the snapshot folder
    page_dir: str | None
    video_id: str | None = None
    repo: str | None = None
    results: list[PlannedResult] = field(default_factory=list)
    runs: list[tuple[str, datetime]] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    json_updated: datetime | None = None
    db_updated: datetime | None = None
    in_sqlite: bool = True
    tags_json: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    empty_dirs: list[str] = field(default_factory=list)
    mtime: datetime | None = None
    release: str = "0.7"  # the release that last wrote index.json / index.html
