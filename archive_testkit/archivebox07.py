"""A realistic ArchiveBox 0.7.x collection on disk, for import tests and benchmarks.

`generate_archivebox07(root, snapshots=N, seed=S)` writes what a collection looks like after
years of use that ended on ArchiveBox 0.7.2, deterministically from `seed`:

* `index.sqlite3`: the Django schema 0.7 ends with (core migrations up to
  `0022_auto_20231023_2008`), column order included: Django's SQLite schema editor rebuilds a
  table on every AlterField and moves the altered column last, hence `core_tag`
  (`name`, `slug`, `id`) and `core_snapshot` (`id`, `timestamp`, `title`, `added`, `updated`,
  `url`). Snapshot and result UUIDs are 32-char hex; datetimes are Django's naive-UTC text
  `str(datetime)`: `2023-11-20 10:02:11.512345`, or `2023-11-20 10:02:11` when the microseconds
  are 0. `cmd` is JSON text (`json.dumps`, default separators). `url` is UNIQUE, so a URL has
  at most one row.
* `ArchiveBox.conf`, `sources/` (the import files), `logs/errors.log`, `archive/`. 0.7 writes
  no top-level `index.html` / `index.json` (its main index is the SQLite file only), so the
  `../../index.html` link of every snapshot page is broken on disk, as in real collections.
* `archive/<timestamp>/`, flat: `index.json` (`Link._asdict(extended=True)`, written with
  `json.dump(indent=4, sort_keys=True)`, ASCII-escaped), `index.html` (the snapshot page),
  and the extractor outputs: `favicon.ico`, `headers.json`, `singlefile.html`, `output.pdf`,
  `screenshot.png`, `output.html`, `htmltotext.txt`, `archive.org.txt`,
  `readability/{content.html,content.txt,article.json}`, `mercury/{...}`, `warc/<unix>.warc.gz`,
  `media/` (empty unless the page had a video), `git/<repo>/` (github.com only) and the wget
  tree `<host>/<path>/index.html` with its page requisites, `--backup-converted` `.orig`
  copies, per-host assets shared byte-for-byte across snapshots of one host
  (`<host>/css/site.css`, `<host>/static/jquery.min.js`, ...) and a CDN file shared by every
  snapshot (`cdn.jsdelivr.net/...`).

0.7's `index.json` DOES carry `snapshot_id` (the dashed UUID string of the Snapshot row):
`Link._asdict(extended=True)` in 0.6.x-0.7.x adds `snapshot_id` (see `archivebox/index/schema.py`
at ArchiveBox commit f5739506, the 0.7 tree that also added `htmltotext`), and
`write_json_link_details` writes `_asdict(extended=True)`. An orphan folder's `snapshot_id`
names a row that no longer exists.

History mirrors how a collection ages: a third of the snapshots came from a 0.4-era import
(integer timestamps, two of them colliding as `T` and `T.0`, results first written by 0.4 then
copied into SQLite by migration 0007, all sharing ONE result uuid because migration 0011 added
`uuid` with a callable default that SQLite evaluated once), a third from a 0.6-era bookmark
import (`1600000000.0`-style timestamps), the rest from 0.7 text imports
(`str(datetime.timestamp())`, e.g. `1700481234.56789`). Every snapshot was last archived or
updated by 0.7 (so every `index.json` has the 0.7 shape and lists every 0.7 extractor, with an
empty list for those that never ran). Some results failed (the JSON keeps
`"ArchiveError: ..."`, SQLite keeps `str(exception)`), some were retried and succeeded
(two history entries), a few archive.org submissions were skipped.

Every file of a folder carries the folder's last archiving time as its mtime.

`orphans` adds folders left behind by `archivebox remove` without `--delete` whose URL was
added again later: same URL as a live snapshot, an older timestamp, no SQLite row (0.7's
`url` is UNIQUE, so two rows can never share a URL). They count in `snapshots`.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import random
import re
import sqlite3
import struct
import unicodedata
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from archive_testkit.warc_files import WGET_VERSION, WgetFetch, WgetRun, wget_warc

ARCHIVEBOX_VERSION = "0.7.2"
DATA_DIR = "/data"  # the Docker image's data dir: absolute paths in pwd, link_dir and sources
OLD_OUTPUT_DIR = "/home/archivebox/ArchiveBox/output"  # where the 0.4-era collection lived
SQLITE_NAME = "index.sqlite3"

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
_LATEST_METHODS = (
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
# 0.7 STATICFILE_EXTENSIONS (subset that matters here).
_STATIC_EXTENSIONS = frozenset(
    (
        *("gif", "jpeg", "jpg", "png", "tif", "tiff", "wbmp", "ico", "jng", "bmp", "svg", "svgz", "webp"),
        *("ps", "eps", "ai", "mp3", "mp4", "m4a", "mpeg", "mpg", "mkv", "mov", "webm", "m4v", "flv", "wmv"),
        *("avi", "ogg", "ts", "m3u8", "pdf", "apk", "txt", "rtf", "rtfd", "doc", "docx", "ppt", "pptx"),
        *("xls", "xlsx", "atom", "rss", "css", "js", "json", "dmg", "iso", "img", "rar", "war", "hqx"),
        *("zip", "gz", "bz2", "7z"),
    )
)
_FAVICON_PROVIDER = "https://www.google.com/s2/favicons?domain={}"
_CDN_CSS = "cdn.jsdelivr.net/npm/normalize.css@8.0.1/normalize.css"

# The core migrations a 0.7.2 database has applied (ArchiveBox's own 0.7 fixture lists these).
_MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("contenttypes", "0001_initial"),
    ("contenttypes", "0002_remove_content_type_name"),
    ("auth", "0001_initial"),
    ("auth", "0002_alter_permission_name_max_length"),
    ("auth", "0003_alter_user_email_max_length"),
    ("auth", "0004_alter_user_username_opts"),
    ("auth", "0005_alter_user_last_login_null"),
    ("auth", "0006_require_contenttypes_0002"),
    ("auth", "0007_alter_validators_add_error_messages"),
    ("auth", "0008_alter_user_username_max_length"),
    ("auth", "0009_alter_user_last_name_max_length"),
    ("auth", "0010_alter_group_name_max_length"),
    ("auth", "0011_update_proxy_permissions"),
    ("auth", "0012_alter_user_first_name_max_length"),
    ("admin", "0001_initial"),
    ("admin", "0002_logentry_remove_auto_add"),
    ("admin", "0003_logentry_add_action_flag_choices"),
    ("sessions", "0001_initial"),
    ("core", "0001_initial"),
    ("core", "0002_auto_20200625_1521"),
    ("core", "0003_auto_20200630_1034"),
    ("core", "0004_auto_20200713_1552"),
    ("core", "0005_auto_20200728_0326"),
    ("core", "0006_auto_20201012_1520"),
    ("core", "0007_archiveresult"),
    ("core", "0008_auto_20210105_1421"),
    ("core", "0009_auto_20210216_1038"),
    ("core", "0010_auto_20210216_1055"),
    ("core", "0011_auto_20210216_1331"),
    ("core", "0012_auto_20210216_1425"),
    ("core", "0013_auto_20210218_0729"),
    ("core", "0014_auto_20210218_0729"),
    ("core", "0015_auto_20210218_0730"),
    ("core", "0016_auto_20210218_1204"),
    ("core", "0017_auto_20210219_0211"),
    ("core", "0018_auto_20210327_0952"),
    ("core", "0019_auto_20210401_0654"),
    ("core", "0020_auto_20210410_1031"),
    ("core", "0021_auto_20220914_0934"),
    ("core", "0022_auto_20231023_2008"),
)


# --------------------------------------------------------------------------- public types


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


# --------------------------------------------------------------------------- small helpers


def django_datetime(value: datetime) -> str:
    """How Django's SQLite backend stores an aware datetime: naive UTC `str(datetime)`."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")


def _minute(value: datetime) -> str:
    # ArchiveBox's ts_to_date_str.
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _crockford(number: int) -> str:
    digits = []
    while True:
        number, rest = divmod(number, 32)
        digits.append(_CROCKFORD[rest])
        if number == 0:
            break
    return "".join(reversed(digits))


def without_scheme(url: str) -> str:
    # ArchiveBox writes .strip('//'), which strips every leading/trailing '/'.
    return urlparse(url)._replace(scheme="").geturl().strip("/")


def hashurl(url: str) -> str:
    """ArchiveBox's `hashurl`: crockford base32 of sha256(base_url), first 20 chars."""
    return _crockford(int(hashlib.sha256(without_scheme(url).encode("utf-8")).hexdigest(), 16))[:20]


def _extension(url: str) -> str:
    basename = urlparse(url).path.rsplit("/", 1)[-1]
    return basename.rsplit(".", 1)[-1].lower() if "." in basename else ""


def is_static_url(url: str) -> bool:
    return _extension(url) in _STATIC_EXTENSIONS


def slugify(value: str) -> str:
    """Django's `slugify` (allow_unicode=False)."""
    value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


