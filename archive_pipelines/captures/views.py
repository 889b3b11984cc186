"""Crawled pages in the symlink views, like snapshots, for the views `[crawl] views` lists.

A crawl session's pages of one host on one UTC day form a folder that mirrors the site as
wget would (`a/b.html`, `dir/index.html`), so relative links between the pages keep working:

    by_timestamp/crawl-<session8>-<YYYYMMDD>/<host>/<path>     (file links: one per page)
    by_domain/<host>/<YYYYMMDD>/crawl-<session8>               -> the by_timestamp folder
    by_date/<YYYYMMDD>/<host>/crawl-<session8>                 -> the by_timestamp folder
    by_user/crawler/<YYYYMMDD>/<host>/crawl-<session8>         -> the by_timestamp folder

Like snapshots, the file links live in one view (`views.file_view`: by_timestamp when it
is enabled) and the others get one folder link per (session, day, host). `crawl-` names
never collide with a legacy snapshot's `by_timestamp/<timestamp>` (digits and a dot) nor
with a snapshot folder (a UUID). Only captures with a stored 2xx body get a link; when two
captures land on one path (the same URL fetched twice that day, or URLs that differ only in
characters a file name cannot hold) the newest wins (`verify --fix` / `rebuild-views` settle
an out-of-order ingest).

A page's link keeps the URL's name (`about`, not `about.html`: relative links between the
pages keep working) and points at the body's alias with the extension its content type has
(`xy/<name>.html` for text/html), so a browser opening it from disk shows a page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple
from urllib.parse import urlsplit

from archive_pipelines.views.paths import (
    UnsafePathError,
    domain_of,
    file_view,
    safe_segment,
    typed_alias_extension,
    validate_relative_path,
)

CRAWL_USER = "crawler"


class ViewCapture(NamedTuple):
    """What a capture's links are made of (`catalog.captures.view_captures`)."""

    id: int
    session_id: str
    fetched_ms: int
    url: str
    body_sha256: str
    content_type: str | None = None


class CaptureFile(NamedTuple):
    """What a page's file link points at: the body, through its alias with extension `ext`."""

    sha256: str
    ext: str


def group_dir(view: str, session_id: str, day: str, *, host: str) -> str:
    """The folder of one session's pages of `host` on `day` in `view` (archive/-relative)."""
    tag = f"crawl-{session_id[:8]}"
    if view == "by_timestamp":
        return f"by_timestamp/{tag}-{day}/{host}"
    if view == "by_domain":
        return f"by_domain/{host}/{day}/{tag}"
    if view == "by_date":
        return f"by_date/{day}/{host}/{tag}"
    if view == "by_user":
        return f"by_user/{CRAWL_USER}/{day}/{host}/{tag}"
    raise ValueError(f"unknown view {view!r}")


def page_path(url: str) -> str:
    """The page's path inside its host folder, as wget would save it: `a/b.html`,
    `dir/index.html` for `dir/`, a query as `name@<query>` (shortened to a hash when long)."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:] or [""]
    if segments[-1] == "":
        segments[-1] = "index.html"
    names = [safe_segment(segment, fallback="_") for segment in segments]
    if parts.query:
        query = safe_segment(parts.query, fallback="_")
        if len(query) > 64:
            query = hashlib.sha256(parts.query.encode()).hexdigest()[:16]
        names[-1] = f"{names[-1][:180]}@{query}"
    try:
        return validate_relative_path("/".join(names))
    except UnsafePathError:  # too deep or too long: a name from the URL's hash
        return f"_long/{hashlib.sha256(url.encode()).hexdigest()[:32]}"


def capture_links(enabled: Iterable[str], captures: Iterable[ViewCapture]
                  ) -> tuple[dict[str, CaptureFile], dict[str, str]]:
    """({file link: its body and alias extension}, {folder link: relative target}) of the
    captures in the `enabled` views; captures in (fetched_ms, id) order, so the newest on a
    path wins."""
    views = tuple(enabled)
    home = file_view(views)
    files: dict[str, CaptureFile] = {}
    folders: dict[str, str] = {}
    if home is None:
        return files, folders
    for capture in sorted(captures, key=lambda c: (c.fetched_ms, c.id)):
        day = datetime.fromtimestamp(capture.fetched_ms / 1000, UTC).strftime("%Y%m%d")
        host = domain_of(capture.url)
        target = group_dir(home, capture.session_id, day, host=host)
        name = page_path(capture.url)
        files[f"{target}/{name}"] = CaptureFile(
            capture.body_sha256, typed_alias_extension(name, capture.content_type))
        for view in views:
            if view != home:
                link = group_dir(view, capture.session_id, day, host=host)
                folders[link] = "../" * link.count("/") + target
    return files, folders
