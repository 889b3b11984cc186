"""Reading Link headers and link-format TimeMaps in the replay tests."""

from __future__ import annotations

import re

_LINK = re.compile(r'<([^>]*)>((?:\s*;\s*[a-z]+="[^"]*")*)')


def parse_links(text: str) -> list[tuple[str, dict[str, str]]]:
    """(URI, params) of each link of a link-format text or a Link header."""
    return [(uri, dict(re.findall(r'([a-z]+)="([^"]*)"', params)))
            for uri, params in _LINK.findall(text)]