def _printable_filesize(num_bytes: float) -> str:
    for unit in ("Bytes", "KB", "MB", "GB"):
        if -1024.0 < num_bytes < 1024.0:
            return f"{num_bytes:3.1f} {unit}"
        num_bytes /= 1024.0
    return f"{num_bytes:3.1f} TB"


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _png(width: int, height: int, rgb: tuple[int, int, int], noise: int = 0) -> bytes:
    """A valid truecolour PNG; `noise` > 0 varies the pixels so files differ."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            shade = (x * 7 + y * 13 + noise) % 32 if noise else 0
            rows += bytes(((rgb[0] + shade) % 256, (rgb[1] + shade) % 256, (rgb[2] + shade) % 256))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def _ico(png: bytes, size: int) -> bytes:
    """An ICO file holding one PNG image (what Google's favicon service returns)."""
    entry = struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(png), 22)
    return struct.pack("<HHH", 0, 1, 1) + entry + png


def _pdf(lines: Sequence[str]) -> bytes:
    """A small, structurally valid one-page PDF (Chrome's --print-to-pdf output in miniature)."""

    def pdf_text(text: str) -> str:
        ascii_text = text.encode("ascii", "replace").decode("ascii")
        return ascii_text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    body = "BT /F1 14 Tf 72 740 Td 16 TL " + " ".join(f"({pdf_text(line)}) '" for line in lines) + " ET"
    stream = body.encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Producer (Skia/PDF m120) /Creator (Chromium) >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _noise(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size)


def _seeded(label: str, size: int) -> bytes:
    """Bytes that depend only on `label`: identical wherever the same asset is written."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


# --------------------------------------------------------------------------- hosts and pages


@dataclass(frozen=True)
class _Host:
    name: str
    kind: str  # site | git | video | news
    sections: tuple[str, ...] = ()
    accent: tuple[int, int, int] = (170, 30, 85)


_HOSTS: tuple[_Host, ...] = (
    _Host("example.com", "site", ("blog", "guides", "about"), (30, 90, 170)),
    _Host("blog.example.org", "site", ("posts", "notes"), (20, 140, 80)),
    _Host("docs.example.net", "site", ("reference", "tutorial", "faq"), (120, 60, 160)),
    _Host("github.com", "git", (), (36, 41, 47)),
    _Host("www.youtube.com", "video", (), (220, 20, 20)),
    _Host("news.ycombinator.com", "news", (), (255, 102, 0)),
)

_TITLES = (
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
_TAGS = ("news", "python", "Reading List", "résumé", "research", "tools", "video", "ToRead")
_WORDS = (
    *("archive", "snapshot", "browser", "render", "capture", "history", "preserve", "link", "folder"),
    *("index", "record", "digital", "memory", "public", "source", "network", "fetch", "page", "layout"),
    *("static", "asset", "replay", "offline"),
)


@dataclass
class _Result:
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
class _Plan:
    index: int
    batch: str  # legacy | bookmarks | text | orphan
    host: _Host
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
    results: list[_Result] = field(default_factory=list)
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


# --------------------------------------------------------------------------- planning


def _timestamp_str(moment: datetime) -> str:
    return str(moment.timestamp())


def _plan_snapshots(rng: random.Random, count: int, orphans: int) -> list[_Plan]:
    n_orphans = min(max(orphans, 0), max(0, (count - 3) // 4))
    live = count - n_orphans
    n_legacy = max(1, live // 3) if live >= 3 else 0
    n_bookmarks = max(1, live // 3) if live >= 3 else 0
    n_text = live - n_legacy - n_bookmarks

    t_legacy = datetime(2019, 6, 2, 9, 14, 7, 120000, tzinfo=UTC) + timedelta(days=rng.randrange(60))
    t_bookmarks = datetime(2021, 3, 5, 18, 40, 3, 0, tzinfo=UTC) + timedelta(days=rng.randrange(60))
    t_text = datetime(2023, 11, 20, 10, 0, 0, tzinfo=UTC) + timedelta(days=rng.randrange(30))

    used_urls: set[str] = set()
    used_ts: set[str] = set()
    plans: list[_Plan] = []
    host_cycle = list(_HOSTS)

    def new_url(index: int) -> tuple[_Host, str, bool]:
        while True:
            host = host_cycle[(index + rng.randrange(len(host_cycle))) % len(host_cycle)]
            static = False
            if host.kind == "site":
                section = rng.choice(host.sections)
                choice = rng.random()
                if choice < 0.12:
                    url = f"https://{host.name}/"
                elif choice < 0.22:
                    url = f"https://{host.name}/files/report-{rng.randrange(2015, 2024)}.pdf"
                    static = True
                else:
                    slug = "-".join(rng.sample(_WORDS, 3))
                    url = f"https://{host.name}/{section}/{slug}/"
            elif host.kind == "git":
                user = rng.choice(("octo", "pallets", "tiangolo"))
                url = f"https://github.com/{user}/{rng.choice(_WORDS)}-{rng.choice(_WORDS)}"
            elif host.kind == "video":
                vid = "".join(
                    rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
                    for _ in range(11)
                )
                url = f"https://www.youtube.com/watch?v={vid}"
            else:
                url = f"https://news.ycombinator.com/item?id={rng.randrange(20_000_000, 39_000_000)}"
            if url not in used_urls:
                used_urls.add(url)
                return host, url, static
            index += 1

    def add(batch: str, moment: datetime, added: datetime, timestamp: str, source: str, index: int) -> _Plan:
        host, url, static = new_url(index)
        used_ts.add(timestamp)
        return _make_plan(rng, len(plans), batch, host, url, static, timestamp, added, source)

    # 0.4-era import: integer timestamps from a bookmark export; two collide as T and T.0.
    legacy_source = f"{OLD_OUTPUT_DIR}/sources/bookmarks_export.html-{int(t_legacy.timestamp())}.txt"
    for i in range(n_legacy):
        stamp = 1_530_000_000 + i * 86_400 * 9 + rng.randrange(80_000)
        ts = str(stamp)
        if i == 1 and plans:
            ts = plans[0].timestamp + ".0"  # lowest_uniq_timestamp of a same-second bookmark
        added = t_legacy + timedelta(microseconds=1234 * (i + 1))
        plans.append(add("legacy", t_legacy, added, ts, legacy_source, i))

    # 0.6-era Netscape bookmarks import: str(datetime.fromtimestamp(ADD_DATE).timestamp()).
    bookmark_source = f"{DATA_DIR}/sources/{int(t_bookmarks.timestamp())}-import.txt"
    for i in range(n_bookmarks):
        stamp = 1_580_000_000 + i * 86_400 * 5 + rng.randrange(80_000)
        ts = f"{stamp}.0"
        added = t_bookmarks + timedelta(microseconds=877 * (i + 1))
        plans.append(add("bookmarks", t_bookmarks, added, ts, bookmark_source, 100 + i))

    # 0.7 text imports: str(datetime.now(timezone.utc).timestamp()) per URL.
    text_source = f"{DATA_DIR}/sources/{int(t_text.timestamp())}-import.txt"
    moment = t_text
    for i in range(n_text):
        moment = moment + timedelta(seconds=rng.randrange(1, 4), microseconds=rng.randrange(1, 999_999))
        if i == 2:
            moment = moment.replace(microsecond=0)  # Django then stores "YYYY-MM-DD HH:MM:SS"
        ts = _timestamp_str(moment)
        while ts in used_ts:
            ts = str(float(ts) + 1.0)  # write_link_to_sql_index's collision bump
        plans.append(add("text", t_text, moment, ts, text_source, 200 + i))

    # Orphans: same URL as a later 0.7 snapshot, archived in the 0.6 era, row removed.
    text_plans = [plan for plan in plans if plan.batch == "text" and not plan.static]
    for i in range(n_orphans):
        twin = text_plans[i % len(text_plans)] if text_plans else plans[i % len(plans)]
        stamp = 1_600_000_000 + i * 86_400 * 3 + rng.randrange(80_000)
        ts = f"{stamp}.0"
        added = t_bookmarks + timedelta(days=20 + i, microseconds=4321)
        orphan = _make_plan(
            rng, len(plans), "orphan", twin.host, twin.url, twin.static, ts, added, bookmark_source
        )
        orphan.in_sqlite = False
        plans.append(orphan)
    return plans


def _make_plan(
    rng: random.Random,
    index: int,
    batch: str,
    host: _Host,
    url: str,
    static: bool,
    timestamp: str,
    added: datetime,
    source: str,
) -> _Plan:
    parsed = urlparse(url)
    page_title: str | None = None if static else rng.choice(_TITLES)
    # Bookmark exports bring their own title (the title extractor then never runs);
    # text imports start untitled and take the page's title.
    title: str | None = None
    if batch in ("bookmarks", "legacy", "orphan") and page_title:
        pick = rng.random()
        if pick < 0.25:
            title = page_title + " | My Bookmarks"
        elif pick < 0.85:
            title = page_title
    tags: tuple[str, ...] = ()
    if rng.random() < 0.5:
        tags = tuple(sorted(rng.sample(_TAGS, rng.randrange(1, 4))))
    main_rel: str | None
    page_dir: str | None
    video_id = repo = None
    if static:
        main_rel = f"{parsed.netloc}{parsed.path}"
        page_dir = None
    elif host.kind == "git":
        user, repo = parsed.path.strip("/").split("/")
        page_dir = f"github.com/{user}"
        main_rel = f"{page_dir}/{repo}.html"
    elif host.kind in ("video", "news"):
        page_dir = host.name
        # wget --adjust-extension + --restrict-file-names=windows: '?' becomes '@'.
        main_rel = f"{host.name}{parsed.path}@{parsed.query}.html"
        if host.kind == "video":
            video_id = parsed.query.split("=", 1)[1]
    else:
        path = parsed.path.strip("/")
        page_dir = f"{host.name}/{path}" if path else host.name
        main_rel = f"{page_dir}/index.html"
    return _Plan(
        index=index,
        batch=batch,
        host=host,
        url=url,
        timestamp=timestamp,
        snapshot_uuid=_uuid(rng),
        page_title=page_title,
        title=title,
        tags=tags,
        added=added,
        source=source,
        static=static,
        main_rel=main_rel,
        page_dir=page_dir,
        video_id=video_id,
        repo=repo,
    )


# --------------------------------------------------------------------------- extractor runs


@dataclass(frozen=True)
class _Era:
    name: str
    methods: tuple[str, ...]
    curl: str
    wget: str
    chrome: str
    youtubedl: str
    git: str
    singlefile: str
    readability: str


_ERA_04 = _Era(
    "0.4",
    METHODS_04,
    "curl 7.64.0 (x86_64-pc-linux-gnu)",
    "GNU Wget 1.20.1",
    "Chromium 78.0.3904.108",
    "youtube-dl 2019.11.28",
    "git version 2.20.1",
    "",
    "",
)
_ERA_06 = _Era(
    "0.6",
    METHODS_06,
    "7.74.0",
    "1.21",
    "90.0.4430.212",
    "2021.06.06",
    "2.30.2",
    "0.3.16",
    "0.0.6",
)
_ERA_07 = _Era(
    "0.7",
    METHODS_07,
    "7.88.1",
    "1.21.3",
    "120.0.6099.109",
    "2023.11.16",
    "2.39.2",
    "1.1.46",
    "0.0.11",
)

_FAILURES = {
    "favicon": "Failed to fetch favicon",
    "headers": "Failed to get headers: HTTPError 403",
    "singlefile": "SingleFile was not able to archive the page",
    "pdf": "Failed to save PDF",
    "screenshot": "Failed to save screenshot",
    "dom": "Failed to save DOM",
    "wget": "Got an error from the server",
    "title": "Unable to detect page title",
    "readability": "Readability was not able to archive the page",
    "mercury": "Mercury parser was not able to archive the page",
    "htmltotext": "htmltotext could not find HTML to parse for article text",
    "git": "Failed to save git clone",
    "media": "Failed to save media",
    "archive_org": 'Failed to find "content-location" URL header in Archive.org response.',
}
_FAIL_RATE = {
    "favicon": 0.04,
    "headers": 0.03,
    "singlefile": 0.1,
    "pdf": 0.1,
    "screenshot": 0.06,
    "dom": 0.04,
    "wget": 0.06,
    "title": 0.05,
    "readability": 0.08,
    "mercury": 0.25,
    "htmltotext": 0.0,
    "git": 0.1,
    "media": 0.05,
    "archive_org": 0.35,
}


def _user_agent(era: _Era, tool: str) -> str:
    # 0.4 put the whole `--version` line in: "curl/curl 7.64.0 (x86_64-pc-linux-gnu)".
    if era is _ERA_04:
        return f"ArchiveBox/0.4.21 (+https://github.com/pirate/ArchiveBox/) {tool}".rstrip()
    chrome, release = ("85.0.4183.121", "0.6.2") if era is _ERA_06 else ("118.0.0.0", ARCHIVEBOX_VERSION)
    return (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{chrome} Safari/537.36 ArchiveBox/{release} "
        f"(+https://github.com/ArchiveBox/ArchiveBox/) {tool}"
    ).rstrip()


def _chrome(era: _Era, url: str, flag: str) -> list[str]:
    binary = "/usr/bin/chromium-browser" if era is not _ERA_04 else "/usr/bin/chromium"
    headless = "--headless=new" if era is _ERA_07 else "--headless"
    return [
        binary,
        headless,
        "--no-sandbox",
        "--no-zygote",
        "--disable-dev-shm-usage",
        "--disable-software-rasterizer",
        "--run-all-compositor-stages-before-draw",
        "--hide-scrollbars",
        f"--user-agent={_user_agent(era, '')}",
        "--window-size=1440,2000",
        "--timeout=60000",
        flag,
        url,
    ]


def _command(
    era: _Era, method: str, plan: _Plan, folder: str, run_start: datetime
) -> tuple[list[str], str | None]:
    url = plan.url
    domain = urlparse(url).netloc
    curl = ["curl", "--silent", "--location", "--compressed"]
    if method == "favicon":
        return [
            *curl,
            "--max-time",
            "60",
            "--output",
            "favicon.ico",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            _FAVICON_PROVIDER.format(domain),
        ], era.curl
    if method == "headers":
        return [
            *curl,
            "--head",
            "--max-time",
            "60",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            url,
        ], era.curl
    if method == "title":
        return [
            *curl,
            "--max-time",
            "60",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            url,
        ], era.curl
    if method == "wget":
        warc = f"{folder}/warc/{int(run_start.timestamp())}"
        return [
            "wget",
            "--no-verbose",
            "--adjust-extension",
            "--convert-links",
            "--force-directories",
            "--backup-converted",
            "--span-hosts",
            "--no-parent",
            "-e",
            "robots=off",
            "--timeout=60",
            "--restrict-file-names=windows",
            f"--warc-file={warc}",
            "--page-requisites",
            f"--user-agent={_user_agent(era, f'wget/{era.wget}')}",
            "--compression=auto",
            url,
        ], era.wget
    if method == "pdf":
        return _chrome(era, url, "--print-to-pdf"), era.chrome
    if method == "screenshot":
        return _chrome(era, url, "--screenshot"), era.chrome
    if method == "dom":
        return _chrome(era, url, "--dump-dom"), era.chrome
    if method == "singlefile":
        return [
            "/node/node_modules/single-file-cli/single-file",
            "--browser-executable-path=/usr/bin/chromium-browser",
            '--browser-args=["--headless=new", "--no-sandbox", "--window-size=1440,2000"]',
            url,
            "singlefile.html",
        ], era.singlefile
    if method == "readability":
        return [
            "/node/node_modules/readability-extractor/readability-extractor",
            f"/tmp/tmp{plan.snapshot_uuid.hex[:8]}",
            url,
        ], era.readability
    if method == "mercury":
        return ["/node/node_modules/@postlight/parser/cli.js", url], "1.0.0"
    if method == "htmltotext":
        return ["(internal) archivebox.extractors.htmltotext", "./{singlefile,dom}.html"], ARCHIVEBOX_VERSION
    if method == "git":
        return ["git", "clone", "--recursive", url], era.git
    if method == "media":
        binary = "youtube-dl" if era is _ERA_04 else "yt-dlp"
        return [
            binary,
            "--write-description",
            "--write-info-json",
            "--write-annotations",
            "--write-thumbnail",
            "--no-call-home",
            "--write-sub",
            "--write-auto-subs",
            "--convert-subs=srt",
            "--yes-playlist",
            "--continue",
            "--ignore-errors",
            "--geo-bypass",
            "--add-metadata",
            "--format=(bv*+ba/b)[filesize<=750m][filesize_approx<=?750m]/(bv*+ba/b)",
            url,
        ], era.youtubedl
    if method == "archive_org":
        return [
            *curl,
            "--head",
            "--max-time",
            "60",
            "--user-agent",
            _user_agent(era, f"curl/{era.curl}"),
            f"https://web.archive.org/save/{url}",
        ], era.curl
    raise ValueError(method)


def _applicable(plan: _Plan, method: str) -> bool:
    if plan.static:
        return method in ("favicon", "headers", "wget")
    if method == "git":
        return plan.host.kind == "git"
    return True


def _should_run(plan: _Plan, method: str) -> bool:
    """The release's should_save_<method>: skip what is already on disk."""
    if not _applicable(plan, method):
        return False
    if method == "title":
        # should_save_title: only while the link has no title (or a URL as title)
        return not plan.title or plan.title.lower().startswith("http")
    return method not in plan.present


