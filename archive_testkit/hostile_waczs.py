"""Hostile WACZ files for the import, each with what importing it must give.

A WACZ is a ZIP an import opens from anyone: its `datapackage.json` digests may not match
its WARCs, its member names may leave the folder it is unpacked into (`../evil.warc.gz`,
`/abs/path.warc.gz`, `archive/../../x`), and a member may declare an uncompressed size far
beyond what an import should ever inflate. The valid WACZ they start from is written by our
own exporter's `write_wacz`, around a WARC with revisits (`revisit_warcs`).
"""

from __future__ import annotations

import hashlib
import json
import struct
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.warc.cdxj import IndexEntry, cdxj_line, cdxj_timestamp, record_mime, sort_cdxj
from archive_pipelines.warc.wacz import PageEntry, write_wacz
from archive_testkit.hostile_records import GoodRecord
from archive_testkit.revisit_warcs import WrittenRecord, write_revisit_warc

ESCAPING_NAMES = ("../evil.warc.gz", "/abs/path.warc.gz", "archive/../../x")
HUGE_DECLARED_SIZE = 0xFFFF_FFF0  # 4 GiB - 16: the largest a plain (non-ZIP64) header can say
_CREATED = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
_GZIP_MTIME = 4  # offset of MTIME in a gzip member's header: readers ignore it


@dataclass(frozen=True)
class HostileWacz:
    """A hostile WACZ: what must be reported (the members at fault) and what must still be imported.

    `good` are the responses of `good_member` (offsets inside that WARC) an import must store.
    """

    path: Path
    problem: str
    bad_members: tuple[str, ...]
    good_member: str | None
    good: tuple[GoodRecord, ...]


@dataclass(frozen=True)
class ValidWacz:
    """A valid WACZ, the name of the WARC inside and that WARC's responses and revisits."""

    path: Path
    warc_member: str
    records: tuple[WrittenRecord, ...]

    def warc_bytes(self) -> bytes:
        with zipfile.ZipFile(self.path) as archive:
            return archive.read(self.warc_member)


def valid_wacz(path: Path) -> ValidWacz:
    """A WACZ written by `write_wacz` around a revisit WARC (its parts in a temporary folder)."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        warc = write_revisit_warc(work / "revisits.warc.gz")
        unsorted, index = work / "unsorted.cdxj", work / "index.cdxj"
        unsorted.write_text("".join(line + "\n" for line in _index_lines(warc.path)))
        sort_cdxj(unsorted, index)
        pages = [PageEntry(url=r.url, ts=_parse_date(r.date)) for r in warc.records if r.kind == "response"]
        write_wacz(path, warcs=[warc.path], index=index, pages=pages, title="hostile",
                   software="archive_testkit", created=_CREATED)
    return ValidWacz(path, f"archive/{warc.path.name}", warc.records)


def wacz_with_wrong_digest(path: Path) -> HostileWacz:
    """A WACZ whose WARC no longer has the sha256 datapackage.json lists for it.

    One byte changes: the MTIME of the WARC's first gzip member, which every reader ignores,
    so the WARC itself stays valid and only the datapackage digest check can find it.
    """
    with tempfile.TemporaryDirectory() as folder:
        source = valid_wacz(Path(folder) / "valid.wacz")
        member = source.warc_member
        _copy_altering(source.path, path, member=member)
    return HostileWacz(path, "datapackage digest mismatch", (member,), member, _goods(source.records))


def _copy_altering(source: Path, path: Path, *, member: str) -> None:
    """Copy the zip `source` to `path`, every entry alike but `member` with its gzip MTIME byte flipped."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w") as altered:
        for info in original.infolist():
            data = original.read(info)
            if info.filename == member:
                data = data[:_GZIP_MTIME] + bytes([data[_GZIP_MTIME] ^ 0xFF]) + data[_GZIP_MTIME + 1:]
            altered.writestr(info, data)


