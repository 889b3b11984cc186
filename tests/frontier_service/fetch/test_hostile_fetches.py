"""The fetcher against the hostile site: bombs are cut by their ratio, with the reason, while
the event loop keeps its turns; odd encodings, trickles, resets and big headers end cleanly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from archive_pipelines.content_coding import DEFAULT_RATIO_GRACE_BYTES, MIB, CutKind
from archive_testkit.hostile import ENCODINGS, HostileConfig, HostileSite, serve_hostile
from archive_testkit.testweb import TestWebResolver
from frontier_service.fetch import Fetcher, FetchErrorKind, FetchResult, FetchSettings
from frontier_service.fetch.link_extraction import links_off_loop

HOST = "bombs.test"
CAP = 20 * MIB


@pytest.fixture(scope="module")
def site() -> Iterator[HostileSite]:
    with serve_hostile(HostileConfig(bomb_bytes=1024 * MIB, trickle_interval_s=0.5)) as running:
        yield running


def fetch_all(site: HostileSite, paths: list[str], **settings: Any) -> list[FetchResult]:
    async def run() -> list[FetchResult]:
        fetch_settings = FetchSettings(max_body_bytes=CAP, max_attempts=1, **settings)
        async with Fetcher(fetch_settings, resolver=TestWebResolver(site.port)) as fetcher:
            return list(await asyncio.gather(*(fetcher.fetch(f"http://{HOST}{path}")
                                               for path in paths)))
    return asyncio.run(run())


@pytest.mark.parametrize("kind", ENCODINGS)
def test_a_bomb_is_cut_by_its_ratio_with_the_reason(site: HostileSite, kind: str) -> None:
    [result] = fetch_all(site, [f"/bomb/{kind.replace(', ', '+')}/0"])
    assert result.error is None and result.status == 200
    assert result.truncated and result.cut_kind is CutKind.DECODE_RATIO
    assert result.truncated_reason == "decode ratio over 1000:1"
    grace = DEFAULT_RATIO_GRACE_BYTES
    assert result.body is not None and grace < len(result.body) <= grace + 3 * MIB
    assert result.body == bytes(len(result.body))  # decoded: the zeros, not the wire bytes


def test_the_loop_keeps_its_turns_while_bombs_inflate(site: HostileSite) -> None:
    """A ticker on the loop measures the most CPU the loop's thread spent between two of
    its turns while one bomb of each kind inflates (one at a time, as a crawler fetches a
    host). CPU, not wall time, so other processes on a loaded machine do not count. Before
    decoding was bounded, aiohttp inflated a bomb to the cap in one 100-300 ms stretch."""
    paths = [f"/bomb/{kind.replace(', ', '+')}/1" for kind in ENCODINGS]

    async def run(max_ratio: float) -> tuple[float, list[FetchResult]]:
        stalls = [0.0]
        done = asyncio.Event()

        async def tick() -> None:
            last = time.thread_time()
            while not done.is_set():
                await asyncio.sleep(0.001)
                now = time.thread_time()
                stalls.append(now - last)
                last = now

        settings = FetchSettings(max_body_bytes=CAP, max_attempts=1, max_decode_ratio=max_ratio)
        async with Fetcher(settings, resolver=TestWebResolver(site.port)) as fetcher:
            await fetcher.fetch(f"http://{HOST}/page/warm-up")  # connect outside the measure
            ticker = asyncio.create_task(tick())
            results = [await fetcher.fetch(f"http://{HOST}{path}") for path in paths]
        done.set()
        await ticker
        return max(stalls), results

    stall, results = asyncio.run(run(1000.0))
    print(f"most CPU between two turns of the loop while bombs inflated: {stall * 1000:.1f} ms")
    assert all(r.cut_kind is CutKind.DECODE_RATIO for r in results)
    assert stall < 0.025
    # Without the ratio check each bomb inflates to the 20 MiB cap: still in short slices.
    stall, results = asyncio.run(run(1e12))
    print(f"... and to the 20 MiB cap: {stall * 1000:.1f} ms")
    assert all(r.cut_kind is CutKind.DECODED_SIZE for r in results)
    assert all(r.truncated_reason == "decoded size over the 20 MiB cap" for r in results)
    assert stall < 0.025


def test_an_unknown_encoding_is_kept_raw_and_said(site: HostileSite) -> None:
    [result] = fetch_all(site, ["/odd-encoding/x-hostile"])
    assert result.ok and result.body == b"raw bytes in an unknown coding"
    assert result.body_encoding == "x-hostile" and not result.truncated


def test_corrupt_gzip_is_a_protocol_error_not_a_timeout(site: HostileSite) -> None:
    [result] = fetch_all(site, ["/odd-encoding/corrupt-gzip"])
    assert result.error_kind is FetchErrorKind.PROTOCOL and result.body is None
    assert result.error is not None and result.error.startswith("content decoding failed: gzip")


def test_trickle_reset_and_huge_headers_end_cleanly(site: HostileSite) -> None:
    began = time.monotonic()
    trickle, reset, huge, many, too_many = fetch_all(
        site, ["/trickle/100", "/reset/100000", "/huge-headers/64", "/many-headers/100",
               "/many-headers/500"],
        total_timeout_s=2.0, fetch_deadline_s=3.0, limit_per_host=8)
    assert trickle.error_kind is FetchErrorKind.TIMEOUT
    assert reset.error_kind in (FetchErrorKind.CONNECT, FetchErrorKind.PROTOCOL)
    assert huge.error_kind is FetchErrorKind.PROTOCOL  # over the 32 KiB header line cap
    assert many.ok
    assert too_many.error_kind is FetchErrorKind.PROTOCOL  # aiohttp reads 128 at most
    assert time.monotonic() - began < 10


def test_redirect_chains_and_loops_end(site: HostileSite) -> None:
    chain, loop = fetch_all(site, ["/redirect/20", "/redirect-loop/a"])
    assert chain.error_kind is FetchErrorKind.TOO_MANY_REDIRECTS
    assert loop.error_kind is FetchErrorKind.REDIRECT_LOOP


def test_fifty_thousand_links_are_extracted_off_the_loop(site: HostileSite) -> None:
    [result] = fetch_all(site, ["/links/50000"])
    assert result.body is not None and len(result.body) > 256 * 1024  # parsed in a thread
    links = asyncio.run(links_off_loop(result))
    assert links is not None and len(links.pages) == 50_000
