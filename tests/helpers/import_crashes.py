"""The import crash tests' input: a WARC (one gzip member per record) whose records span many
small batches — distinct bodies, bodies repeated as full responses and as revisits (with
Refers-To headers, and with a payload digest only, as wget writes them), request, metadata
and warcinfo records — and a WACZ around it, written by our exporter's `write_wacz`."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_pipelines.catalog.models import Blob, BlobCopy, CrawlSegment, CrawlSession, PageFetch, Store
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.warc.cdxj import IndexEntry, cdxj_line, cdxj_timestamp, record_mime, sort_cdxj
from archive_pipelines.warc.wacz import PageEntry, write_wacz
from archive_testkit.revisit_warcs import sha1_base32

START = datetime(2023, 3, 4, 5, 6, 7, tzinfo=UTC)
SITE = "http://import-crash.test"
STYLE = b"body { color: #333 }\n" * 40  # served at many URLs: one blob, many references
LOGO = bytes(range(256)) * 8
PAGES = 56


def _date(i: int) -> str:
    return (START + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _page(i: int) -> bytes:
    return (f"<!DOCTYPE html><html><head><title>page {i}</title></head>"
            f"<body>{'text ' * (20 + i)}{i}</body></html>\n").encode()


def write_crash_warc(path: Path) -> dict[str, int]:
    """Write the WARC (see the module docstring); the count of each record type written."""
    counts: dict[str, int] = {}
    first: dict[bytes, tuple[str, str]] = {}  # body -> (URI, date) of its first response
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="1.1")

        def write(kind: str, record: ArcWarcRecord) -> None:
            writer.write_record(record)
            record.raw_stream.close()  # warcio's buffer for a record made without a length
            counts[kind] = counts.get(kind, 0) + 1

        info = writer.create_warcinfo_record(path.name, {"software": "crash test"})
        info.rec_headers.replace_header("WARC-Date", _date(-1))
        write("warcinfo", info)
        for i in range(PAGES):
            date = _date(i)
            if i % 9 == 8:
                write("metadata", writer.create_warc_record(
                    f"{SITE}/p{i - 1}", "metadata", payload=BytesIO(b"outlinks: none\n"),
                    warc_content_type="application/warc-fields",
                    warc_headers_dict={"WARC-Date": date}))
            url, body, mime = f"{SITE}/p{i}", _page(i), "text/html; charset=utf-8"
            if i % 3 == 1:
                url, body, mime = f"{SITE}/assets/{i}/style.css", STYLE, "text/css"
            elif i % 7 == 5:
                url, body, mime = f"{SITE}/img/{i}.png", LOGO, "image/png"
            elif i % 11 == 9:
                url, body = f"{SITE}/p{i - 8}", _page(i - 8)  # a page recaptured unchanged
            http = StatusAndHeaders("200 OK", [("Content-Type", mime),
                                               ("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            if i % 4 == 0:
                write("request", writer.create_warc_record(
                    url, "request", http_headers=StatusAndHeaders(
                        f"GET /{url.split('/', 3)[3]} HTTP/1.1", [("Host", "import-crash.test")],
                        is_http_request=True), warc_headers_dict={"WARC-Date": date}))
            earlier = first.get(body)
            if earlier is None or i % 5 == 0:  # first seen, or stored again in full
                write("response", writer.create_warc_record(
                    url, "response", payload=BytesIO(body), length=len(body), http_headers=http,
                    warc_headers_dict={"WARC-Date": date}))
                first.setdefault(body, (url, date))
                continue
            revisit = writer.create_revisit_record(url, sha1_base32(body), earlier[0], earlier[1],
                                                   http_headers=http,
                                                   warc_headers_dict={"WARC-Date": date})
            if i % 2:  # wget's revisits name no Refers-To URI or date: the digest alone
                revisit.rec_headers.remove_header("WARC-Refers-To-Target-URI")
                revisit.rec_headers.remove_header("WARC-Refers-To-Date")
            write("revisit", revisit)
    return counts


def write_crash_wacz(path: Path, warc: Path) -> None:
    """A WACZ holding `warc` (its CDXJ index and page list made from it)."""
    lines, pages = [], []
    with warc.open("rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            http = record.http_headers
            url = record.rec_headers.get_header("WARC-Target-URI")
            kind = record.rec_type
            records.read_to_end()
            if kind not in ("response", "revisit"):
                continue
            date = datetime.strptime(record.rec_headers.get_header("WARC-Date"),
                                     "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            lines.append(cdxj_line(IndexEntry(
                url, cdxj_timestamp(date), record_mime(kind, http.get_header("Content-Type")),
                int(http.get_statuscode()), record.rec_headers.get_header("WARC-Payload-Digest"),
                records.get_record_length(), records.get_record_offset(), warc.name)))
            if kind == "response" and url.startswith(f"{SITE}/p"):
                pages.append(PageEntry(url=url, ts=date))
    with tempfile.TemporaryDirectory() as folder:
        unsorted, index = Path(folder, "unsorted.cdxj"), Path(folder, "index.cdxj")
        unsorted.write_text("".join(line + "\n" for line in lines))
        sort_cdxj(unsorted, index)
        write_wacz(path, warcs=[warc], index=index, pages=pages, title="import crash",
                   software="tests", created=START)


def import_state(data_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row an import writes, by natural keys (blob ids as sha256, segments by path),
    without surrogate ids or the times rows were written; checks that ref counts are exact.

    A WACZ package's own session is stamped with the time its closing row was written (it
    holds no capture to date it by): its start and end are left out.
    """
    with open_storage(Settings(data_dir=data_dir)) as parts, parts.catalog.reading() as tx:
        session = tx.session
        shas = {int(i): str(s) for i, s in session.execute(select(Blob.id, Blob.sha256))}
        paths = {int(i): str(p) for i, p in session.execute(select(CrawlSegment.id,
                                                                     CrawlSegment.path))}
        stores = {int(i): str(n) for i, n in session.execute(select(Store.id, Store.name))}
        packages = set(session.scalars(select(CrawlSegment.session_id).where(
            CrawlSegment.path.endswith("/wacz/end"))))

        def rows(model: type, *, drop: tuple[str, ...] = (),
                 keys: dict[str, dict[int, str]] | None = None) -> list[tuple[Any, ...]]:
            table = model.__table__  # type: ignore[attr-defined]
            out = []
            for row in session.execute(select(table)):
                data = dict(row._mapping)
                for name, names in (keys or {}).items():
                    data[name] = None if data[name] is None else names[data[name]]
                if model is CrawlSession and data["id"] in packages:
                    data["started_at"] = data["ended_at"] = "(time of the run)"
                out.append(tuple((k, v) for k, v in sorted(data.items()) if k not in drop))
            return sorted(out, key=repr)

        state = {
            "page_fetch": rows(PageFetch, drop=("id",),
                               keys={"body_blob_id": shas, "segment_id": paths}),
            "crawl_segment": rows(CrawlSegment, drop=("id", "ingested_at"), keys={"blob_id": shas}),
            "crawl_session": rows(CrawlSession, keys={"compacted_blob_id": shas,
                                                       "index_blob_id": shas}),
            "blob": rows(Blob, drop=("id", "created_at", "unreferenced_since")),
            "blob_copy": rows(BlobCopy, drop=("mtime",),
                              keys={"blob_id": shas, "store_id": stores}),
        }
        assert list(tx.blobs.count_references()) == [], data_dir
    parts.catalog.engine.dispose()
    return state
