"""WARC files as `wget --warc-file` writes them, for the ArchiveBox collection generators.

ArchiveBox's wget extractor runs `wget ... --warc-file=warc/<unix-ts> --page-requisites URL`
in the snapshot folder. GNU Wget 1.21.3 (Debian's) then writes `warc/<unix-ts>.warc.gz`, one
gzip member per record, in this order (seen by running it against a loopback site):

1. `warcinfo`: `WARC-Filename`, `Content-Type: application/warc-fields`, a block digest, and
   the fields `software`, `format`, `conformsTo`, `robots` and `wget-arguments` (each argument
   double-quoted and followed by a space), then one empty line.
2. Per fetched URL, in fetch order, a `request` record (`GET <path> HTTP/1.1`, `Host`,
   `Referer` for page requisites, `User-Agent`, `Accept`, `Accept-Encoding` under
   `--compression=auto`, `Connection`) and its `response` record (status line, headers and
   body as the server sent them) with `WARC-Concurrent-To` naming the request. Both carry
   `WARC-Target-URI`, `WARC-IP-Address`, `WARC-Warcinfo-ID` and `WARC-Block-Digest`; only the
   response has a `WARC-Payload-Digest`. Content types are `application/http;msgtype=...`
   (no space), and wget 1.21 writes the target URI inside angle brackets (`<https://...>`), a
   known wget quirk that readers such as warcio strip.
3. A `metadata` record `metadata://gnu.org/software/wget/warc/MANIFEST.txt` listing the
   warcinfo record's id, then two `resource` records concurrent to it:
   `.../wget_arguments.txt` (the quoted arguments) and `.../wget.log` (the `--no-verbose` log:
   one `URL:... [n/n] -> "path" [1]` line per file, then the FINISHED summary).

Digests are sha1 in base32 (`sha1:...`) and are computed by warcio's writer; the record
ids and dates derive from the run, so the same run always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from io import BytesIO
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_testkit.wget_log import LoggedDownload, no_verbose_log

WGET_VERSION = "1.21.3"
_CONFORMS_TO = "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf"
_WGET_META = "metadata://gnu.org/software/wget/warc"
_FETCH_GAP = timedelta(milliseconds=120)  # between two fetches of one run


@dataclass(frozen=True)
class WgetFetch:
    """One URL wget fetched: the body the server sent and where wget saved it."""

    url: str
    body: bytes
    content_type: str
    saved_as: str  # the path wget logs, relative to its working directory


@dataclass(frozen=True)
class WgetRun:
    """One wget invocation: its arguments (without `wget`), its start and its WARC name."""

    arguments: tuple[str, ...]
    started: datetime  # timezone-aware
    warc_name: str  # the WARC-Filename, e.g. `1700000000.warc.gz`
    version: str = WGET_VERSION  # the wget release, e.g. `1.20.1`


class _WgetDigests(WARCWriter):
    """warcio's writer, with a payload digest on responses only, as wget writes it."""

    def ensure_digest(self, record: Any, *, block: bool = True, payload: bool = True) -> None:
        super().ensure_digest(record, block=block, payload=payload and record.rec_type == "response")


def wget_warc(run: WgetRun, fetches: Sequence[WgetFetch]) -> bytes:
    """The bytes of the `.warc.gz` wget writes for `run` fetching `fetches` (the page first)."""
    out = BytesIO()
    writer = _WgetDigests(out, gzip=True)
    ids = _RecordIds(run)
    quoted = "".join(f'"{argument}" ' for argument in run.arguments)
    warcinfo_id = ids.next()
    info = (
        f"software: Wget/{run.version} (linux-gnu)\r\nformat: WARC File Format 1.0\r\n"
        f"conformsTo: {_CONFORMS_TO}\r\nrobots: {_robots(run.arguments)}\r\n"
        f"wget-arguments: {quoted}\r\n\r\n"
    ).encode()
    writer.write_record(
        _record(
            writer,
            "warcinfo",
            info,
            headers=[
                ("Content-Type", "application/warc-fields"),
                ("WARC-Date", _warc_date(run.started)),
                ("WARC-Record-ID", warcinfo_id),
                ("WARC-Filename", run.warc_name),
            ],
        )
    )
    moment = run.started
    for index, fetch in enumerate(fetches):
        referer = fetches[0].url if index else None
        _write_exchange(writer, ids, run, fetch=fetch, referer=referer, when=moment, warcinfo_id=warcinfo_id)
        moment += _FETCH_GAP
    manifest_id = ids.next()
    common = [("WARC-Warcinfo-ID", warcinfo_id)]
    date = ("WARC-Date", _warc_date(moment))
    writer.write_record(
        _record(
            writer,
            "metadata",
            f"{warcinfo_id}\n".encode(),
            headers=[
                ("WARC-Record-ID", manifest_id),
                *common,
                ("WARC-Target-URI", f"<{_WGET_META}/MANIFEST.txt>"),
                date,
                ("Content-Type", "text/plain"),
            ],
        )
    )
    downloads = [
        LoggedDownload(
            _wire_url(fetch.url), len(fetch.body), fetch.saved_as, run.started + index * _FETCH_GAP
        )
        for index, fetch in enumerate(fetches)
    ]
    log = no_verbose_log(downloads, started=run.started, finished=moment)
    for name, body in (("wget_arguments.txt", f"{quoted}\n".encode()), ("wget.log", log)):
        writer.write_record(
            _record(
                writer,
                "resource",
                body,
                headers=[
                    ("WARC-Record-ID", ids.next()),
                    *common,
                    ("WARC-Concurrent-To", manifest_id),
                    ("WARC-Target-URI", f"<{_WGET_META}/{name}>"),
                    date,
                    ("Content-Type", "text/plain"),
                ],
            )
        )
    return out.getvalue()