def _run(
    rng: random.Random,
    plan: _Plan,
    era: _Era,
    start: datetime,
    forced_failures: Iterable[str],
    shared_uuid: uuid.UUID | None,
    retry: bool,
) -> datetime:
    forced = set(forced_failures)
    folder_base = OLD_OUTPUT_DIR if era is _ERA_04 else DATA_DIR
    folder = f"{folder_base}/archive/{plan.timestamp}"
    plan.runs.append((era.name, start))
    moment = start + timedelta(milliseconds=rng.randrange(40, 400))
    for method in era.methods:
        if not _should_run(plan, method):
            continue
        if method in forced:
            status = "failed"
        elif method == "archive_org" and rng.random() < 0.08:
            status = "skipped"
        else:
            rate = _FAIL_RATE[method] * (0.3 if retry else 1.0)
            status = "failed" if rng.random() < rate else "succeeded"
        duration = timedelta(milliseconds=rng.randrange(80, 9000 if method in ("wget", "media") else 3500))
        end = moment + duration
        cmd, cmd_version = _command(era, method, plan, folder, start)
        index_texts: list[str] | None = None
        if method in ("readability", "mercury", "htmltotext"):
            index_texts = [_article_text(plan)] if status == "succeeded" else []
        if status == "succeeded":
            json_output = _success_output(plan, method, end)
            db_output = json_output
            plan.present.add(method)
            if method == "title" and plan.page_title and len(plan.page_title) >= len(plan.title or ""):
                plan.title = plan.page_title
        elif status == "skipped":
            json_output = db_output = "RobotAccessControlException: Blocked by robots.txt"
        else:
            message = _FAILURES[method]
            json_output = f"ArchiveError: {message}"
            db_output = message
            if method in ("mercury", "media"):
                plan.present.add(method)  # the extractor created its (now empty) folder first
                plan.empty_dirs.append(method)
        plan.results.append(
            _Result(
                extractor=method,
                cmd=cmd,
                pwd=folder,
                cmd_version=cmd_version,
                status=status,
                json_output=json_output,
                db_output=db_output,
                start=moment,
                end=end,
                index_texts=index_texts,
                uuid=shared_uuid or _uuid(rng),
            )
        )
        moment = end + timedelta(milliseconds=rng.randrange(5, 60))
    return moment


