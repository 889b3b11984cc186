"""The server's own pages: errors that say what happened and to which capture, the calendar
of a URL's captures (by year and month) and the list of URLs under a prefix. Plain HTML, no
scripts, no external resources."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from itertools import groupby

from archive_pipelines.catalog import Capture
from archive_pipelines.replay.timestamps import timestamp_of

_STYLE = ("body{font:15px/1.4 system-ui,sans-serif;margin:2em;max-width:60em}"
          "h1{font-size:1.3em}code{word-break:break-all}li{margin:.15em 0}"
          "h2{font-size:1.1em;margin-top:1.2em}h3{font-size:1em;margin:.6em 0 .2em}")


def page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{escape(title)}"
            f"</title><style>{_STYLE}</style></head>\n<body>\n<h1>{escape(title)}</h1>\n"
            f"{body}\n</body></html>\n")


def error_page(title: str, message: str, *, links: Sequence[tuple[str, str]] = ()) -> str:
    """A page stating `message`, with links ((href, text)) to go on from."""
    items = "".join(f'<li><a href="{escape(href)}">{escape(text)}</a></li>' for href, text in links)
    return page(title, f"<p>{escape(message)}</p>" + (f"<ul>{items}</ul>" if items else ""))


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def describe(capture: Capture) -> str:
    """`capture 12 of http://x/ at 2026-11-25 10:00:00 UTC`: how pages name a capture."""
    return f"capture {capture.id} of {capture.url} at {when(capture.fetched_ms)}"


def _month(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m")


def calendar_page(url: str, captures: Sequence[Capture], *, more: bool) -> str:
    """Every capture of `url` by year and month, each a link to its replay."""
    if not captures:
        return error_page(f"No captures of {url}", "The archive holds no capture of this URL.")
    parts = [f"<p>{len(captures):,}{'+' if more else ''} capture(s) of <code>{escape(url)}</code>, "
             f"from {when(captures[0].fetched_ms)} to {when(captures[-1].fetched_ms)}.</p>"]
    for year, in_year in groupby(captures, key=lambda c: _month(c.fetched_ms)[:4]):
        parts.append(f"<h2>{year}</h2>")
        for month, in_month in groupby(in_year, key=lambda c: _month(c.fetched_ms)):
            listed = list(in_month)
            parts.append(f"<h3>{month} ({len(listed)})</h3><ul>")
            for capture in listed:
                parts.append(f'<li><a href="/web/{timestamp_of(capture.fetched_ms)}/'
                             f'{escape(capture.url)}">{when(capture.fetched_ms)}</a> '
                             f"{capture.status_code} {escape(capture.content_type or '')}</li>")
            parts.append("</ul>")
    return page(f"Captures of {url}", "\n".join(parts))


def calendar_json(url: str, captures: Sequence[Capture], *, more: bool) -> str:
    """The calendar for programs: `url`, `more` and `captures` ([{timestamp, url, status,
    mime, length, digest}], oldest first)."""
    return json.dumps({"url": url, "more": more, "captures": [_item(c) for c in captures]},
                      indent=1) + "\n"


def _item(capture: Capture) -> dict[str, object]:
    return {"timestamp": timestamp_of(capture.fetched_ms), "url": capture.url,
            "status": capture.status_code, "mime": capture.content_type,
            "length": capture.body_size, "digest": capture.body_sha256}


def prefix_page(prefix: str, captures: Sequence[Capture], *, more: bool) -> str:
    """The URLs under `prefix` with their capture counts and times, each a calendar link."""
    if not captures:
        return error_page(f"No captures under {prefix}", "The archive holds no URL under it.")
    parts = [f"<p>URLs under <code>{escape(prefix)}</code>"
             f"{' (the first ones)' if more else ''}:</p><ul>"]
    for _key, of_url in groupby(captures, key=lambda c: c.urlkey):
        listed = list(of_url)
        url = listed[-1].url
        parts.append(f'<li><a href="/web/*/{escape(url)}">{escape(url)}</a> '
                     f"{len(listed)} capture(s), {when(listed[0].fetched_ms)} to "
                     f"{when(listed[-1].fetched_ms)}</li>")
    parts.append("</ul>")
    return page(f"Captures under {prefix}", "\n".join(parts))


def prefix_json(prefix: str, captures: Sequence[Capture], *, more: bool) -> str:
    return json.dumps({"prefix": prefix, "more": more, "captures": [_item(c) for c in captures]},
                      indent=1) + "\n"
