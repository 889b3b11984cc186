"""`captures`: look captures up by URL (or a prefix), crawl session or body hash."""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import click

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import BlobStore, BlobStoreError, open_store
from archive_pipelines.captures.compaction import CompactionError
from archive_pipelines.captures.lookup import find_body, find_session, find_url, note, when_ms
from archive_pipelines.captures.renderings import (
    RENDERING_NAMES,
    newest_rendering,
    renderings_of,
    save_rendering,
)
from archive_pipelines.captures.short_ids import resolve_body_hash, resolve_session_id
from archive_pipelines.catalog import Capture, RecordedCheck
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import COUNT
from archive_pipelines.sizes import human_bytes
from archive_pipelines.warc.capture_records import read_capture_record

TITLE_SHOWN = 80  # characters of a page's title in a listing line (--json has it whole)
# What json.dumps leaves as it is but a terminal acts on: DEL and C1 controls, line and
# paragraph separators, bidirectional embeddings, overrides and isolates.
_UNSHOWN = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@click.command("captures")
@click.argument("url", required=False)
@click.option("--prefix", is_flag=True, help="Every URL under URL (a site or a path).")
@click.option("--from", "from_", metavar="TIME",
              help="Not before TIME: unix seconds, YYYYMMDDhhmmss (or its start) or ISO 8601.")
@click.option("--to", metavar="TIME", help="Not after TIME (a partial time: its end).")
@click.option("--session", "session_id", metavar="ID",
              help="A crawl session's pages instead (its id, or the start of it).")
@click.option("--requests", "every_request", is_flag=True,
              help="With --session: every capture, sub-requests and redirects too.")
@click.option("--sha256", "body", metavar="HASH",
              help="The captures whose body has this sha256 (or the start of it).")
@click.option("--limit", type=COUNT, default=None, help="At most N captures.")
@click.option("--json", "as_json", is_flag=True, help="Print the captures as JSON.")
@click.option("--records", "with_records", is_flag=True,
              help="With --json: each capture's whole crawl record too (headers, redirects), "
                   "read from its segment or compacted session file.")
@click.option("--screenshot", "screenshot_out", metavar="FILE", type=click.Path(dir_okay=False),
              help="With URL: write the full-page screenshot (PNG) of its newest page capture "
                   "loaded in a browser (within --from/--to) to FILE, instead of listing.")
@click.option("--dom", "dom_out", metavar="FILE", type=click.Path(dir_okay=False),
              help="With URL: write the rendered DOM (HTML) of that capture to FILE.")
@click.pass_obj
def captures_command(obj: CliContext, url: str | None, *, prefix: bool, from_: str | None,
                     to: str | None, session_id: str | None, every_request: bool,
                     body: str | None, limit: int | None, as_json: bool,
                     with_records: bool, screenshot_out: str | None,
                     dom_out: str | None) -> None:
    """List the captures of URL, newest first: when, status, body sha256 and size, session,
    and a page's title.

    URL matches on the crawler's canonical form (`HTTP://Example.com:80/a?b=1&a=2#x` finds
    `http://example.com/a?a=2&b=1`); http and https are different URLs. Redirect hops,
    sub-requests, failed fetches and truncated bodies are captures too, marked as such.
    A page the crawler loaded in a browser lists its full-page screenshot and rendered DOM
    beneath it (indented, with their sizes; in --json as `screenshot` and `dom`); they are
    never a capture of the URL themselves. `--screenshot FILE` (or `--dom FILE`) writes the
    newest one out: `captures https://example.com/ --screenshot page.png`.
    An id or hash may be cut short where it names only one (a prefix that names several
    lists them, exit 2). Exit 1 when nothing matches."""
    if sum(x is not None for x in (url, session_id, body)) != 1:
        raise ArchiveError("give one of: URL, --session ID, --sha256 HASH")
    if screenshot_out is not None or dom_out is not None:
        if url is None or prefix:
            raise ArchiveError("--screenshot and --dom take one URL (not --prefix, --session "
                               "or --sha256)")
        _save_renderings(obj, url, from_=from_, to=to,
                         outs={"screenshot": screenshot_out, "dom": dom_out})
        return
    catalog = obj.catalog  # lookups need neither the store nor its workers
    started = time.perf_counter()
    heading = ""
    if url is not None:
        canonical, found = find_url(
            catalog, url, prefix=prefix, limit=limit,
            from_ms=None if from_ is None else when_ms(from_),
            to_ms=None if to is None else when_ms(to, end=True))
        heading = f"{'under ' if prefix else ''}{canonical}"
    elif session_id is not None:
        session_id = resolve_session_id(catalog, session_id)
        found = find_session(catalog, session_id, every_request=every_request, limit=limit)
        heading = f"of session {session_id}"
    else:
        assert body is not None
        body = resolve_body_hash(catalog, body)
        found = find_body(catalog, body, limit=limit)
        heading = f"with body sha256 {body}"
    renderings = {} if every_request or body is not None else renderings_of(catalog, found)
    checks = catalog.qa.latest(renderings) if renderings else {}  # browser pages' QA scores
    lookup_ms = (time.perf_counter() - started) * 1000
    if as_json:
        rows = [_as_dict(c) for c in found]
        for row, capture in zip(rows, found, strict=True):
            for rendering in renderings.get(capture.id, []):
                row[rendering.kind] = _rendering_dict(rendering)
            if capture.id in checks:
                row["qa"] = _qa_dict(checks[capture.id])
        if with_records:
            settings = obj.settings  # an imported capture's record is in a stored WARC
            store = open_store(settings.primary_store, settings.data_dir)
            for row, capture in zip(rows, found, strict=True):
                row["record"] = _record(settings.data_dir, store, capture)
        click.echo(json.dumps({"query": heading, "lookup_ms": round(lookup_ms, 3),
                               "captures": rows}, indent=2))
    else:
        for capture in found:
            click.echo(_line(capture))
            for rendering in renderings.get(capture.id, []):
                click.echo(_rendering_line(rendering))
            if capture.id in checks:
                click.echo(_qa_line(checks[capture.id]))
        click.echo(f"{len(found):,} capture(s) {heading} ({lookup_ms:.1f} ms)")
    if not found:
        raise click.exceptions.Exit(1)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _line(capture: Capture) -> str:
    status = "-" if capture.status_code is None else str(capture.status_code)
    size = "-" if capture.body_size is None else human_bytes(capture.body_size)
    sha = capture.body_sha256 or "-" * 64
    extra = note(capture)
    title = "" if capture.title is None else f"  {listing_title(capture.title)}"
    return (f"{_when(capture.fetched_ms)}  {status:>3}  {capture.kind:<10} {sha}  {size:>9}  "
            f"{capture.session_id}  {capture.url}{title}" + (f"  ({extra})" if extra else ""))