def _success_output(plan: _Plan, method: str, end: datetime) -> str:
    outputs = {
        "favicon": "favicon.ico",
        "headers": "headers.json",
        "singlefile": "singlefile.html",
        "pdf": "output.pdf",
        "screenshot": "screenshot.png",
        "dom": "output.html",
        "readability": "readability",
        "mercury": "mercury",
        "htmltotext": "htmltotext.txt",
        "git": "git",
        "media": "media",
    }
    if method == "wget":
        return plan.main_rel or plan.host.name
    if method == "title":
        return plan.page_title or ""
    if method == "archive_org":
        return f"https://web.archive.org/web/{end.strftime('%Y%m%d%H%M%S')}/{plan.url}"
    return outputs[method]


_UPDATE_RUN = datetime(2024, 1, 6, 3, 0, tzinfo=UTC)  # `archivebox update` after moving to 0.7


def _archive_history(rng: random.Random, plans: list[_Plan]) -> None:
    """Run the extractors of every snapshot through the releases it lived through."""
    shared_legacy_uuid = _uuid(rng)
    retry_picks = {plan.index for plan in plans if plan.batch in ("text",)}
    forced_once = False
    for plan in plans:
        base = plan.added + timedelta(seconds=rng.randrange(2, 90), microseconds=rng.randrange(1_000_000))
        forced: list[str] = []
        if plan.index == 0 and not plan.static:
            forced = ["pdf", "mercury"]
        elif not forced_once and plan.batch == "text" and not plan.static:
            forced, forced_once = ["screenshot", "archive_org"], True
        if plan.batch == "legacy":
            end = _run(rng, plan, _ERA_04, base, forced, shared_legacy_uuid, retry=False)
            update = _UPDATE_RUN + timedelta(seconds=plan.index * 41, microseconds=rng.randrange(1_000_000))
            _run(rng, plan, _ERA_07, max(update, end + timedelta(days=1)), (), None, retry=True)
        elif plan.batch in ("bookmarks", "orphan"):
            end = _run(rng, plan, _ERA_06, base, forced, None, retry=False)
            if plan.batch == "bookmarks":
                update = _UPDATE_RUN + timedelta(
                    seconds=plan.index * 41, microseconds=rng.randrange(1_000_000)
                )
                _run(rng, plan, _ERA_07, max(update, end + timedelta(days=1)), (), None, retry=True)
        else:
            end = _run(rng, plan, _ERA_07, base, forced, None, retry=False)
            failed = any(result.status == "failed" for result in plan.results)
            if failed and plan.index in retry_picks and rng.random() < 0.6:
                _run(rng, plan, _ERA_07, end + timedelta(days=rng.randrange(1, 20)), (), None, retry=True)
        last_start = plan.runs[-1][1]
        plan.json_updated = last_start  # archive_link: link.overwrite(updated=now) before the loop
        plan.db_updated = plan.results[-1].end + timedelta(milliseconds=rng.randrange(3, 40))
        plan.mtime = plan.db_updated
        plan.release = plan.runs[-1][0]
        if len(plan.runs) > 1 and len(plan.tags) > 1:
            # merge_links() rebuilds tags from a set: their order is arbitrary after a re-run.
            shuffled = list(plan.tags)
            rng.shuffle(shuffled)
            plan.tags_json = ",".join(shuffled)
        else:
            plan.tags_json = ",".join(plan.tags) or None


def _article_text(plan: _Plan) -> str:
    title = plan.page_title or plan.url
    words = hashlib.sha256(plan.url.encode()).hexdigest()
    body = " ".join(_WORDS[int(words[i : i + 2], 16) % len(_WORDS)] for i in range(0, 48, 2))
    return f"{title}\n\n{body.capitalize()}.\n"


# --------------------------------------------------------------------------- file contents


def _host_assets(host: str) -> dict[str, bytes]:
    """Page requisites every page of `host` shares, byte-identical across snapshots."""
    css = (
        f"/* {host} site styles */\n"
        "body{font-family:Inter,system-ui,sans-serif;margin:0;color:#222}\n"
        "header{background:url(../img/logo.png) no-repeat left center;padding-left:48px}\n"
        "@font-face{font-family:Inter;src:url(../fonts/inter-var.woff2) format('woff2')}\n"
        + "".join(f".c{i}{{margin:{i}px}}\n" for i in range(40))
    ).encode()
    js = (
        "/*! jQuery v3.7.1 | (c) OpenJS Foundation and other contributors | jquery.org/license */\n"
        + _seeded(f"jquery/{host}", 2400).hex()
    ).encode()
    accent = next((h.accent for h in _HOSTS if h.name == host), (90, 90, 90))
    return {
        f"{host}/css/site.css": css,
        f"{host}/static/jquery.min.js": js,
        f"{host}/img/logo.png": _png(24, 24, accent),
        f"{host}/fonts/inter-var.woff2": b"wOF2\x00\x01\x00\x00" + _seeded(f"font/{host}", 3000),
        f"{host}/favicon.ico": _ico(_png(16, 16, accent), 16),
    }


def _cdn_asset() -> bytes:
    return (
        b"/*! normalize.css v8.0.1 | MIT License | github.com/necolas/normalize.css */\n"
        + b"html{line-height:1.15;-webkit-text-size-adjust:100%}body{margin:0}main{display:block}\n" * 12
    )


def _page_html(
    plan: _Plan,
    up: str,
    pages: Sequence[str],
    images: Sequence[str],
    converted: bool,
    main_name: str,
) -> bytes:
    """The wget copy of the page (`converted`) or its `.orig` backup (original links)."""
    host = plan.host.name
    title = html.escape(plan.page_title or plan.url)
    if converted:
        cdn = f"{up}../{_CDN_CSS}"
        css, js, logo, icon = (
            f"{up}css/site.css",
            f"{up}static/jquery.min.js",
            f"{up}img/logo.png",
            f"{up}favicon.ico",
        )
    else:
        cdn = f"https://{_CDN_CSS}"
        css, js, logo, icon = "/css/site.css", "/static/jquery.min.js", "/img/logo.png", "/favicon.ico"
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{title}</title>",
        f'<link rel="stylesheet" href="{cdn}">',
        f'<link rel="stylesheet" href="{css}">',
        f'<link rel="icon" href="{icon}">',
        f'<script src="{js}"></script>',
        "</head><body>",
        f'<header><a href="https://{host}/"><img src="{logo}" alt="{host}"></a>',
        f'<nav><a href="https://{host}/about/">About</a> <a href="#main">Skip</a> '
        '<a href="mailto:editor@example.com">Contact</a> '
        '<a href="javascript:void(0)">Menu</a></nav></header>',
        f'<main id="main"><h1>{title}</h1>',
        f"<p>{html.escape(_article_text(plan))}</p>",
    ]
    for image in images:
        lines.append(f'<img src="images/{quote(image)}" alt="figure" loading="lazy">')
    lines.append('<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="">')
    for index, page in enumerate(pages):
        if index == 0:
            lines.append(f'<iframe src="embed/{page}" title="comments"></iframe>')
            lines.append(f'<a href="./embed/{page}?ref=nav#comments">Comments</a>')
        else:
            lines.append(f'<a href="embed/{page}">Part {index + 2}</a>')
    lines.append('<a href="old-posts/missing-page.html">Archived 2019 posts</a>')  # never downloaded
    lines.append(f'<a href="./{main_name}#top">Back to top</a>')
    lines.append('<a href="https://twitter.com/example">Share</a> <a href="//cdn.example.com/x.js">x</a>')
    lines.append("</main></body></html>")
    return ("\n".join(lines) + "\n").encode()


def _embed_html(plan: _Plan, up: str, page: str, next_page: str, main_name: str, converted: bool) -> bytes:
    css = f"{up}../css/site.css" if converted else "/css/site.css"
    back = f"../{main_name}" if converted else f"https://{plan.host.name}/"
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(page)}</title>\n"
        f'<link rel="stylesheet" href="{css}">\n</head><body>\n'
        f"<p>Embedded part {html.escape(page)} of {html.escape(plan.url)}</p>\n"
        f'<a href="./{next_page}">Next</a> <a href="{back}">Back to article</a>\n'
        f'<img src="{up}../img/logo.png" alt="">\n'
        "</body></html>\n"
    ).encode()


