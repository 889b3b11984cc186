"""`srcset` values with each candidate's URL rewritten, descriptors and separators kept.

The candidates are split as the HTML standard's "parse a srcset attribute" splits them: a
URL runs to white space and keeps inner commas (`a.png?x=1,2`) unless they end it;
descriptors follow up to a comma outside parentheses.
"""

from __future__ import annotations

import re

from archive_pipelines.replay.archive_urls import ArchiveUrls

_SEPARATORS = re.compile(r"[\t\n\f\r ,]*+")
_URL = re.compile(r"[^\t\n\f\r ]++")
_DESCRIPTORS = re.compile(r"(?:[^,(]|\([^)]*+\)?+)*+,?+")


def rewrite_srcset(value: str, urls: ArchiveUrls, *, modifier: str) -> str:
    """`value` with every candidate URL rewritten by `urls` with `modifier`."""
    pieces: list[str] = []
    position, end = 0, len(value)
    while True:
        separators = _SEPARATORS.match(value, position)
        assert separators is not None
        pieces.append(separators.group())
        position = separators.end()
        if position >= end:
            return "".join(pieces)
        url = _URL.match(value, position)
        assert url is not None
        raw = url.group()
        stripped = raw.rstrip(",")
        pieces.append(urls.rewrite(stripped, modifier=modifier) if stripped else "")
        pieces.append(raw[len(stripped):])
        position = url.end()
        if stripped == raw:  # descriptors follow, up to a comma outside parentheses
            descriptors = _DESCRIPTORS.match(value, position)
            assert descriptors is not None
            pieces.append(descriptors.group())
            position = descriptors.end()
