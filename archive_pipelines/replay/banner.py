"""The replay banner: when a page was captured, its original URL, links to the neighbouring
captures and to the calendar of all of them.

Plain HTML from plain values: no script, no external resource, inline styles reset with
`all: initial` so the page's CSS does not restyle it; fixed at the bottom of the window.
ASCII only (anything else written as character references), so it can go into a page of
any ASCII-compatible charset.
"""

from __future__ import annotations

import html
import re

BANNER_ID = "archive-replay-banner"
_TIMESTAMP = re.compile(r"[0-9]{1,14}", re.ASCII)
_BOX = ("all:initial;position:fixed;z-index:2147483647;left:8px;bottom:8px;max-width:calc(100% - 16px);"
        "box-sizing:border-box;padding:4px 8px;background:#fffbe6;color:#222;border:1px solid #b59f3b;"
        "border-radius:4px;font:12px/1.4 system-ui,sans-serif;white-space:nowrap;overflow:hidden;"
        "text-overflow:ellipsis;box-shadow:0 1px 4px rgba(0,0,0,.25)")
_TEXT = "all:initial;font:inherit;color:inherit"
_LINK = "all:initial;font:inherit;color:#0645ad;text-decoration:underline;cursor:pointer;margin-left:8px"


def capture_time_text(timestamp: str) -> str:
    """A 1-14 digit timestamp as `YYYY-MM-DD HH:MM:SS UTC` (a shorter one padded as the
    archive reads it: the earliest moment it names)."""
    if not _TIMESTAMP.fullmatch(timestamp):
        raise ValueError(f"a timestamp is 1 to 14 digits, not {timestamp[:40]!r}")
    full = timestamp + "00000101000000"[len(timestamp):]
    return (f"{full[0:4]}-{full[4:6]}-{full[6:8]} "
            f"{full[8:10]}:{full[10:12]}:{full[12:14]} UTC")


def render_banner(*, timestamp: str, original_url: str, calendar_href: str,
                  previous_href: str | None = None, next_href: str | None = None) -> str:
    """The banner's HTML.

    Args:
        timestamp: the capture's 14-digit time (UTC).
        original_url: the URL the page was captured from (shown, not linked: it is the live web).
        calendar_href: the archive's list of all captures of the URL.
        previous_href / next_href: the archive URLs of the neighbouring captures, if any.
    """
    parts = [
        f'<div id="{BANNER_ID}" style="{_BOX}" role="complementary" aria-label="Archived page">',
        f'<span style="{_TEXT};font-weight:bold">Archived</span>',
        f'<span style="{_TEXT};margin-left:8px">{capture_time_text(timestamp)}</span>',
        f'<span style="{_TEXT};margin-left:8px;color:#555" title="{_attr(original_url)}">'
        f"{_text(original_url)}</span>",
    ]
    if previous_href is not None:
        parts.append(f'<a style="{_LINK}" href="{_attr(previous_href)}" rel="prev">'
                     "&#8592; previous</a>")
    if next_href is not None:
        parts.append(f'<a style="{_LINK}" href="{_attr(next_href)}" rel="next">next &#8594;</a>')
    parts.append(f'<a style="{_LINK}" href="{_attr(calendar_href)}">all captures</a>')
    parts.append("</div>")
    return "".join(parts)


def _text(value: str) -> str:
    return html.escape(value, quote=False).encode("ascii", "xmlcharrefreplace").decode("ascii")


def _attr(value: str) -> str:
    return html.escape(value, quote=True).encode("ascii", "xmlcharrefreplace").decode("ascii")