_CONTENT_TYPES = {
    "html": "text/html; charset=utf-8",
    "css": "text/css",
    "js": "application/javascript",
    "png": "image/png",
    "woff2": "font/woff2",
    "ico": "image/x-icon",
    "pdf": "application/pdf",
}


def _warc(plan: _Plan, wget_run: _Result, saved: Sequence[str]) -> bytes:
    """The run's `warc/<unix>.warc.gz`: the page, then its requisites, as the server sent them.

    `saved` lists wget's files (page first); a `.orig` backup holds the bytes before
    --convert-links rewrote them, which are the bytes the WARC recorded.
    """
    files = plan.files
    scheme = urlparse(plan.url).scheme
    fetches = []
    for number, rel in enumerate(saved):
        url = f"{'https' if rel == _CDN_CSS else scheme}://{quote(rel, safe='/@')}"
        url = plan.url if number == 0 else url
        content_type = _CONTENT_TYPES.get(rel.rsplit(".", 1)[-1], "application/octet-stream")
        body = files.get(rel + ".orig", files[rel])
        fetches.append(WgetFetch(url=url, body=body, content_type=content_type, saved_as=rel))
    run = WgetRun(
        arguments=tuple(wget_run.cmd[1:]),
        started=wget_run.start,
        warc_name=f"{int(_run_start(plan, wget_run).timestamp())}.warc.gz",
        version=(wget_run.cmd_version or "").rsplit(" ", 1)[-1] or WGET_VERSION,
    )
    return wget_warc(run, fetches)


def _media_files(rng: random.Random, plan: _Plan) -> dict[str, bytes]:
    title = (plan.page_title or "video").replace("/", "_").replace('"', "'")
    stem = f"media/{title} [{plan.video_id}]"
    info = {
        "id": plan.video_id,
        "title": plan.page_title,
        "webpage_url": plan.url,
        "ext": "mp4",
        "duration": rng.randrange(30, 900),
        "uploader": "Example Channel",
    }
    return {
        f"{stem}.mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + _noise(rng, 6000),
        f"{stem}.info.json": json.dumps(info).encode(),
        f"{stem}.description": f"{plan.page_title}\n\nSubscribe for more!\n".encode(),
        f"{stem}.webp": b"RIFF" + struct.pack("<I", 1200) + b"WEBPVP8 " + _noise(rng, 1200),
        f"{stem}.en.srt": (
            b"1\n00:00:00,000 --> 00:00:02,000\nHello\n\n2\n00:00:02,000 --> 00:00:04,000\nWorld\n"
        ),
    }


def _git_files(rng: random.Random, plan: _Plan) -> dict[str, bytes]:
    repo = plan.repo or "repo"
    base = f"git/{repo}"
    sha = hashlib.sha1(plan.url.encode()).hexdigest()
    pack = hashlib.sha1((plan.url + "pack").encode()).hexdigest()
    return {
        f"{base}/README.md": f"# {repo}\n\n{_article_text(plan)}".encode(),
        f"{base}/LICENSE": b"MIT License\n\nCopyright (c) 2023\n",
        f"{base}/.gitignore": b"__pycache__/\n*.pyc\n.venv/\n",
        f"{base}/pyproject.toml": f'[project]\nname = "{repo}"\nversion = "0.1.0"\n'.encode(),
        f"{base}/src/{repo.replace('-', '_')}/__init__.py": b'"""Package."""\n__version__ = "0.1.0"\n',
        f"{base}/.git/HEAD": b"ref: refs/heads/main\n",
        f"{base}/.git/config": (
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
            f'[remote "origin"]\n\turl = {plan.url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
            '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
        ).encode(),
        f"{base}/.git/description": (
            b"Unnamed repository; edit this file 'description' to name the repository.\n"
        ),
        f"{base}/.git/packed-refs": (
            f"# pack-refs with: peeled fully-peeled sorted \n{sha} refs/remotes/origin/main\n".encode()
        ),
        f"{base}/.git/refs/heads/main": f"{sha}\n".encode(),
        f"{base}/.git/refs/remotes/origin/HEAD": b"ref: refs/remotes/origin/main\n",
        f"{base}/.git/logs/HEAD": (
            f"{'0' * 40} {sha} ArchiveBox <a@b> 1700000000 +0000\tclone: from {plan.url}\n".encode()
        ),
        f"{base}/.git/index": b"DIRC\x00\x00\x00\x02" + _noise(rng, 400),
        f"{base}/.git/objects/pack/pack-{pack}.pack": b"PACK\x00\x00\x00\x02" + _noise(rng, 3000),
        f"{base}/.git/objects/pack/pack-{pack}.idx": b"\xfftOc\x00\x00\x00\x02" + _noise(rng, 1100),
        f"{base}/.git/hooks/pre-commit.sample": b"#!/bin/sh\n# An example hook script\nexit 0\n",
    }


def _singlefile_html(plan: _Plan, saved: datetime) -> bytes:
    title = html.escape(plan.page_title or plan.url)
    return (
        f'<!DOCTYPE html> <html lang="en"><!--\n Page saved with SingleFile \n url: {plan.url} \n'
        f" saved date: {saved.strftime('%a %b %d %Y %H:%M:%S')} GMT+0000 (Coordinated Universal Time)\n-->"
        f"<meta charset=utf-8><title>{title}</title><style>body{{font-family:sans-serif}}</style>"
        f'<link rel=canonical href="{plan.url}"><meta name=referrer content=no-referrer>'
        f"<body><h1>{title}</h1><p>{html.escape(_article_text(plan))}</p>"
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="">'
        f'<a href="https://{plan.host.name}/about/">About</a></body></html>'
    ).encode()


def _dom_html(plan: _Plan) -> bytes:
    title = html.escape(plan.page_title or plan.url)
    # Chrome's --dump-dom: the live DOM with the site's own (root-relative / relative) links.
    return (
        f'<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        '<link rel="stylesheet" href="/css/site.css"><script src="/static/jquery.min.js"></script></head>'
        f"<body><h1>{title}</h1><p>{html.escape(_article_text(plan))}</p>"
        '<a href="../about/">About</a> <img src="images/figure-02.png"></body></html>'
    ).encode()


def _readability(plan: _Plan) -> dict[str, bytes]:
    text = _article_text(plan)
    article = {
        "byline": None,
        "dir": None,
        "excerpt": text.split("\n")[2][:120],
        "lang": "en",
        "length": len(text),
        "siteName": plan.host.name,
        "title": plan.page_title,
    }
    return {
        "readability/content.html": (
            f'<div id="readability-page-1" class="page"><div><h2>{html.escape(plan.page_title or "")}</h2>'
            f"<p>{html.escape(text)}</p></div></div>"
        ).encode(),
        "readability/content.txt": text.encode(),
        "readability/article.json": json.dumps(article, indent=4, sort_keys=True).encode(),
    }


def _mercury(plan: _Plan) -> dict[str, bytes]:
    text = _article_text(plan)
    article = {
        "author": None,
        "date_published": None,
        "dek": None,
        "direction": "ltr",
        "domain": plan.host.name,
        "excerpt": text[:120],
        "lead_image_url": None,
        "next_page_url": None,
        "rendered_pages": 1,
        "title": plan.page_title,
        "total_pages": 1,
        "url": plan.url,
        "word_count": len(text.split()),
    }
    return {
        "mercury/content.html": f"<div><p>{html.escape(text)}</p></div>".encode(),
        "mercury/content.txt": text.encode(),
        "mercury/article.json": json.dumps(article, indent=4, sort_keys=True).encode(),
    }


def _headers_json(plan: _Plan, when: datetime) -> bytes:
    headers = {
        "Status-Code": 200,
        "Date": when.strftime("%a, %d %b %Y %H:%M:%S GMT"),
        "Content-Type": "application/pdf" if plan.static else "text/html; charset=utf-8",
        "Server": "nginx",
        "Cache-Control": "max-age=600",
        "Vary": "Accept-Encoding",
    }
    return json.dumps(headers, indent=4).encode()


