"""Extractor output bytes for generated legacy snapshots, laid out flat as 0.4-0.9 write them.

Shared assets (jquery, a stylesheet, per-domain favicons) repeat byte for byte across
snapshots so the blob store has something to deduplicate.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache

from archive_testkit.archivebox.releases.release_documents import ResultSpec
from archive_testkit.warc_files import WgetFetch, WgetRun, wget_warc


@dataclass(frozen=True)
class OutputFile:
    """A file to write: its path in the snapshot folder, its bytes, the extractor it belongs to."""

    rel: str
    data: bytes
    extractor: str
    sha256: str | None = None  # known for shared assets, computed once


@dataclass(frozen=True)
class SnapshotContext:
    url: str
    host: str
    path: str  # url path without the leading slash, e.g. "articles/12-slug"
    title: str
    timestamp: str
    rng: random.Random
    binary_size: int
    # What wget fetched so far (the page first), for the snapshot's WARC file.
    fetched: list[WgetFetch] = field(default_factory=list)


_WGET = (
    "wget",
    "--no-verbose",
    "--adjust-extension",
    "--convert-links",
    "--force-directories",
    "--span-hosts",
    "-e",
    "robots=off",
)
_CHROME = ("chromium-browser", "--headless", "--no-sandbox", "--disable-gpu")
_CHROME_VERSION = "Chromium 118.0.5993.88"


@cache
def shared_asset(name: str) -> OutputFile:
    """A file whose bytes are identical in every snapshot that has it (deterministic)."""
    block = random.Random(f"shared-{name}").randbytes(1024).hex().encode()
    body = {
        "jquery.min.js": b"/*! jQuery v3.7.1 | (c) OpenJS Foundation */\n" + block * 8,
        "site.css": b"body{margin:0;font-family:sans-serif}\n/*" + block * 2 + b"*/\n",
    }[name]
    return OutputFile(name, body, "wget", hashlib.sha256(body).hexdigest())


@cache
def favicon(host: str) -> OutputFile:
    """The same favicon for every snapshot of one host."""
    body = b"\x00\x00\x01\x00\x01\x00\x10\x10" + random.Random(f"favicon-{host}").randbytes(310)
    return OutputFile("favicon.ico", body, "favicon", hashlib.sha256(body).hexdigest())


def _html(ctx: SnapshotContext, kind: str) -> bytes:
    token = ctx.rng.randbytes(48).hex()
    paragraph = f"<p>{ctx.title} captured from {ctx.url} ({kind}) {token}</p>\n" * 6
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{ctx.title}</title>'
        f'<link rel="stylesheet" href="/static/site.css"></head>\n<body>\n{paragraph}'
        f'<script src="/static/jquery.min.js"></script></body></html>\n'
    ).encode()


def _binary(ctx: SnapshotContext, magic: bytes) -> bytes:
    size = ctx.rng.randint(ctx.binary_size // 2, ctx.binary_size * 3 // 2)
    return magic + ctx.rng.randbytes(size)


def _result(
    extractor: str,
    cmd: tuple[str, ...],
    version: str,
    *, output: str,
    offset: float,
    status: str = "succeeded",
) -> ResultSpec:
    return ResultSpec(extractor, cmd, version, output, status, offset)


Slot = Callable[[SnapshotContext], tuple[list[OutputFile], ResultSpec]]


def _dom(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    return (
        [OutputFile("output.html", _html(ctx, "dom"), "dom")],
        _result("dom", (*_CHROME, "--dump-dom", ctx.url), _CHROME_VERSION, output="output.html", offset=5),
    )


def _screenshot(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    png = _binary(ctx, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    return (
        [OutputFile("screenshot.png", png, "screenshot")],
        _result("screenshot", (*_CHROME, "--screenshot", ctx.url), _CHROME_VERSION, output="screenshot.png",
                offset=8),
    )


def _wget_command(ctx: SnapshotContext) -> tuple[str, ...]:
    return (*_WGET, f"--warc-file=warc/{_unix_seconds(ctx)}", ctx.url)


def _unix_seconds(ctx: SnapshotContext) -> str:
    return ctx.timestamp.split(".")[0]


def _wget(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    rel = f"{ctx.host}/{ctx.path}.html"
    page = _html(ctx, "wget")
    ctx.fetched.insert(
        0, WgetFetch(url=ctx.url, body=page, content_type="text/html; charset=utf-8", saved_as=rel)
    )
    return (
        [OutputFile(rel, page, "wget")],
        _result("wget", _wget_command(ctx), "GNU Wget 1.21.3", output=rel, offset=0),
    )


def _singlefile(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    return (
        [OutputFile("singlefile.html", _html(ctx, "singlefile"), "singlefile")],
        _result(
            "singlefile",
            ("single-file", "--browser-headless", ctx.url),
            "single-file 1.1.46",
            output="singlefile.html", offset=11,
        ),
    )


def _pdf(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    return (
        [OutputFile("output.pdf", _binary(ctx, b"%PDF-1.4\n"), "pdf")],
        _result("pdf", (*_CHROME, "--print-to-pdf", ctx.url), _CHROME_VERSION, output="output.pdf",
                offset=14),
    )


def _headers(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    body = (
        '{\n    "Content-Type": "text/html; charset=utf-8",\n    "Server": "nginx",\n'
        f'    "Date": "{ctx.timestamp}",\n    "Status-Code": 200\n}}'
    ).encode()
    return (
        [OutputFile("headers.json", body, "headers")],
        _result("headers", ("curl", "--head", ctx.url), "curl 8.4.0", output="headers.json", offset=1),
    )


def _htmltotext(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    body = f"{ctx.title}\n\n{ctx.url}\n{ctx.rng.randbytes(64).hex()}\n".encode()
    return (
        [OutputFile("htmltotext.txt", body, "htmltotext")],
        _result("htmltotext", ("htmltotext",), "0.8.0", output="htmltotext.txt", offset=16),
    )


def _warc(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    """The WARC the wget run wrote beside its files: the page and the requisites it fetched."""
    rel = f"warc/{_unix_seconds(ctx)}.warc.gz"
    command = _wget_command(ctx)
    run = WgetRun(
        arguments=command[1:],
        started=datetime.fromtimestamp(float(ctx.timestamp), UTC),
        warc_name=rel.removeprefix("warc/"),
    )
    return (
        [OutputFile(rel, wget_warc(run, ctx.fetched), "warc")],
        _result("warc", command, "GNU Wget 1.21.3", output="warc/", offset=0.5),
    )


def _favicon(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    return (
        [favicon(ctx.host)],
        _result(
            "favicon",
            ("curl", f"https://www.google.com/s2/favicons?domain={ctx.host}"),
            "curl 8.4.0",
            output="favicon.ico", offset=2,
        ),
    )


def _archive_org(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    link = f"https://web.archive.org/web/{ctx.url}"
    return (
        [OutputFile("archive.org.txt", link.encode(), "archive_org")],
        _result(
            "archive_org",
            ("curl", f"https://web.archive.org/save/{ctx.url}"),
            "curl 8.4.0",
            output=link, offset=20,
        ),
    )


def _readability(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    files = [
        OutputFile("readability/content.html", _html(ctx, "readability"), "readability"),
        OutputFile("readability/content.txt", ctx.title.encode() + b"\n", "readability"),
        OutputFile(
            "readability/article.json",
            json.dumps({"title": ctx.title, "byline": None}).encode(),
            "readability",
        ),
    ]
    return files, _result("readability", ("readability-extractor", "output.html"), "0.0.6",
                          output="readability", offset=22)


def _media(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    rel = f"media/{ctx.path.rsplit('/', 1)[-1]}.mp4"
    return (
        [OutputFile(rel, _binary(ctx, b"\x00\x00\x00\x18ftypmp42"), "media")],
        _result("media", ("yt-dlp", ctx.url), "2023.10.13", output="media", offset=30),
    )


def _mercury(ctx: SnapshotContext) -> tuple[list[OutputFile], ResultSpec]:
    files = [
        OutputFile("mercury/content.html", _html(ctx, "mercury"), "mercury"),
        OutputFile("mercury/content.txt", ctx.title.encode() + b"\n", "mercury"),
    ]
    return files, _result("mercury", ("postlight-parser", ctx.url), "1.0.0", output="mercury", offset=25)


SLOTS: tuple[Slot, ...] = (
    _dom,
    _screenshot,
    _wget,
    _warc,
    _favicon,
    _singlefile,
    _pdf,
    _headers,
    _htmltotext,
    _archive_org,
    _readability,
    _media,
    _mercury,
)


def build_outputs(
    ctx: SnapshotContext, *, budget: int, shared: bool, unknown: bool
) -> tuple[list[OutputFile], list[ResultSpec]]:
    """About `budget` output files (index files not included) and the results that wrote them."""
    files: list[OutputFile] = []
    results: list[ResultSpec] = []
    if shared:
        for name in ("jquery.min.js", "site.css"):
            asset = shared_asset(name)
            rel = f"{ctx.host}/static/{name}"
            files.append(OutputFile(rel, asset.data, "wget", asset.sha256))
            content_type = "application/javascript" if name.endswith(".js") else "text/css"
            ctx.fetched.append(
                WgetFetch(url=f"https://{rel}", body=asset.data, content_type=content_type, saved_as=rel)
            )
    if unknown:
        files.append(OutputFile("notes.txt", f"kept by hand {ctx.url}\n".encode(), "unknown"))
    for slot in SLOTS:
        if len(files) >= budget and results:
            break
        made, result = slot(ctx)
        files.extend(made)
        results.append(result)
    results.append(_result("title", ("curl", ctx.url), "curl 8.4.0", output=ctx.title, offset=3))
    if not any(r.extractor == "media" for r in results) and ctx.rng.random() < 0.3:
        results.append(
            _result(
                "media",
                ("yt-dlp", ctx.url),
                "2023.10.13",
                output="ArchiveError: yt-dlp found no media", offset=30,
                status="failed",
            )
        )
    return files, results