def wacz_with_escaping_paths(path: Path) -> HostileWacz:
    """A WACZ holding a good WARC and WARCs whose member names leave the folder (`ESCAPING_NAMES`).

    The datapackage lists every member with its right digest, so only the names are wrong.
    """
    member, data, records = _valid_warc()
    _write_package(path, {member: data, **dict.fromkeys(ESCAPING_NAMES, data)})
    return HostileWacz(path, "member path leaves the WACZ", ESCAPING_NAMES, member, _goods(records))


def wacz_with_huge_member(path: Path) -> HostileWacz:
    """A WACZ beside a good WARC holding `archive/huge.warc.gz`, whose headers declare ~4 GiB uncompressed.

    Its real content is 64 KiB of zeros deflated (64 bytes or so); both its local header and
    the central directory say `HUGE_DECLARED_SIZE`, as a bomb's would.
    """
    (member, data, records), huge = _valid_warc(), "archive/huge.warc.gz"
    _write_package(path, {member: data, huge: bytes(64 * 1024)})
    _declare_size(path, huge, HUGE_DECLARED_SIZE)
    return HostileWacz(path, "member declares a huge uncompressed size", (huge,), member, _goods(records))


def _valid_warc() -> tuple[str, bytes, tuple[WrittenRecord, ...]]:
    """The WARC of a valid WACZ: its member name, its bytes, its records (the good member of others)."""
    with tempfile.TemporaryDirectory() as folder:
        source = valid_wacz(Path(folder) / "valid.wacz")
        return source.warc_member, source.warc_bytes(), source.records


def _write_package(path: Path, members: dict[str, bytes]) -> None:
    """A WACZ-shaped zip: the members (deflated), datapackage.json with their right digests, its digest."""
    resources = [{"name": f"file-{n}", "path": name, "hash": "sha256:" + hashlib.sha256(data).hexdigest(),
                  "bytes": len(data)} for n, (name, data) in enumerate(members.items())]
    package = json.dumps({"profile": "data-package", "resources": resources,
                          "wacz_version": "1.1.1"}).encode()
    digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(package).hexdigest()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 6, 1, 12, 0, 0)), data,
                             compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("datapackage.json", package)
        archive.writestr("datapackage-digest.json", json.dumps(digest))


def _declare_size(path: Path, member: str, size: int) -> None:
    """Patch `member`'s uncompressed size in its local header and its central directory entry."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    data = bytearray(path.read_bytes())
    local = info.header_offset
    assert data[local:local + 4] == b"PK\x03\x04"
    struct.pack_into("<I", data, local + 22, size)  # local header: uncompressed size at 22
    central = struct.unpack_from("<I", data, data.rindex(b"PK\x05\x06") + 16)[0]  # end record: CD offset
    while struct.unpack_from("<I", data, central + 42)[0] != local:  # the entry of this local header
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, central + 28)
        central += 46 + name_len + extra_len + comment_len
    struct.pack_into("<I", data, central + 24, size)  # central directory: uncompressed size at 24
    path.write_bytes(bytes(data))


def _index_lines(warc: Path) -> list[str]:
    lines = []
    with warc.open("rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            http = record.http_headers
            mime = record_mime(record.rec_type, http.get_header("Content-Type") if http else None)
            url = record.rec_headers.get_header("WARC-Target-URI")
            date = _parse_date(record.rec_headers.get_header("WARC-Date"))
            digest = record.rec_headers.get_header("WARC-Payload-Digest")
            status = int(http.get_statuscode()) if http else None
            records.read_to_end()
            lines.append(cdxj_line(IndexEntry(url, cdxj_timestamp(date), mime, status, digest,
                                              records.get_record_length(), records.get_record_offset(),
                                              warc.name)))
    return lines


def _goods(records: tuple[WrittenRecord, ...]) -> tuple[GoodRecord, ...]:
    return tuple(GoodRecord(r.url, r.offset, r.payload_sha256) for r in records if r.kind == "response")


def _parse_date(warc_date: str) -> datetime:
    return datetime.strptime(warc_date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