def _build_files(rng: random.Random, plan: _Plan, files_per_snapshot: int) -> None:
    """Every output file the successful extractors left, the wget tree filling up the count."""
    files = plan.files
    last = plan.mtime or plan.added
    present = plan.present
    accent = plan.host.accent
    if "favicon" in present:
        files["favicon.ico"] = _ico(_png(16, 16, accent), 16)
    if "headers" in present:
        files["headers.json"] = _headers_json(plan, last)
    if "singlefile" in present:
        files["singlefile.html"] = _singlefile_html(plan, last)
    if "pdf" in present:
        files["output.pdf"] = _pdf([plan.page_title or plan.url, plan.url, "Printed by Chromium"])
    if "screenshot" in present:
        files["screenshot.png"] = _png(48, 64, accent, noise=plan.index + 1)
    if "dom" in present:
        files["output.html"] = _dom_html(plan)
    if "htmltotext" in present:
        files["htmltotext.txt"] = _article_text(plan).encode()
    if "readability" in present:
        files.update(_readability(plan))
    if "mercury" in present and "mercury" not in plan.empty_dirs:
        files.update(_mercury(plan))
    if "archive_org" in present:
        archived = next(
            r for r in reversed(plan.results) if r.extractor == "archive_org" and r.status == "succeeded"
        )
        files["archive.org.txt"] = (archived.json_output or "").encode()
    if "git" in present:
        files.update(_git_files(rng, plan))
    if "media" in present and plan.host.kind == "video" and "media" not in plan.empty_dirs:
        files.update(_media_files(rng, plan))
    elif "media" in present and "media" not in plan.empty_dirs:
        plan.empty_dirs.append("media")  # yt-dlp found nothing: 0.7 leaves media/ empty
    if "wget" not in present:
        return
    wget_run = next(r for r in plan.results if r.extractor == "wget" and r.status == "succeeded")
    if plan.static:
        body = _pdf([f"Annual report {plan.url}"])
        files[plan.main_rel or ""] = body
        files[f"warc/{int(_run_start(plan, wget_run).timestamp())}.warc.gz"] = _warc(
            plan, wget_run, [plan.main_rel or ""]
        )
        return
    assert plan.main_rel and plan.page_dir
    files.update(_host_assets(plan.host.name))
    files[_CDN_CSS] = _cdn_asset()
    depth = plan.page_dir.count("/")
    up = "../" * depth
    main_name = plan.main_rel.rsplit("/", 1)[-1]
    # index.json + index.html + main + .orig + warc come on top of what is there now.
    budget = files_per_snapshot - (len(files) + 2 + 3)
    n_pages = max(1, min(6, budget // 6))
    n_images = max(1, budget - 2 * n_pages)
    pages = [f"page{i + 2}.html" for i in range(n_pages)]
    images = ["figure 01.png"] + [f"figure-{i + 2:02d}.png" for i in range(n_images - 1)]
    for number, name in enumerate(images):
        files[f"{plan.page_dir}/images/{name}"] = _png(20, 12, accent, noise=plan.index * 97 + number + 1)
    converted = _page_html(plan, up, pages, images, True, main_name)
    files[plan.main_rel] = converted
    files[plan.main_rel + ".orig"] = _page_html(plan, up, pages, images, False, main_name)
    for number, page in enumerate(pages):
        next_page = f"page{number + 3}.html"  # the last one points past the end: missing
        files[f"{plan.page_dir}/embed/{page}"] = _embed_html(plan, up, page, next_page, main_name, True)
        files[f"{plan.page_dir}/embed/{page}.orig"] = _embed_html(plan, up, page, next_page, main_name, False)
    requisites = [_CDN_CSS, *_host_assets(plan.host.name)]
    requisites += [f"{plan.page_dir}/images/{name}" for name in images]
    requisites += [f"{plan.page_dir}/embed/{page}" for page in pages]
    files[f"warc/{int(_run_start(plan, wget_run).timestamp())}.warc.gz"] = _warc(
        plan, wget_run, [plan.main_rel, *requisites]
    )


def _run_start(plan: _Plan, result: _Result) -> datetime:
    starts = [start for _, start in plan.runs if start <= result.start]
    return starts[-1] if starts else result.start


# --------------------------------------------------------------------------- index.json / index.html


def _history_entry(result: _Result) -> dict[str, Any]:
    return {
        "cmd": result.cmd,
        "cmd_version": result.cmd_version,
        "end_ts": result.end.isoformat(),
        "index_texts": result.index_texts,
        "output": result.json_output,
        "pwd": result.pwd,
        "schema": "ArchiveResult",
        "start_ts": result.start.isoformat(),
        "status": result.status,
    }


def _canonical(plan: _Plan, wget_path: str | None) -> dict[str, Any]:
    domain = urlparse(plan.url).netloc
    canonical: dict[str, Any] = {
        "index_path": "index.html",
        "favicon_path": "favicon.ico",
        "google_favicon_path": _FAVICON_PROVIDER.format(domain),
        "wget_path": wget_path,
        "warc_path": "warc/",
        "singlefile_path": "singlefile.html",
        "readability_path": "readability/content.html",
        "mercury_path": "mercury/content.html",
        "htmltotext_path": "htmltotext.txt",
        "pdf_path": "output.pdf",
        "screenshot_path": "screenshot.png",
        "dom_path": "output.html",
        "archive_org_path": f"https://web.archive.org/web/{without_scheme(plan.url)}",
        "git_path": "git/",
        "media_path": "media/",
        "headers_path": "headers.json",
    }
    if plan.static:
        canonical.update(
            {
                "title": urlparse(plan.url).path.rsplit("/", 1)[-1],
                "wget_path": wget_path,
                "pdf_path": wget_path,
                "screenshot_path": wget_path,
                "dom_path": wget_path,
                "singlefile_path": wget_path,
                "readability_path": wget_path,
                "mercury_path": wget_path,
                "htmltotext_path": wget_path,
            }
        )
    return canonical


def _is_archived(plan: _Plan) -> bool:
    domain = urlparse(plan.url).netloc
    outputs = (domain, "output.pdf", "screenshot.png", "output.html", "media", "singlefile.html")
    names = set(plan.files) | set(plan.empty_dirs)
    return any(name == out or name.startswith(out + "/") for name in names for out in outputs)


def _index_document(plan: _Plan) -> dict[str, Any]:
    parsed = urlparse(plan.url)
    # archive_link() adds an empty list for every extractor of the release that wrote the file.
    methods = METHODS_07 if plan.release == "0.7" else METHODS_06
    history: dict[str, list[dict[str, Any]]] = {method: [] for method in methods}
    for result in plan.results:
        history.setdefault(result.extractor, []).append(_history_entry(result))
    wget_path = plan.main_rel if "wget" in plan.present else None
    latest: dict[str, str | None] = {}
    for method in _LATEST_METHODS:
        outputs = [r.json_output for r in reversed(plan.results) if r.extractor == method and r.json_output]
        latest[method] = outputs[0] if outputs else None
    starts = [result.start for result in plan.results]
    updated = plan.json_updated
    basename = parsed.path.rsplit("/", 1)[-1]
    document: dict[str, Any] = {
        "schema": "Link",
        "url": plan.url,
        "title": plan.title or None,
        "timestamp": plan.timestamp,
        "updated": updated.isoformat() if updated else None,
        "tags": plan.tags_json or None,
        "sources": [plan.source],
        "history": history,
        "snapshot_id": str(plan.snapshot_uuid),
        "link_dir": f"{DATA_DIR}/archive/{plan.timestamp}",
        "archive_path": f"archive/{plan.timestamp}",
        "hash": hashurl(plan.url),
        "base_url": without_scheme(plan.url),
        "scheme": parsed.scheme,
        "domain": parsed.netloc,
        "path": parsed.path,
        "basename": basename,
        "extension": _extension(plan.url),
        "is_static": plan.static,
        "tags_str": (plan.tags_json or "").strip(","),
        "icons": None,
        "bookmarked_date": _minute(datetime.fromtimestamp(float(plan.timestamp), UTC)),
        "updated_date": _minute(updated) if updated else None,
        "oldest_archive_date": min(starts).isoformat() if starts else None,
        "newest_archive_date": max(starts).isoformat() if starts else None,
        "is_archived": _is_archived(plan),
        "num_outputs": sum(1 for result in plan.results if result.status == "succeeded"),
        "num_failures": sum(1 for result in plan.results if result.status == "failed"),
        "latest": latest,
        "canonical": _canonical(plan, wget_path),
    }
    if plan.release != "0.7":  # 0.6 had no htmltotext extractor
        document["canonical"].pop("htmltotext_path", None)
    return document


def _card(path: str, label: str, code: str, kind: str = "iframe") -> str:
    src = html.escape(path)
    if kind == "img":
        preview = f'<img class="card-img-top" src="{src}" onerror="this.style.opacity=0.2"/>'
    else:
        preview = (
            f'<iframe class="card-img-top" src="{src}" sandbox="allow-same-origin allow-scripts '
            'allow-forms" scrolling="no" loading="lazy"></iframe>'
        )
    return (
        '<div class="col-lg-2"><div class="card">\n'
        f"  {preview}\n"
        '  <div class="card-body">\n'
        f'    <a href="{src}" title="Open in new tab..." target="_blank" rel="noopener">'
        f'<p class="card-text"><code>{html.escape(code)}</code></p></a>\n'
        f'    <a href="{src}" target="preview"><h4 class="card-title">{html.escape(label)}</h4></a>\n'
        "  </div></div></div>\n"
    )


def _snapshot_page(plan: _Plan, document: dict[str, Any], size: int) -> bytes:
    """The 0.7 `core/snapshot.html` page, trimmed of its inlined Bootstrap and jQuery."""
    canonical = document["canonical"]
    domain = document["domain"]
    archived = document["is_archived"]
    title = html.escape(plan.title or (document["base_url"] if archived else "Not yet archived..."))
    archive_url = quote(document["canonical"]["wget_path"] or (domain if archived else "")) or "about:blank"
    tags = [tag for tag in (document["tags_str"] or "").split(",") if tag]
    oldest = document["oldest_archive_date"]
    oldest_str = _minute(datetime.fromisoformat(oldest)) if oldest else ""
    url = html.escape(plan.url)
    sid = document["snapshot_id"]
    badges = "".join(
        f'                            <div class="badge badge-info" style="word-break: break-all;">'
        f"{html.escape(tag)}</div>\n"
        for tag in tags
    )
    status, status_color = ("archived", "success") if archived else ("not yet archived", "danger")
    size_str = _printable_filesize(size) if size else "pending"
    extension = document["extension"] or "html"
    updated_str = document["updated_date"] or ""
    preview = html.escape(str(canonical["singlefile_path"]))
    # Django renders a None path as "None": a static file whose wget failed links to ./None.
    cards = [
        _card(str(canonical["singlefile_path"]), "Chrome > SingleFile", "./singlefile.html"),
        _card(f"{canonical['pdf_path']}#toolbar=0", "Chrome > PDF", "./output.pdf"),
        _card(str(canonical["screenshot_path"]), "Chrome > Screenshot", "./screenshot.png", kind="img"),
        _card(archive_url, "Wget > HTML", f"./{domain}"),
        _card(canonical["archive_org_path"], "Archive.Org", "🌐 web.archive.org/web/..."),
        _card(plan.url, "Original", f"🌐 {domain}"),
        _card(canonical["headers_path"], "Headers", "./headers.json"),
        _card(str(canonical["dom_path"]), "Chrome > HTML", "./output.html"),
        _card(str(canonical["readability_path"]), "Readability", "./readability/content.html"),
        _card(str(canonical["mercury_path"]), "Mercury", "./mercury/content.html"),
        _card(canonical["media_path"], "Media", "./media/*.mp4"),
        _card(canonical["git_path"], "Git", "./git/*.git"),
    ]
    cards_html = "".join(cards)
    bookmarked = document["bookmarked_date"]
    page = f"""<!DOCTYPE html>
<html lang="en">
    <head>
        <title>{title}</title>
        <meta charset="utf-8" name="viewport" content="width=device-width, initial-scale=1">
        <style>
            html, body {{ width: 100%; height: 100%; background-color: #ddd; }}
            header {{ background-color: #aa1e55; }}
            .full-page-iframe {{ width: 100%; height: 69vh; border: 0px; border-top: 3px solid #aa1e55; }}
        </style>
    </head>
    <body>
        <header>
            <div class="header-top container-fluid">
                <div class="row nav">
                    <div class="col-lg-2" style="line-height: 50px; vertical-align: middle">
                        <a href="../../index.html" class="header-archivebox" title="Go to Main Index...">
                            <img src="../../static/archive.png" alt="Archive Icon">
                            ArchiveBox
                        </a>
                    </div>
                    <div class="col-lg-8">
                        <img src="favicon.ico" onerror="this.style.opacity=0" alt="Favicon">
                        &nbsp;&nbsp;
                        {title}
                        &nbsp;&nbsp;
                        <a href="#" class="header-toggle">▾</a>
                        <small>
                            <a href="{url}" class="header-url" title="{url}">
                                <code>{url}</code>
                            </a>
                        </small>
                    </div>
                </div>
            </div>
            <div class="header-bottom container-fluid">
                <div class="row header-bottom-info">
                    <div class="col-lg-4">
                        <div title="Date bookmarked or imported" class="info-chunk">
                            <h5>Added</h5>
                            {bookmarked}
                        </div>
                        <div title="Date first archived" class="info-chunk">
                            <h5>First Archived</h5>
                            {oldest_str}
                        </div>
                        <div title="Date last checked" class="info-chunk">
                            <h5>Last Checked</h5>
                            {updated_str}
                        </div>
                    </div>
                    <div class="col-lg-4">
                        <div class="info-chunk" style="max-width: 280px">
                            <h5>Tags <small title="Auto-guessed content type">({extension})</small></h5>
{badges}                        </div>
                        <div class="info-chunk">
                            <h5>Status</h5>
                            <div class="badge badge-{status_color}">{status}</div>
                        </div>
                        <div class="info-chunk"><h5>Saved</h5>✅&nbsp; {document["num_outputs"]}</div>
                        <div class="info-chunk"><h5>Errors</h5>❌&nbsp; {document["num_failures"]}</div>
                        <div class="info-chunk"><h5>Size</h5>{size_str}</div>
                    </div>
                    <div class="col-lg-4">
                        <div class="info-chunk">
                            <h5>🗃&nbsp; Snapshot: <a href="/admin/core/snapshot/{sid}/change/">
                                <code><b>[{plan.timestamp}]</b> <small>{sid[:23]}…</small></code></a></h5>
                            <a href="index.json" title="JSON summary of archived link.">JSON</a> |
                            <a href="warc/" title="Any WARC archives for the page">WARC</a> |
                            <a href="media/" title="Audio, Video, and Subtitle files.">Media</a> |
                            <a href="git/" title="Any git repos at the url">Git</a> |
                            <a href="/admin/core/snapshot/?id__startswith={sid}"
                               title="Go to the Snapshot admin">Actions</a> |
                            <a href="/admin/core/snapshot/{sid}/change/"
                               title="Edit this snapshot in the Admin UI">Admin</a> |
                            <a href="." title="Webserver-provided index of files directory.">
                                See all files...</a><br/>
                        </div>
                    </div>
                </div>
                <div class="row header-bottom-frames">
{cards_html}                </div>
            </div>
        </header>
        <iframe sandbox="allow-same-origin allow-scripts allow-forms" class="full-page-iframe"
                src="{preview}" name="preview"></iframe>
        <script>
            jQuery('.card a[target=preview]').on('click', function(e) {{
                window.location.hash = e.currentTarget.pathname; return true
            }})
        </script>
    </body>
</html>
"""
    return page.encode("utf-8")


# --------------------------------------------------------------------------- SQLite


def _index_name(table: str, columns: Sequence[str], suffix: str = "") -> str:
    """Django's _create_index_name (names_digest = md5 of table + columns, 8 hex chars)."""
    digest = hashlib.md5()
    for part in (table, *columns):
        digest.update(part.encode())
    return f"{table}_{'_'.join(columns)}_{digest.hexdigest()[:8]}{suffix}"


def _index_sql(table: str, column: str) -> str:
    return f'CREATE INDEX "{_index_name(table, (column,))}" ON "{table}" ("{column}")'


def _ddl() -> str:
    fk = "DEFERRABLE INITIALLY DEFERRED"
    statements = [
        'CREATE TABLE "django_migrations" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"app" varchar(255) NOT NULL, "name" varchar(255) NOT NULL, "applied" datetime NOT NULL)',
        'CREATE TABLE "django_content_type" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"app_label" varchar(100) NOT NULL, "model" varchar(100) NOT NULL)',
        f'CREATE UNIQUE INDEX "{_index_name("django_content_type", ("app_label", "model"), "_uniq")}" '
        'ON "django_content_type" ("app_label", "model")',
        'CREATE TABLE "auth_user" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"password" varchar(128) NOT NULL, "last_login" datetime NULL, "is_superuser" bool NOT NULL, '
        '"username" varchar(150) NOT NULL UNIQUE, "last_name" varchar(150) NOT NULL, '
        '"email" varchar(254) NOT NULL, "is_staff" bool NOT NULL, "is_active" bool NOT NULL, '
        '"date_joined" datetime NOT NULL, "first_name" varchar(150) NOT NULL)',
        'CREATE TABLE "django_session" ("session_key" varchar(40) NOT NULL PRIMARY KEY, '
        '"session_data" text NOT NULL, "expire_date" datetime NOT NULL)',
        _index_sql("django_session", "expire_date"),
        # core: column order as Django's table rebuilds leave it (altered column moves last).
        'CREATE TABLE "core_tag" ("name" varchar(100) NOT NULL UNIQUE, '
        '"slug" varchar(100) NOT NULL UNIQUE, "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT)',
        'CREATE TABLE "core_snapshot" ("id" char(32) NOT NULL PRIMARY KEY, '
        '"timestamp" varchar(32) NOT NULL UNIQUE, "title" varchar(512) NULL, "added" datetime NOT NULL, '
        '"updated" datetime NULL, "url" varchar(200) NOT NULL UNIQUE)',
        _index_sql("core_snapshot", "title"),
        _index_sql("core_snapshot", "added"),
        _index_sql("core_snapshot", "updated"),
        'CREATE TABLE "core_snapshot_tags" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        f'"snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id") {fk}, '
        f'"tag_id" integer NOT NULL REFERENCES "core_tag" ("id") {fk})',
        f'CREATE UNIQUE INDEX "{_index_name("core_snapshot_tags", ("snapshot_id", "tag_id"), "_uniq")}" '
        'ON "core_snapshot_tags" ("snapshot_id", "tag_id")',
        _index_sql("core_snapshot_tags", "snapshot_id"),
        _index_sql("core_snapshot_tags", "tag_id"),
        'CREATE TABLE "core_archiveresult" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"cmd" text NOT NULL CHECK ((JSON_VALID("cmd") OR "cmd" IS NULL)), "pwd" varchar(256) NOT NULL, '
        '"cmd_version" varchar(128) NULL, "status" varchar(16) NOT NULL, "output" varchar(1024) NOT NULL, '
        '"start_ts" datetime NOT NULL, "end_ts" datetime NOT NULL, '
        f'"snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id") {fk}, '
        '"uuid" char(32) NOT NULL, "extractor" varchar(32) NOT NULL)',
        _index_sql("core_archiveresult", "snapshot_id"),
        _index_sql("core_archiveresult", "start_ts"),
    ]
    return ";\n".join(statements) + ";\n"


def _migration_applied(app: str, name: str, installed: datetime) -> datetime:
    """When each migration ran: at the 0.4 install, then at each upgrade (0.5, 0.6, 0.6.3, 0.7)."""
    if app != "core" and name != "0012_alter_user_first_name_max_length":
        return installed
    number = int(name[:4]) if app == "core" else 20
    for last, when in ((4, installed), (7, _UPGRADES[0]), (20, _UPGRADES[1]), (21, _UPGRADES[2])):
        if number <= last:
            return when
    return _UPGRADES[3]


_UPGRADES = (
    datetime(2020, 11, 21, 14, 2, 9, 381000, tzinfo=UTC),  # 0.5.x
    datetime(2021, 4, 12, 8, 45, 1, 902113, tzinfo=UTC),  # 0.6.x
    datetime(2022, 10, 3, 19, 12, 44, 17090, tzinfo=UTC),  # 0.6.3
    datetime(2023, 11, 18, 22, 4, 51, 103422, tzinfo=UTC),  # 0.7.x
)


def _write_sqlite(path: Path, plans: list[_Plan]) -> None:
    indexed = sorted((plan for plan in plans if plan.in_sqlite), key=lambda plan: plan.added)
    installed = min(plan.added for plan in plans) - timedelta(minutes=47, microseconds=123457)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous = OFF")  # a fixture: no need to wait for the disk
        with conn:
            conn.executescript(_ddl())
            conn.executemany(
                'INSERT INTO "django_migrations" ("app", "name", "applied") VALUES (?, ?, ?)',
                [
                    (
                        app,
                        name,
                        django_datetime(
                            _migration_applied(app, name, installed) + timedelta(milliseconds=37 * number)
                        ),
                    )
                    for number, (app, name) in enumerate(_MIGRATIONS)
                ],
            )
            conn.executemany(
                'INSERT INTO "django_content_type" ("app_label", "model") VALUES (?, ?)',
                [
                    ("contenttypes", "contenttype"),
                    ("auth", "permission"),
                    ("auth", "group"),
                    ("auth", "user"),
                    ("admin", "logentry"),
                    ("sessions", "session"),
                    ("core", "snapshot"),
                    ("core", "tag"),
                    ("core", "archiveresult"),
                ],
            )
            tag_ids: dict[str, int] = {}
            for plan in indexed:
                for tag in plan.tags:
                    if tag not in tag_ids:
                        tag_ids[tag] = len(tag_ids) + 1
                        conn.execute(
                            'INSERT INTO "core_tag" ("name", "slug", "id") VALUES (?, ?, ?)',
                            (tag, slugify(tag), tag_ids[tag]),
                        )
                conn.execute(
                    'INSERT INTO "core_snapshot" ("id", "timestamp", "title", "added", "updated", "url") '
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        plan.snapshot_uuid.hex,
                        plan.timestamp,
                        plan.title,
                        django_datetime(plan.added),
                        django_datetime(plan.db_updated) if plan.db_updated else None,
                        plan.url,
                    ),
                )
                conn.executemany(
                    'INSERT INTO "core_snapshot_tags" ("snapshot_id", "tag_id") VALUES (?, ?)',
                    [(plan.snapshot_uuid.hex, tag_ids[tag]) for tag in plan.tags],
                )
            results = sorted(
                ((result, plan) for plan in indexed for result in plan.results),
                key=lambda pair: pair[0].start,
            )
            for row_id, (result, plan) in enumerate(results, start=1):
                result.row_id = row_id
                conn.execute(
                    'INSERT INTO "core_archiveresult" ("id", "cmd", "pwd", "cmd_version", "status", '
                    '"output", "start_ts", "end_ts", "snapshot_id", "uuid", "extractor") '
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row_id,
                        json.dumps(result.cmd),
                        result.pwd,
                        result.cmd_version,
                        result.status,
                        result.db_output,
                        django_datetime(result.start),
                        django_datetime(result.end),
                        plan.snapshot_uuid.hex,
                        result.uuid.hex,
                        result.extractor,
                    ),
                )
    finally:
        conn.close()


