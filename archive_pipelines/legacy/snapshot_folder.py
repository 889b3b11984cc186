"""Which extractor wrote each file of a legacy snapshot folder, and a walk of the folder.

A folder keeps its layout: adoption stores every file at its own path (`index.html`,
`screenshot.png`, `readability/content.html`, the wget `<host>/...` tree), so the snapshot's
relative links keep working. The extractor is catalog metadata, read off the path: canonical
file names (`output.pdf` -> pdf), canonical folders (`warc/`, `media/`, `readability/`),
wget's host folders, the index files (`index.json`, `index.html` -> `index`); anything else
is `unknown`. Folders organized by an earlier version of this project (`<extractor>/...`)
classify the same way.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

INDEX = "index"  # the extractor of the index files (index.json, index.html)
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
# Top-level folder names of a folder an earlier version of this project organized.
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


class FolderFile(NamedTuple):
    """One regular file of a folder: its path, the extractor that wrote it, its size (None
    when the walk was not asked for sizes). A tuple: made per file of every walk."""

    rel_path: str
    extractor: str
    size: int | None
    odd_name: bool = False  # not valid UTF-8 (surrogate-escaped) or has control characters


class FolderLink(NamedTuple):
    """A symlink inside a folder: its path and its target, verbatim (never followed)."""

    rel_path: str
    target: str

    @property
    def inside(self) -> bool:
        """True when the target, read relative to the link's folder, stays in the folder."""
        return link_stays_inside(self.rel_path, self.target)


class FolderDir(NamedTuple):
    """An empty folder inside a folder (an extractor's output folder left empty)."""

    rel_path: str


@dataclass(frozen=True)
class SkippedEntry:
    """Something that is not a regular file, folder or symlink, or could not be read."""

    rel_path: str
    reason: str


def link_stays_inside(rel_path: str, target: str) -> bool:
    """True when a symlink at `rel_path` with `target` points inside its snapshot folder
    (relative, and `..` never climbs out of the folder): recreated in the views as is."""
    if not target or target.startswith("/") or "\x00" in target:
        return False
    depth = rel_path.count("/")  # folders between the snapshot folder and the link
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return depth >= 0


def looks_like_host(name: str, url_host: str | None = None) -> bool:
    """True for a folder name wget would create for a host (`www.example.com`, `1.2.3.4:8080`)."""
    lowered = name.lower()
    if url_host and url_host in (lowered, lowered.rsplit(":", 1)[0]):
        return True
    if _IPV4_RE.fullmatch(lowered):
        return True
    tld = lowered.rsplit(":", 1)[0].rsplit(".", 1)[-1]
    return tld not in _NOT_TLDS and _HOST_RE.fullmatch(lowered) is not None


def extractor_of(parts: Sequence[str], url_host: str | None = None) -> str:
    """The extractor that wrote the regular file at `parts` (path components in the folder)."""
    top = parts[0]
    if len(parts) == 1:
        if top in INDEX_FILES:
            return INDEX
        return CANONICAL_FILES.get(top, UNKNOWN)
    if top in CANONICAL_DIRS:
        return CANONICAL_DIRS[top]
    if top in EXTRACTOR_DIRS and top != UNKNOWN:
        return top  # a folder an earlier version of this project organized
    if looks_like_host(top, url_host):
        return WGET
    return UNKNOWN


def is_odd_name(rel: str) -> bool:
    """True if `rel` is not valid UTF-8 on disk or holds control characters."""
    # Undecodable bytes come back from os.fsdecode as lone surrogates, which UTF-8 cannot
    # encode: one regex search finds both (an encode and a loop per character cost more).
    return _ODD_CHARACTER.search(rel) is not None


_ODD_CHARACTER = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def display_path(rel: str) -> str:
    """`rel` printable: undecodable bytes shown as `\\xNN`."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def iter_folder(folder: Path, url: str | None = None, *, sizes: bool = True
                ) -> Iterator[FolderFile | FolderLink | FolderDir | SkippedEntry]:
    """Walk `folder` with os.scandir, depth first, never following a symlink; wget host
    folders are matched against `url`'s host. Empty folders below `folder` are yielded too
    (pages link to them: `./media/`).

    `sizes=False`: FolderFile.size is None, and the walk needs no stat per entry where the
    filesystem reports entry types (the migration stats each file anyway)."""
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
        if not entries and parts:
            yield FolderDir("/".join(parts))
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
                if stat.S_ISLNK(mode):
                    yield FolderLink(rel, os.readlink(entry.path))
                    continue
            except OSError as exc:
                yield SkippedEntry(rel, f"vanished or unreadable: {exc.strerror or exc}")
                continue
            if stat.S_ISDIR(mode):
                subdirs.append(entry_parts)
            elif stat.S_ISREG(mode):
                yield FolderFile(rel, extractor_of(entry_parts, url_host), size,
                                 odd_name=is_odd_name(rel))
            else:
                yield SkippedEntry(rel, _kind(mode) + ", not followed or copied")
        stack.extend(reversed(subdirs))


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
