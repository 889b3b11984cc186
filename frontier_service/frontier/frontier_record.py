"""One frontier line: `url|depth|priority|added_ts\\n`, or `url|depth|priority|added_ts|kind\\n`
for a URL queued as a page's asset (an image, a stylesheet ...).

Lines of documents carry no kind, so files written before kinds existed read as they did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from archive_pipelines.canonical_urls import decode_line_field, encode_line_field


class ResourceType(StrEnum):
    """What a URL is fetched for, as a browser's request destination says (coarser)."""

    DOCUMENT = "document"  # a page, a frame, a redirect target of one
    STYLESHEET = "stylesheet"
    SCRIPT = "script"
    IMAGE = "image"
    FONT = "font"
    MEDIA = "media"  # audio, video, text tracks
    OTHER = "other"  # manifests, embeds, fetch preloads ...


_KINDS = {kind.value.encode(): kind for kind in ResourceType}

# A canonical URL and its domain key and seen-filter fingerprint, as
# `canonical_urls.try_canonical_url_and_domain` returns them.
Found = tuple[str, str, bytes]
# A URL to queue: found, depth, and what it is for (a document when left out).
Queued = tuple[Found, int] | tuple[Found, int, ResourceType]


@dataclass(frozen=True, slots=True)
class FrontierRecord:
    """A URL waiting in a domain's frontier file."""

    url: str
    depth: int
    priority: float = 1.0
    added_at: int = 0
    kind: ResourceType = ResourceType.DOCUMENT


def kind_suffix(kind: ResourceType) -> str:
    """The line's optional last field, with its separator ("" for a document)."""
    return "" if kind is ResourceType.DOCUMENT else f"|{kind.value}"


class LineEnds(dict[int, str]):
    """Depth -> what follows a document's canonical URL on its line (`|depth|priority|added_at`
    and the newline), formatted once per depth for a batch of lines of one priority and time."""

    def __init__(self, priority: float, *, added_at: int) -> None:
        super().__init__()
        self.tail = f"|{priority:g}|{added_at}"

    def __missing__(self, depth: int) -> str:
        self[depth] = end = f"|{depth}{self.tail}\n"
        return end

    def of(self, entry: Queued) -> str:
        """The end of the line of a queued URL, an asset's kind included."""
        if len(entry) == 2:
            return self[entry[1]]
        return f"|{entry[1]}{self.tail}{kind_suffix(entry[2])}\n"


def format_line(url: str, depth: int, priority: float, *, added_at: int,
                kind: ResourceType = ResourceType.DOCUMENT) -> str:
    """The line for one URL; the URL field is percent-encoded so it cannot break the line."""
    return f"{encode_line_field(url)}|{depth}|{priority:g}|{added_at}{kind_suffix(kind)}\n"


def format_records(records: Iterable[FrontierRecord]) -> bytes:
    """Lines for many records, ready for one write."""
    return "".join(
        [format_line(r.url, r.depth, r.priority, added_at=r.added_at, kind=r.kind) for r in records]
    ).encode()


def parse_kind(field: bytes) -> ResourceType | None:
    """The kind a line's fifth field names; OTHER for a word this version does not know
    (a newer crawler's), None if the field is not a word at all (the line is corrupt)."""
    kind = _KINDS.get(field)
    if kind is not None:
        return kind
    return ResourceType.OTHER if field.isalpha() and field.isascii() else None


def parse_line(line: bytes) -> FrontierRecord | None:
    """The record on a line (without its newline), or None if the line is blank or corrupt."""
    kind = ResourceType.DOCUMENT
    head, _, last = line.rpartition(b"|")
    if last[:1].isalpha():  # numbers end a document's line; a word is an asset's kind
        found = parse_kind(last)
        if found is None:
            return None
        kind, line = found, head
    parts = line.rsplit(b"|", 3)
    if len(parts) != 4:
        return None
    try:
        url = decode_line_field(parts[0].decode())
        return FrontierRecord(url, int(parts[1]), float(parts[2]), int(parts[3]), kind)
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return None