# --------------------------------------------------------------------------- top level


_CONFIG_HEADER = """# This is the config file for your ArchiveBox collection.
#
# You can add options here manually in INI format, or automatically by running:
#    archivebox config --set KEY=VALUE
#
# If you modify this file manually, make sure to update your archive after by running:
#    archivebox init
#
# A list of all possible config with documentation and examples can be found here:
#    https://github.com/ArchiveBox/ArchiveBox/wiki/Configuration

"""


def _write(path: Path, data: bytes, when: datetime | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if when is not None:
        stamp = when.timestamp()
        os.utime(path, (stamp, stamp))


def _write_top_level(root: Path, rng: random.Random, plans: list[_Plan]) -> None:
    secret = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)") for _ in range(50))
    config = (
        _CONFIG_HEADER
        + f"[SERVER_CONFIG]\nSECRET_KEY = {secret}\n\n[ARCHIVE_METHOD_OPTIONS]\nTIMEOUT = 60\n\n"
    )
    _write(root / "ArchiveBox.conf", config.encode())
    by_source: dict[str, list[_Plan]] = {}
    for plan in plans:
        by_source.setdefault(plan.source, []).append(plan)
    for source, members in sorted(by_source.items()):
        name = source.rsplit("/", 1)[-1]
        if members[0].batch in ("legacy", "bookmarks", "orphan"):
            lines = [
                "<!DOCTYPE NETSCAPE-Bookmark-file-1>",
                "<TITLE>Bookmarks</TITLE>",
                "<H1>Bookmarks</H1>",
                "<DL><p>",
            ]
            for plan in members:
                stamp = int(float(plan.timestamp))
                lines.append(
                    f'    <DT><A HREF="{html.escape(plan.url)}" ADD_DATE="{stamp}">'
                    f"{html.escape(plan.title or plan.url)}</A>"
                )
            lines.append("</DL><p>")
            text = "\n".join(lines) + "\n"
        else:
            text = "\n".join(plan.url for plan in members) + "\n"
        _write(root / "sources" / name, text.encode(), members[0].added)
    last = max(plan.db_updated or plan.added for plan in plans)
    log = (
        f"[{last.strftime('%Y-%m-%d %H:%M:%S')},512] django.request WARNING Not Found: /favicon.ico\n"
        f"[{last.strftime('%Y-%m-%d %H:%M:%S')},940] django.server ERROR "
        '"GET /archive/missing/ HTTP/1.1" 404 1337\n'
    )
    _write(root / "logs" / "errors.log", log.encode(), last)


