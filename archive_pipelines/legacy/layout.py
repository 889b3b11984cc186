"""Which extractor wrote each file of a flat legacy snapshot folder, and where it goes organized.

Organized layout: `<extractor>/<name>` for canonical files, directories kept (`warc/...`),
wget's host folders under `wget/`, metadata (`index.json`, `index.html`) and unknown files
where they are. Classifying an organized folder again yields no-op moves, so an interrupted
`organize` step can be planned again.

Top-level files are stored as extractor `index` (`index/index.json`, `index/notes.txt`), so
a top-level *folder* named `index` (wget saving a path `index/`) would share their names: it
moves to `unknown/index/...` instead, like a flat file named after an extractor folder moves
under `unknown/`. Nothing else is ever stored under `index`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from archive_pipelines.legacy.index_json import LegacyIndex

INDEX = "index"  # the extractor of an organized folder's top-level files
UNKNOWN = "unknown"
WGET = "wget"

CANONICAL_FILES: Mapping[str, str] = {
    "output.html": "dom",
    "singlefile.html": "singlefile",
    "screenshot.png": "screenshot",
    "screenshot.jpg": "screenshot",
    "screenshot.jpeg": "screenshot",
    "output.pdf": "pdf",
    "htmltotext.txt": "htmltotext",
    "headers.json": "headers",
    "favicon.ico": "favicon",
    "archive.org.txt": "archive_org",
}
CANONICAL_DIRS: Mapping[str, str] = {
    name: name for name in ("warc", "media", "git", "readability", "mercury", WGET)
}
INDEX_FILES = frozenset({"index.json", "index.html"})
# Top-level names an organized folder uses; a flat *file* with such a name moves under unknown/.
EXTRACTOR_DIRS = frozenset({*CANONICAL_FILES.values(), *CANONICAL_DIRS.values(), UNKNOWN})

_HOST_RE = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})"
    r"(?::\d{1,5})?"
)
_IPV4_RE = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?")
# File extensions that are not top-level domains: `output.html/` is not a host folder.
_NOT_TLDS = frozenset(
    {
        "html",
        "htm",
        "xhtml",
        "php",
        "asp",
        "aspx",
        "jsp",
        "txt",
        "json",
        "png",
        "jpg",
        "jpeg",
        "gif",
        "webp",
        "svg",
        "pdf",
        "js",
        "css",
        "ico",
        "gz",
        "tgz",
        "bz2",
        "xz",
        "zst",
        "xml",
        "warc",
        "mp4",
        "webm",
        "mp3",
        "ogg",
        "wav",
        "tmp",
        "bak",
        "log",
        "csv",
        "tsv",
        "sqlite3",
        "db",
    }
)


class FileMove(NamedTuple):
    """One regular file: its path now, its extractor, its path in the organized layout (a
    tuple: made per file of every walk)."""

    src_rel: str
    extractor: str
    dst_rel: str
    size: int | None  # None when iter_organize was not asked for sizes
    odd_name: bool = False  # not valid UTF-8 (surrogate-escaped) or has control characters

    @property
    def is_noop(self) -> bool:
        return self.src_rel == self.dst_rel


@dataclass(frozen=True)
class SkippedEntry:
    """Something that is not a regular file or directory, or could not be read; left alone."""

    rel_path: str
    reason: str


@dataclass
class OrganizePlan:
    """Everything `organize` would do to one folder, and what it leaves alone."""

    folder: Path
    moves: list[FileMove] = field(default_factory=list)
    skipped: list[SkippedEntry] = field(default_factory=list)

    @property
    def odd_names(self) -> list[str]:
        return [move.src_rel for move in self.moves if move.odd_name]

    @property
    def total_bytes(self) -> int:
        return sum(move.size or 0 for move in self.moves)

    def shared_destinations(self) -> dict[str, list[str]]:
        """Destinations claimed by several sources (a half-finished organize: both copies)."""
        sources: dict[str, list[str]] = {}
        for move in self.moves:
            sources.setdefault(move.dst_rel, []).append(move.src_rel)
        return {dst: srcs for dst, srcs in sources.items() if len(srcs) > 1}


def looks_like_host(name: str, url_host: str | None = None) -> bool:
    """True for a folder name wget would create for a host (`www.example.com`, `1.2.3.4:8080`)."""
    lowered = name.lower()
    if url_host and url_host in (lowered, lowered.rsplit(":", 1)[0]):
        return True
    if _IPV4_RE.fullmatch(lowered):
        return True
    tld = lowered.rsplit(":", 1)[0].rsplit(".", 1)[-1]
    return tld not in _NOT_TLDS and _HOST_RE.fullmatch(lowered) is not None


def classify(parts: Sequence[str], url_host: str | None = None) -> tuple[str, str]:
    """`(extractor, dst_rel)` for a regular file at `parts` (path components in the folder)."""
    rel = "/".join(parts)
    top = parts[0]
    if len(parts) == 1:
        if top in INDEX_FILES:
            return INDEX, rel
        if top in CANONICAL_FILES:
            return CANONICAL_FILES[top], f"{CANONICAL_FILES[top]}/{top}"
        if top in EXTRACTOR_DIRS:
            return UNKNOWN, f"{UNKNOWN}/{top}"
        return UNKNOWN, rel
    if top in CANONICAL_DIRS:
        return CANONICAL_DIRS[top], rel
    if top == INDEX:  # the top-level files' extractor: not a folder of its own
        return UNKNOWN, f"{UNKNOWN}/{rel}"
    if top in EXTRACTOR_DIRS:
        return top, rel
    if looks_like_host(top, url_host):
        return WGET, f"{WGET}/{rel}"
    return UNKNOWN, rel


def is_odd_name(rel: str) -> bool:
    """True if `rel` is not valid UTF-8 on disk or holds control characters."""
    # Undecodable bytes come back from os.fsdecode as lone surrogates, which UTF-8 cannot
    # encode: one regex search finds both (an encode and a loop per character cost more).
    return _ODD_CHARACTER.search(rel) is not None


_ODD_CHARACTER = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def display_path(rel: str) -> str:
    """`rel` printable: undecodable bytes shown as `\\xNN`."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def iter_organize(folder: Path, url: str | None = None, *, sizes: bool = True
                  ) -> Iterator[FileMove | SkippedEntry]:
    """Walk `folder` with os.scandir, depth first, never following a symlink.

    `sizes=False`: FileMove.size is None, and the walk needs no stat per entry where the
    filesystem reports entry types (the migration's `to_cas` stats each file anyway)."""
    try:
        info = folder.lstat()
    except OSError as exc:
        yield SkippedEntry(".", f"unreadable: {exc.strerror or exc}")
        return
    if not stat.S_ISDIR(info.st_mode):
        yield SkippedEntry(".", _kind(info.st_mode) + " (snapshot folder itself)")
        return
    try:
        url_host = urlsplit(url).hostname if url else None
    except ValueError:
        url_host = None
    stack: list[tuple[str, ...]] = [()]
    while stack:
        parts = stack.pop()
        try:
            with os.scandir(os.path.join(folder, *parts)) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            yield SkippedEntry("/".join(parts) or ".", f"unreadable: {exc.strerror or exc}")
            continue
        subdirs: list[tuple[str, ...]] = []
        for entry in entries:
            entry_parts = (*parts, entry.name)
            rel = "/".join(entry_parts)
            size: int | None = None
            try:
                if not sizes and entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry_parts)
                    continue
                if sizes or not entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    mode, size = info.st_mode, info.st_size
                else:
                    mode = stat.S_IFREG
            except OSError as exc:
                yield SkippedEntry(rel, f"vanished or unreadable: {exc.strerror or exc}")
                continue
            if stat.S_ISDIR(mode):
                subdirs.append(entry_parts)
            elif stat.S_ISREG(mode):
                extractor, dst = classify(entry_parts, url_host)
                yield FileMove(rel, extractor, dst, size, odd_name=is_odd_name(rel))
            else:
                yield SkippedEntry(rel, _kind(mode) + ", not followed or copied")
        stack.extend(reversed(subdirs))


def plan_organize(folder: Path, index: LegacyIndex | None = None) -> OrganizePlan:
    """The moves that organize a flat snapshot folder; wget folders matched to `index.url`."""
    plan = OrganizePlan(folder)
    for item in iter_organize(folder, index.url if index else None):
        if isinstance(item, FileMove):
            plan.moves.append(item)
        else:
            plan.skipped.append(item)
    return plan


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISREG(mode):
        return "regular file"
    return "special file"
