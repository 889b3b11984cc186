"""Where a snapshot file appears in each view: pure functions of catalog fields."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from urllib.parse import urlsplit

from archive_pipelines.archive_error import ArchiveError

MAX_RELATIVE_PATH_BYTES = 1024
MAX_NAME_BYTES = 255
_UNSAFE_SEGMENT = re.compile(r"[^A-Za-z0-9._@+-]")


class UnsafePathError(ArchiveError):
    """A relative path that would leave its snapshot's folder, or cannot be stored."""


@dataclass(frozen=True)
class SnapshotPlace:
    """The catalog fields a view path is made of."""

    snapshot_id: str
    url: str
    timestamp: str
    created_at: datetime
    created_by: str
    # by_timestamp/<timestamp> belongs to the oldest snapshot with that timestamp;
    # the others get by_timestamp/<timestamp>__<id8> (a documented, deterministic choice).
    owns_timestamp: bool = True

    @cached_property
    def domain(self) -> str:
        return domain_of(self.url)

    @cached_property
    def day(self) -> str:
        return self.created_at.astimezone(UTC).strftime("%Y%m%d")

    @property
    def timestamp_dir(self) -> str:
        ts = safe_segment(self.timestamp, fallback="unknown")
        return ts if self.owns_timestamp else f"{ts}__{self.snapshot_id[:8]}"


def domain_of(url: str) -> str:
    """The URL's host, IDN as punycode, lowercase; `unknown` when it has none."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        host = None
    if not host:
        return "unknown"
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        host = host.encode("ascii", "backslashreplace").decode("ascii")
    return safe_segment(host.lower().rstrip("."), fallback="unknown")


def safe_segment(value: str, *, fallback: str) -> str:
    """One path segment from untrusted text: no separators, no dot-names, bounded length."""
    cleaned = _UNSAFE_SEGMENT.sub("_", value.strip())[:MAX_NAME_BYTES]
    if cleaned in ("", ".", ".."):
        return fallback
    return cleaned


def validate_relative_path(relative_path: str) -> str:
    """The path, normalized to '/' separators, or UnsafePathError saying why it is refused."""
    if not relative_path:
        raise UnsafePathError("relative path is empty")
    if "\x00" in relative_path:
        raise UnsafePathError(f"relative path {relative_path!r} contains NUL")
    if relative_path.startswith(("/", "\\")) or (len(relative_path) > 1 and relative_path[1] == ":"):
        raise UnsafePathError(f"relative path {relative_path!r} is absolute")
    try:
        encoded = relative_path.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafePathError(
            f"relative path {relative_path!r} is not valid UTF-8 (left in place, not ingested)"
        ) from None
    if len(encoded) > MAX_RELATIVE_PATH_BYTES:
        raise UnsafePathError(f"relative path is longer than {MAX_RELATIVE_PATH_BYTES} bytes")
    parts = relative_path.replace("\\", "/").split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafePathError(f"relative path {relative_path!r} leaves its folder or has "
                                  "an empty segment")
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise UnsafePathError(f"relative path {relative_path!r} has a name over 255 bytes")
    return "/".join(parts)


def validate_extractor(extractor: str) -> str:
    if not extractor or safe_segment(extractor, fallback="") != extractor:
        raise UnsafePathError(f"extractor name {extractor!r} must be [A-Za-z0-9._@+-]+")
    return extractor


def view_dir(view: str, place: SnapshotPlace) -> str:
    """The snapshot's folder in one view, relative to archive/ ('/'-separated)."""
    sid = place.snapshot_id
    if view == "by_domain":
        return f"by_domain/{place.domain}/{place.day}/{sid}"
    if view == "by_date":
        return f"by_date/{place.day}/{place.domain}/{sid}"
    if view == "by_user":
        user = safe_segment(place.created_by, fallback="unknown")
        return f"by_user/{user}/{place.day}/{place.domain}/{sid}"
    if view == "by_timestamp":
        return f"by_timestamp/{place.timestamp_dir}"
    raise ValueError(f"unknown view {view!r}")


def compat_link_target(timestamp: str) -> str:
    """What `archive/<timestamp>` links to once its folder is in the store (archive/-relative).

    `by_timestamp/<timestamp>`, the folder of the timestamp's owner (its oldest snapshot),
    whichever snapshot the legacy folder held: the target depends on the timestamp alone, so
    a non-owner's migration writes the very link the owner's would (never another one), and
    the link stays valid when ownership passes to another snapshot. A non-owner's files are
    at `by_timestamp/<timestamp>__<id8>` (`SnapshotPlace.timestamp_dir`). Only when
    `merge_duplicates` deletes the last snapshot with the timestamp does the link move, to
    the keeper's folder.
    """
    return f"by_timestamp/{safe_segment(timestamp, fallback='unknown')}"


def view_path(view: str, place: SnapshotPlace, relative_path: str) -> str:
    """archive/-relative path of one file in one view (relative_path already validated).

    `relative_path` is the file's path inside its snapshot folder as the snapshot had it,
    so every view shows the folder's own layout (its relative links keep working). In the
    file view this is the file's own link; in the others the path goes through the
    snapshot's folder link (see `file_view`)."""
    return f"{view_dir(view, place)}/{relative_path}"


# The order in which an enabled view is chosen to hold the per-file links.
FILE_VIEW_ORDER = ("by_timestamp", "by_domain", "by_date", "by_user")