def generate_archivebox07(
    root: Path,
    *,
    snapshots: int,
    seed: int = 0,
    files_per_snapshot: int = 50,
    with_sqlite: bool = True,
    write_index_json: bool = True,
    orphans: int = 0,
) -> Collection07:
    """Write an ArchiveBox 0.7.2 collection of `snapshots` folders under `root`; see the module doc.

    `write_index_json=False` leaves out every folder's index.json (SQLite and index.html only);
    `with_sqlite=False` leaves out index.sqlite3; `orphans` folders (at most about a quarter)
    repeat a live snapshot's URL at an older timestamp without a SQLite row.
    """
    if snapshots < 1:
        raise ValueError("snapshots must be at least 1")
    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "archive").mkdir(exist_ok=True)
    plans = _plan_snapshots(rng, snapshots, orphans)
    _archive_history(rng, plans)
    for plan in plans:
        _build_files(rng, plan, files_per_snapshot)
    if with_sqlite:
        _write_sqlite(root / SQLITE_NAME, plans)
    out: list[Snapshot07] = []
    for plan in plans:
        folder = root / "archive" / plan.timestamp
        for name, data in sorted(plan.files.items()):
            _write(folder / name, data, plan.mtime)
        for name in plan.empty_dirs:
            (folder / name).mkdir(parents=True, exist_ok=True)
        document = _index_document(plan)
        size = sum(len(data) for data in plan.files.values())
        names = sorted(plan.files)
        if write_index_json:
            text = json.dumps(document, indent=4, sort_keys=True)
            _write(folder / "index.json", text.encode("utf-8"), plan.mtime)
            names.append("index.json")
        _write(folder / "index.html", _snapshot_page(plan, document, size), plan.mtime)
        names.append("index.html")
        out.append(
            Snapshot07(
                timestamp=plan.timestamp,
                snapshot_id=str(plan.snapshot_uuid),
                url=plan.url,
                title=plan.title,
                added=plan.added,
                updated=plan.db_updated,
                tags=plan.tags,
                results=[
                    {
                        "id": result.row_id if with_sqlite and plan.in_sqlite else None,
                        "uuid": str(result.uuid),
                        "extractor": result.extractor,
                        "cmd": list(result.cmd),
                        "pwd": result.pwd,
                        "cmd_version": result.cmd_version,
                        "output": result.db_output,
                        "json_output": result.json_output,
                        "status": result.status,
                        "start_ts": result.start,
                        "end_ts": result.end,
                        "index_texts": result.index_texts,
                    }
                    for result in plan.results
                ],
                in_sqlite=plan.in_sqlite,
                files=tuple(sorted(names)),
                wget_path=plan.main_rel if "wget" in plan.present else None,
                empty_dirs=tuple(sorted(set(plan.empty_dirs))),
            )
        )
    _write_top_level(root, rng, plans)
    return Collection07(root=root, snapshots=out, write_index_json=write_index_json, with_sqlite=with_sqlite)
