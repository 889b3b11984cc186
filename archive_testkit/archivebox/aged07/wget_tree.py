"""What wget saved for a page: the page, its requisites, and the WARC of the run."""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import quote, urlparse

from archive_testkit.archivebox.aged07.history import article_text, run_started_at
from archive_testkit.archivebox.aged07.model import CDN_CSS, HOSTS, PlannedResult, SnapshotPlan
from archive_testkit.archivebox.formats import ico_bytes, png_bytes, seeded_bytes
from archive_testkit.warc_files import WGET_VERSION, WgetFetch, WgetRun, wget_warc


def host_assets(host: str) -> dict[str, bytes]:
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
        + seeded_bytes(f"jquery/{host}", 2400).hex()
    ).encode()
    accent = next((h.accent for h in HOSTS if h.name == host), (90, 90, 90))
    return {
        f"{host}/css/site.css": css,
        f"{host}/static/jquery.min.js": js,
        f"{host}/img/logo.png": png_bytes(24, 24, accent),
        f"{host}/fonts/inter-var.woff2": b"wOF2\x00\x01\x00\x00" + seeded_bytes(f"font/{host}", 3000),
        f"{host}/favicon.ico": ico_bytes(png_bytes(16, 16, accent), 16),
    }


def cdn_asset() -> bytes:
    return (
        b"/*! normalize.css v8.0.1 | MIT License | github.com/necolas/normalize.css */\n"
        + b"html{line-height:1.15;-webkit-text-size-adjust:100%}body{margin:0}main{display:block}\n" * 12
    )


def page_html(
    plan: SnapshotPlan,
    up: str,
    pages: Sequence[str],
    *, images: Sequence[str],
    converted: bool,
    main_name: str,
) -> bytes:
    """The wget copy of the page (`converted`) or its `.orig` backup (original links)."""
    host = plan.host.name
    title = html.escape(plan.page_title or plan.url)
    if converted:
        cdn = f"{up}../{CDN_CSS}"
        css, js, logo, icon = (
            f"{up}css/site.css",
            f"{up}static/jquery.min.js",
            f"{up}img/logo.png",
            f"{up}favicon.ico",
        )
    else:
        cdn = f"https://{CDN_CSS}"
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
        f"<p>{html.escape(article_text(plan))}</p>",
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


def embed_html(
    plan: SnapshotPlan, up: str, page: str, *, next_page: str, main_name: str, converted: bool
) -> bytes:
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


def snapshot_warc(plan: SnapshotPlan, wget_run: PlannedResult, saved: Sequence[str]) -> bytes:
    """The run's `warc/<unix>.warc.gz`: the page, then its requisites, as the server sent them.

    `saved` lists wget's files (page first); a `.orig` backup holds the bytes before
    --convert-links rewrote them, which are the bytes the WARC recorded.
    """
    files = plan.files
    scheme = urlparse(plan.url).scheme
    fetches = []
    for number, rel in enumerate(saved):
        url = f"{'https' if rel == CDN_CSS else scheme}://{quote(rel, safe='/@')}"
        url = plan.url if number == 0 else url
        content_type = _CONTENT_TYPES.get(rel.rsplit(".", 1)[-1], "application/octet-stream")
        body = files.get(rel + ".orig", files[rel])
        fetches.append(WgetFetch(url=url, body=body, content_type=content_type, saved_as=rel))
    run = WgetRun(
        arguments=tuple(wget_run.cmd[1:]),
        started=wget_run.start,
        warc_name=f"{int(run_started_at(plan, wget_run).timestamp())}.warc.gz",
        version=(wget_run.cmd_version or "").rsplit(" ", 1)[-1] or WGET_VERSION,
    )
    return wget_warc(run, fetches)