def file_view(views: Sequence[str]) -> str | None:
    """The one enabled view whose snapshot folders hold a link per file.

    Every other view gets one link per snapshot, `<its snapshot folder>` -> the file view's
    snapshot folder, so a file still appears in all four views while ingest creates one
    link (and one set of folders) per file instead of four. The file view is by_timestamp
    when enabled (snapshot folders there are unique), else the first enabled view in
    FILE_VIEW_ORDER; None when no view is enabled.
    """
    return next((view for view in FILE_VIEW_ORDER if view in views), None)


def folder_links(home: str, views: Iterable[str], place: SnapshotPlace) -> list[tuple[str, str]]:
    """The snapshot's folder links in `views` (the file view `home` itself excluded) as
    (archive/-relative link path, relative target in `home`)."""
    target = view_dir(home, place)
    links = []
    for view in views:
        if view != home:
            link = view_dir(view, place)
            links.append((link, "../" * link.count("/") + target))
    return links


# Each view root holds an anchor symlink `.s` -> the primary store's short-name index, so
# file links stay under 60 bytes. ext4 stores such "fast symlinks" inside the inode; a
# longer target costs a 4 KiB data block per link and is 20-100x slower to create and
# remove (measured in bench/RESULTS.md). A full `../../cas/sha256/ab/cd/<64 hex>` target
# never fits. The alias's extension (`alias_extension`, at most six bytes) keeps a link up to
# six folders below its by_timestamp snapshot folder under 60 bytes.
ANCHOR = ".s"
ALIAS_DIR = "s"


def blob_alias(sha256: str, ext: str = "") -> str:
    """The blob's short name in the store's alias index: `xy/<26 base32 chars><ext>`.

    128 bits of the SHA-256 (RFC 4648 base32, lowercase: safe on case-insensitive
    filesystems); the alias is a hard link of the full-hash file, so content is identical by
    construction. Ten bits at a time through a table (base64.b32encode is pure Python and
    took twice as long; this runs for every file an ingest links). `ext` (`alias_extension`:
    "" or e.g. ".html") names the alias a link of that extension points at.
    """
    bits = int(sha256[:32], 16) << 2  # 130 bits: 26 characters, as b32encode pads
    name = "".join([_BASE32_PAIRS[(bits >> shift) & 1023] for shift in range(120, -1, -10)])
    return f"{name[:2]}/{name}{ext}"


_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_BASE32_PAIRS = [a + b for a in _BASE32 for b in _BASE32]

# The extensions a browser opening a `file://` path tells the file's type by (Chromium's
# own table, its common entries). A browser reads the extension of the path with symlinks
# resolved, that is of the alias, so a file link whose name ends in one of these points at
# an alias with the same extension: `index.html` opens as a page, not as its source. Any
# other name (no extension, `.php`, `.html@query`) gets the plain alias: the browser sniffs
# it either way. Fixed and short, so every alias a blob can have is known (gc removes them
# all). Ordered by how often archived pages use them.
ALIAS_EXTENSIONS = (
    ".html", ".js", ".css", ".png", ".jpg", ".gif", ".svg", ".json", ".htm", ".txt",
    ".webp", ".ico", ".xml", ".pdf", ".jpeg", ".mjs", ".avif", ".bmp", ".tif", ".tiff",
    ".shtml", ".xhtml", ".xht", ".mht", ".mhtml", ".csv", ".rss", ".xsl", ".xslt",
    ".mp4", ".m4v", ".webm", ".ogv", ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".wav",
    ".flac", ".wasm", ".woff", ".woff2", ".ttf", ".otf", ".vtt", ".zip", ".gz", ".tgz",
)
_ALIAS_EXTENSIONS = frozenset(ALIAS_EXTENSIONS)


def alias_extension(name: str) -> str:
    """The extension (lowercase, with its dot) that the alias of a file link named `name`
    (a file name or a path) carries: one of `ALIAS_EXTENSIONS`, or ""."""
    dot = name.rfind(".")
    if dot <= name.rfind("/") + 1:  # no dot in the last segment, or a dot-file's leading dot
        return ""
    ext = name[dot:].lower()
    return ext if ext in _ALIAS_EXTENSIONS else ""


# The alias extension of a file whose name has none a browser reads, by its content type
# (crawled pages: `/about` is saved as `about`, as wget does, and served as text/html).
_TYPE_EXTENSIONS = {
    "text/html": ".html", "application/xhtml+xml": ".xhtml", "text/css": ".css",
    "text/javascript": ".js", "application/javascript": ".js",
    "application/x-javascript": ".js", "application/json": ".json", "text/plain": ".txt",
    "text/xml": ".xml", "application/xml": ".xml", "application/rss+xml": ".rss",
    "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/svg+xml": ".svg",
    "image/webp": ".webp", "image/avif": ".avif", "image/x-icon": ".ico",
    "image/vnd.microsoft.icon": ".ico", "application/pdf": ".pdf", "video/mp4": ".mp4",
    "audio/mpeg": ".mp3", "font/woff": ".woff", "font/woff2": ".woff2",
}


def typed_alias_extension(name: str, content_type: str | None) -> str:
    """`alias_extension(name)`, or when the name has none a browser reads, the extension
    of `content_type` (a Content-Type header: parameters and case ignored), or ""."""
    ext = alias_extension(name)
    if ext or not content_type:
        return ext
    return _TYPE_EXTENSIONS.get(content_type.partition(";")[0].strip().lower(), "")


def link_target(link_rel: str, sha256: str, ext: str | None = None) -> str:
    """Relative symlink target from archive/<link_rel> to the blob, via its view's anchor:
    the alias with extension `ext`, by default the link name's (`alias_extension`)."""
    if ext is None:
        ext = alias_extension(link_rel)
    return "../" * (link_rel.count("/") - 1) + f"{ANCHOR}/{blob_alias(sha256, ext)}"
