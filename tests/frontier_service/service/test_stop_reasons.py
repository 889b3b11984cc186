"""Why a crawl stopped, in the summary, the log and `stats`: hosts stopped by their page
budget with the URLs they left, links beyond the maximum depth and URLs too long to queue
counted by reason and logged once per host; "frontier exhausted" only when nothing is left."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontier_service.scope.drops import BEYOND_MAX_DEPTH, TOO_LONG
from tests.frontier_service.service.cli_runs import cli
from tests.frontier_service.service.tree_site import C_LINKS, HOST, TreeSite, serve_tree

WIDE, DEEP = 10, 5


@pytest.fixture(scope="module")
def site() -> Iterator[TreeSite]:
    with serve_tree(wide=WIDE, deep=DEEP) as served:
        yield served


def _base(data: Path, redis_url: str, crawl_name: str) -> list[str]:
    return ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name]


def _run(site: TreeSite, data: Path, redis_url: str, crawl_name: str,
         *extra: str) -> tuple[dict[str, Any], str]:
    done = cli(*_base(data, redis_url, crawl_name), "run", "--seed", f"http://{HOST}/",
               "--host-map", f"{HOST}=127.0.0.1:{site.port}", "--allow-network", "127.0.0.0/8",
               "--allowed-domain", HOST, "--min-delay", "0", "--max-depth", "2",
               "--exit-when-idle", "0.5", "--max-seconds", "60", "--metrics-port", "-1",
               "--loop", "asyncio", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def _stats(data: Path, redis_url: str, crawl_name: str) -> tuple[dict[str, Any], str]:
    as_json = cli(*_base(data, redis_url, crawl_name), "stats", "--json")
    text = cli(*_base(data, redis_url, crawl_name), "stats")
    assert as_json.returncode == 0 and text.returncode == 0, as_json.stderr[-2000:]
    return json.loads(as_json.stdout), text.stdout


def test_a_page_budget_leaves_urls_queued_and_says_so(
        site: TreeSite, tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    summary, log = _run(site, tmp_path / "data", redis_url, crawl_name, "--page-budget", "20")
    queued = site.pages_to_depth(2)  # every URL to depth 2 is queued; 20 of them fetched
    left = queued - 20
    assert summary["pages"] == 20
    assert summary["stopped"] == (f"nothing left to fetch; {left} URLs left queued on stopped "
                                  f"hosts: page budget reached (1 host, {left} URLs)")
    assert summary["urls_left"] == left
    assert summary["hosts_stopped"]["page budget reached"]["urls_left"] == left
    assert summary["hosts_stopped"]["page budget reached"]["examples"] == [HOST]
    # "/" and the ten /aN pages (depth 1 < 2) each offer the over-long URL: counted each
    # time, logged once for the host; the nine /aN/bM pages fetched link beyond depth 2.
    dropped = {TOO_LONG: 1 + WIDE, BEYOND_MAX_DEPTH: (20 - 1 - WIDE) * C_LINKS}
    assert summary["urls_dropped"] == dropped
    assert log.count("URLs longer than 8,192 bytes are not queued") == 1, log[-3000:]
    assert log.count(f"{HOST}: page budget (20 pages) reached") == 1
    assert f"page budget reached: 1 host stopped with {left} URLs" in log

    stats, text = _stats(tmp_path / "data", redis_url, crawl_name)
    assert stats["urls_left_on_stopped_hosts"] == left
    assert stats["hosts_stopped"]["page budget reached"]["hosts"] == 1
    assert stats["urls_dropped"] == dropped
    assert f"page budget reached: 1 host, {left} URLs left" in text
    assert f"{TOO_LONG} {1 + WIDE}" in text


def test_depth_limited_crawl_is_exhausted_and_counts_what_it_did_not_follow(
        site: TreeSite, tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    """Two processes: their counts add up in the summary and in Redis."""
    summary, log = _run(site, tmp_path / "data", redis_url, crawl_name,
                        "--processes", "2", "--concurrency", "4")
    assert summary["pages"] == site.pages_to_depth(2)
    assert summary["stopped"] == "frontier exhausted"
    assert summary["urls_left"] == 0 and summary["hosts_stopped"] == {}
    beyond = WIDE * DEEP * C_LINKS  # the /aN/bM pages' links, at depth 3
    dropped = {TOO_LONG: 1 + WIDE, BEYOND_MAX_DEPTH: beyond}
    assert summary["urls_dropped"] == dropped
    assert "links beyond the maximum depth are not followed" in log

    stats, _ = _stats(tmp_path / "data", redis_url, crawl_name)
    assert stats["urls_dropped"] == dropped
    assert stats["hosts_stopped"] == {} and stats["urls_left_on_stopped_hosts"] == 0