def _rendering_line(rendering: Capture) -> str:
    """A page's screenshot or DOM, beneath its page's line."""
    size = "-" if rendering.body_size is None else human_bytes(rendering.body_size)
    stored = "" if rendering.stored else "  (not in the store)"
    return (f"{'':28}{RENDERING_NAMES.get(rendering.kind, rendering.kind):<13} "
            f"{rendering.body_sha256 or '-' * 64}  {size:>9}  {rendering.content_type or '-'}"
            f"{stored}")


def _qa_line(recorded: RecordedCheck) -> str:
    """A browser page's newest check against its replay, beneath its page's line."""
    check = recorded.check
    pixel = "-" if check.pixel_score is None else f"{check.pixel_score:.3f}"
    return (f"{'':26}{'QA score':<14} {check.score:.3f}  (pixels {pixel}, resources "
            f"{check.resources_replayed}/{check.resources_expected}, leaks {check.leaks}; "
            f"checked {_when(int(recorded.checked_at.timestamp() * 1000))})")


def _qa_dict(recorded: RecordedCheck) -> dict[str, object]:
    check = recorded.check
    return {"score": check.score, "pixel_score": check.pixel_score,
            "resources_expected": check.resources_expected,
            "resources_replayed": check.resources_replayed, "missing": list(check.missing),
            "leaks": check.leaks, "error": check.error,
            "checked_at": _when(int(recorded.checked_at.timestamp() * 1000))}


def _rendering_dict(rendering: Capture) -> dict[str, object]:
    return {"id": rendering.id, "sha256": rendering.body_sha256, "size": rendering.body_size,
            "content_type": rendering.content_type, "stored": rendering.stored}


def _save_renderings(obj: CliContext, url: str, *, from_: str | None, to: str | None,
                     outs: dict[str, str | None]) -> None:
    settings = obj.settings
    store = open_store(settings.primary_store, settings.data_dir)
    for kind, out in outs.items():
        if out is None:
            continue
        page, rendering = newest_rendering(
            obj.catalog, url, kind=kind, from_ms=None if from_ is None else when_ms(from_),
            to_ms=None if to is None else when_ms(to, end=True))
        size = save_rendering(store, rendering, Path(out))
        click.echo(f"{RENDERING_NAMES[kind]} of {page.url} at {_when(page.fetched_ms)} "
                   f"({human_bytes(size)}, {rendering.content_type}) written to {out}")


def listing_title(title: str) -> str:
    """A page's title for one line of a listing: quoted, at most TITLE_SHOWN characters, and
    escaped as JSON escapes (a title is the site's text: no control character, line break or
    direction override of it reaches the terminal)."""
    cut = title if len(title) <= TITLE_SHOWN else title[:TITLE_SHOWN - 1] + "\u2026"
    return _UNSHOWN.sub(lambda found: f"\\u{ord(found.group()):04x}",
                        json.dumps(cut, ensure_ascii=False))


def _record(data_dir: Path, store: BlobStore, capture: Capture) -> object:
    try:
        return read_capture_record(data_dir, store, capture.index_path,
                                   record_offset=capture.record_offset)
    except (OSError, ValueError, CompactionError, BlobStoreError) as exc:
        return {"error": f"cannot read {capture.index_path} at {capture.record_offset}: {exc}"}


def _as_dict(capture: Capture) -> dict[str, object]:
    data = asdict(capture)
    data["timestamp"] = _when(capture.fetched_ms)
    data["note"] = note(capture)
    data["unchanged"] = capture.unchanged
    return data
