"""The `warcinfo` record that opens every exported WARC, and WARC-Date in milliseconds."""

from __future__ import annotations

import time
from dataclasses import dataclass

import warcio

from archive_pipelines import __version__

WARC_1_1 = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"


def warc_date(ms: int) -> str:
    """`YYYY-MM-DDThh:mm:ss.mmmZ` of epoch milliseconds (WARC 1.1 allows a fraction)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def cdx_timestamp(ms: int) -> str:
    """The 14-digit `YYYYMMDDhhmmss` of epoch milliseconds (CDX and Wayback URLs)."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(ms // 1000))


@dataclass(frozen=True)
class WarcInfo:
    """What the warcinfo record says: who wrote the file, for whom, of what."""

    operator: str = ""
    description: str = ""
    self_contained: bool = False

    def fields(self) -> dict[str, str]:
        found = {
            "software": f"archive-pipelines/{__version__} (warcio/{_warcio_version()})",
            "format": "WARC File Format 1.1",
            "conformsTo": WARC_1_1,
            "operator": self.operator,
            "description": self.description,
            "x-archive-pipelines-bodies": (
                "every body in full" if self.self_contained else
                "a body written before in this file is a revisit record "
                "(identical-payload-digest)"),
            "x-archive-pipelines-http-headers": (
                "describe the payload as stored: bodies are kept decoded, so "
                "Content-Encoding, Transfer-Encoding and Content-Length are rewritten and "
                "the values the server sent kept as X-Original-<Name>"),
        }
        return {name: value for name, value in found.items() if value}


def _warcio_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("warcio")
    except PackageNotFoundError:
        return getattr(warcio, "__version__", "?")