class _RecordIds:
    """Record ids (`<urn:uuid:...>`) that follow from the run, one after another."""

    def __init__(self, run: WgetRun) -> None:
        self._base = f"{run.warc_name}|{run.started.isoformat()}|{' '.join(run.arguments)}"
        self._count = 0

    def next(self) -> str:
        self._count += 1
        digest = hashlib.sha256(f"{self._base}|{self._count}".encode()).digest()[:16]
        return f"<urn:uuid:{uuid.UUID(bytes=digest, version=4)}>"


def _write_exchange(
    writer: WARCWriter,
    ids: _RecordIds,
    run: WgetRun,
    *, fetch: WgetFetch,
    referer: str | None,
    when: datetime,
    warcinfo_id: str,
) -> None:
    parts = urlsplit(_wire_url(fetch.url))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request_headers = [("Host", parts.netloc)]
    if referer:
        request_headers.append(("Referer", _wire_url(referer)))
    request_headers += [("User-Agent", _user_agent(run)), ("Accept", "*/*")]
    if any(a in ("--compression=auto", "--compression=gzip") for a in run.arguments):
        request_headers.append(("Accept-Encoding", "gzip"))
    request_headers.append(("Connection", "Keep-Alive"))
    request = StatusAndHeaders(f"GET {path} HTTP/1.1", request_headers, is_http_request=True)
    response = StatusAndHeaders(
        "200 OK",
        [
            ("Server", "nginx"),
            ("Date", when.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")),
            ("Content-Type", fetch.content_type),
            ("Content-Length", str(len(fetch.body))),
            ("Connection", "keep-alive"),
        ],
        protocol="HTTP/1.1",
    )
    target = ("WARC-Target-URI", f"<{_wire_url(fetch.url)}>")
    date = ("WARC-Date", _warc_date(when))
    address = ("WARC-IP-Address", _ip_address(parts.hostname or parts.netloc))
    request_id = ids.next()
    writer.write_record(
        _record(
            writer,
            "request",
            b"",
            headers=[
                target,
                ("Content-Type", "application/http;msgtype=request"),
                date,
                ("WARC-Record-ID", request_id),
                address,
                ("WARC-Warcinfo-ID", warcinfo_id),
            ],
            http_headers=request,
        )
    )
    writer.write_record(
        _record(
            writer,
            "response",
            fetch.body,
            headers=[
                ("WARC-Record-ID", ids.next()),
                ("WARC-Warcinfo-ID", warcinfo_id),
                ("WARC-Concurrent-To", request_id),
                target,
                date,
                address,
                ("Content-Type", "application/http;msgtype=response"),
            ],
            http_headers=response,
        )
    )


def _record(
    writer: WARCWriter,
    kind: str,
    body: bytes,
    *,
    headers: list[tuple[str, str]],
    http_headers: StatusAndHeaders | None = None,
) -> Any:
    warc_headers = StatusAndHeaders("", [("WARC-Type", kind), *headers], protocol="WARC/1.0")
    content_type = dict(headers)["Content-Type"]
    return writer.create_warc_record(
        "",
        kind,
        payload=BytesIO(body),
        length=len(body),
        warc_content_type=content_type,
        warc_headers=warc_headers,
        http_headers=http_headers,
    )


def _wire_url(url: str) -> str:
    """The URL as wget sends and records it: non-ASCII path and query bytes percent-encoded."""
    parts = urlsplit(url)
    safe = "/%:@!$&'()*+,;=~-._?"
    return urlunsplit(parts._replace(path=quote(parts.path, safe=safe), query=quote(parts.query, safe=safe)))


def _warc_date(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _robots(arguments: Sequence[str]) -> str:
    return "off" if "robots=off" in arguments else "classic"


def _user_agent(run: WgetRun) -> str:
    for argument in run.arguments:
        if argument.startswith("--user-agent="):
            return argument.split("=", 1)[1]
    return f"Wget/{run.version} (linux-gnu)"


def _ip_address(host: str) -> str:
    """A fixed documentation-range address per host (what the resolver answered)."""
    return f"203.0.113.{1 + hashlib.sha256(host.encode()).digest()[0] % 254}"
