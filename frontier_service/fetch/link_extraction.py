"""Link extraction that leaves the event loop free: big pages are parsed in a worker thread,
at most their first MAX_PARSE_BYTES, and a decompression bomb is not parsed at all.

Why a thread: lexbor releases the GIL while it parses and the Python half (resolving each
link) gives it up every switch interval (5 ms), so the loop keeps its turns; a 50,000-link
page costs ~170 ms of CPU, which on the loop would stall every other fetch and the lease
renewals. Why a byte cap as well: link-dense HTML takes ~20 bytes of memory per byte parsed
(tree and link strings), so a 20 MiB page would cost ~400 MB; 4 MiB bounds that near 80 MB
and is far past nearly every real page (links after it are not followed).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from concurrent.futures import Executor

from archive_pipelines.content_coding import MIB, CutKind
from frontier_service.fetch.links import PageLinks, links_from_fetch
from frontier_service.fetch.result import FetchResult
from frontier_service.frontier.frontier_record import ResourceType

LOOP_PARSE_BYTES = 256 * 1024  # ~3 ms of parsing: cheaper on the loop than a thread hop
MAX_PARSE_BYTES = 4 * MIB


async def links_off_loop(result: FetchResult, *, kind: ResourceType = ResourceType.DOCUMENT,
                         max_assets: int | None = None, executor: Executor | None = None,
                         max_parse_bytes: int = MAX_PARSE_BYTES) -> PageLinks | None:
    """`links_from_fetch(result, kind=, max_assets=)`, in `executor` (the default pool if
    None) for a big body (an HTML page or a stylesheet)."""
    body = result.body
    if body is None or result.cut_kind is CutKind.DECODE_RATIO:  # a bomb's filler
        return None
    extract = functools.partial(links_from_fetch, kind=kind, max_assets=max_assets)
    if len(body) <= LOOP_PARSE_BYTES:
        return extract(result)
    if len(body) > max_parse_bytes:
        result = dataclasses.replace(result, body=body[:max_parse_bytes])
    return await asyncio.get_running_loop().run_in_executor(executor, extract, result)
