"""`frontier-service serve`: queued crawls taken, run under their crawl ids and finished with
their outcome; every crawl of a definition (queued by its schedule's tick, by crawl_job, by
hand) captures the site again; a crawler killed mid-crawl
is taken over by the next one, which finishes the crawl exactly once."""

from __future__ import annotations

import collections
import json
import os
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
import redis

from archive_pipelines.assets.crawl_job import crawl_job
from archive_pipelines.crawls.requests import crawler_presence, get_crawl, list_crawls
from archive_pipelines.resources import CatalogResource, SettingsResource
from archive_pipelines.sensors.crawl_schedules import crawl_schedules
from archive_pipelines.settings import load_settings
from tests.frontier_service.service.serve_runs import (
    definition_toml,
    every_page,
    fetched_pages,
    gone,
    initialized,
    kill_quietly,
    queue,
    start_serve,
    stop_serve,
    wait_for,
)
from tests.frontier_service.service.tree_site import HOST, TreeSite, serve_tree
from tests.helpers.captures import capture_rows, ingest_all, parts_of
from tests.helpers.cli import run_cli


@pytest.fixture(scope="module")
def site() -> Iterator[TreeSite]:
    with serve_tree(wide=4, deep=3) as served:
        yield served


@pytest.fixture(scope="module")
def slow_site() -> Iterator[TreeSite]:
    """211 pages to depth 3: a crawl of it at one request at a time takes seconds."""
    with serve_tree(wide=10, deep=5) as served:
        yield served


def _captured(data: Path) -> collections.Counter[str]:
    """Captures per URL once every segment is ingested."""
    with parts_of(data) as parts:
        ingest_all(parts, data)
        return collections.Counter(row["url"] for row in capture_rows(parts.catalog))


def test_a_queued_crawl_is_taken_finished_and_its_pages_become_captures(
        site: TreeSite, tmp_path: Path, redis_url: str) -> None:
    data = tmp_path / "data"
    with initialized(data, definition_toml(site, "tree")) as catalog:
        queued = run_cli("--data-dir", str(data), "crawls", "queue", "tree")
        assert queued.returncode == 0, queued.stderr
        request = get_crawl(catalog, queued.stdout.splitlines()[0].removeprefix("queued crawl "))
        assert request is not None and request.state == "queued"
        serve = start_serve(data, redis_url)
        try:
            done = wait_for(catalog, request.crawl_id, process=serve)
        finally:
            log = stop_serve(serve)
        assert get_crawl(catalog, request.crawl_id) == done  # nothing changed it since
        shown = run_cli("--data-dir", str(data), "crawls", "show", request.crawl_id)
        assert shown.returncode == 0, shown.stderr
    pages = every_page(site, 3)
    assert done.attempts == 1 and done.outcome is not None
    assert done.outcome["pages"] == done.outcome["pages_ok"] == len(pages)
    assert done.outcome["errors"] == 0 and done.outcome["new_bodies"] > 0
    assert done.outcome["stopped_because"] == "frontier exhausted"
    assert done.outcome["run"]["pages"] == len(pages)
    assert "finished: frontier exhausted" in shown.stdout, shown.stdout
    assert done.progress["pages"] == len(pages)
    assert f"took crawl {request.crawl_id}" in log
    # Under its crawl id: its own frontier folder and Redis keys, both gone once it finished
    # (the pages are in the data dir's sessions).
    assert f"crawl {request.crawl_id}: removed its frontier folder (" in log
    assert not (data / "crawls" / request.crawl_id).exists()
    assert not list((data / "crawls").iterdir())
    assert not list((data / "frontiers").glob("??/*.frontier"))
    client = redis.Redis.from_url(redis_url)
    try:
        assert not list(client.scan_iter(match=f"{request.crawl_id}:*"))
    finally:
        client.close()
    assert sorted(fetched_pages(data)) == sorted(pages)
    assert _captured(data) == dict.fromkeys(pages, 1)
    shown = run_cli("--data-dir", str(data), "captures", f"http://{HOST}/a1/b2/c0", "--json")
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)["captures"]) == 1


def test_a_definition_launched_by_its_schedule_and_by_hand_captures_every_page_twice(
        site: TreeSite, tmp_path: Path, redis_url: str,
        dagster_instance: dg.DagsterInstance) -> None:
    data = tmp_path / "data"
    toml = definition_toml(site, "tree") + 'cadence = "@weekly"\n'
    with initialized(data, toml) as catalog:
        resources = {"catalog": CatalogResource(settings=SettingsResource(data_dir=str(data)))}
        [schedule] = crawl_schedules(load_settings(data, environ={}))
        # A tick, launched as the daemon launches it; then crawl_job by hand; both at once.
        with dg.build_schedule_context(instance=dagster_instance, resources=resources,
                                       scheduled_execution_time=datetime.now(UTC)) as context:
            tick = schedule(context)
        assert isinstance(tick, dg.RunRequest)
        runs = [crawl_job.execute_in_process(
                    run_config=tick.run_config, resources=resources, instance=dagster_instance,
                    tags={**tick.tags, "dagster/schedule_name": schedule.name}),
                crawl_job.execute_in_process(
                    run_config={"ops": {"queue_crawl_op": {"config": {"definition": "tree"}}}},
                    resources=resources, instance=dagster_instance)]
        assert all(run.success for run in runs)
        second, first = list_crawls(catalog)  # newest first
        assert first.requested_by == "schedule crawl_tree_schedule"
        assert second.requested_by.startswith("dagster run ")
        serve = start_serve(data, redis_url, "--max-crawls", "2")
        try:
            done = [wait_for(catalog, r.crawl_id, process=serve) for r in (first, second)]
        finally:
            stop_serve(serve)
    pages = every_page(site, 3)
    assert first.crawl_id != second.crawl_id
    assert [d.outcome["pages"] for d in done if d.outcome] == [len(pages)] * 2
    assert collections.Counter(fetched_pages(data)) == dict.fromkeys(pages, 2)
    assert _captured(data) == dict.fromkeys(pages, 2)
    with parts_of(data) as parts:  # each page's two captures at two times
        times: dict[str, set[int]] = collections.defaultdict(set)
        for row in capture_rows(parts.catalog):
            times[row["url"]].add(row["fetched_ms"])
    assert all(len(times[page]) == 2 for page in pages)


def test_a_crawler_killed_mid_crawl_is_taken_over_and_the_crawl_finishes_exactly_once(
        slow_site: TreeSite, tmp_path: Path, redis_url: str) -> None:
    data = tmp_path / "data"
    with initialized(data) as catalog:
        request = queue(catalog, slow_site, min_delay_s=0.02, per_host=1)
        serve = start_serve(data, redis_url)
        try:
            running = wait_for(catalog, request.crawl_id, states=("running",), pages=30,
                               process=serve)
            os.kill(serve.pid, signal.SIGKILL)
            serve.communicate(timeout=30)
        finally:
            kill_quietly(serve)
        child = int(running.progress["pid"])
        assert gone(child, 30), f"crawl process {child} outlived its killed crawler"
        left = get_crawl(catalog, request.crawl_id)
        assert left is not None and left.state == "running"  # nobody said it ended
        assert left.progress["pages"] < len(every_page(slow_site, 3))
        again = start_serve(data, redis_url)
        try:
            done = wait_for(catalog, request.crawl_id, process=again)
        finally:
            log = stop_serve(again)
    pages = every_page(slow_site, 3)
    assert done.attempts == 2, log[-3000:]
    assert done.outcome is not None and done.outcome["pages"] == len(pages)
    fetched = fetched_pages(data)
    assert len(fetched) == len(set(fetched)) == len(pages)
    assert set(fetched) == pages


def test_a_crawl_whose_process_dies_is_recovered_and_run_again_by_the_same_crawler(
        slow_site: TreeSite, tmp_path: Path, redis_url: str) -> None:
    data = tmp_path / "data"
    with initialized(data) as catalog:
        request = queue(catalog, slow_site, min_delay_s=0.02, per_host=1)
        serve = start_serve(data, redis_url)
        try:
            running = wait_for(catalog, request.crawl_id, states=("running",), pages=30,
                               process=serve)
            os.kill(int(running.progress["pid"]), signal.SIGKILL)
            done = wait_for(catalog, request.crawl_id, process=serve)
        finally:
            log = stop_serve(serve)
    pages = every_page(slow_site, 3)
    assert "died (exit code -9)" in log and done.attempts == 2, log[-3000:]
    assert done.outcome is not None and done.outcome["stopped_because"] == "frontier exhausted"
    fetched = collections.Counter(fetched_pages(data))
    assert set(fetched) == pages  # the dead process's page records came back from its journal
    # Fetched again: only the URLs past its last durable watermark. Checkpoints come every
    # 50 ms and pages 20 ms apart, so the ones handled since the last checkpoint (two at
    # most, a third when a loaded machine delays a checkpoint) and the one in flight; not
    # the 30+ it had fetched.
    assert sum(n - 1 for n in fetched.values()) <= 4, fetched.most_common(6)


def test_a_stopped_crawler_puts_its_crawls_back_in_the_queue_and_the_next_one_ends_them(
        slow_site: TreeSite, tmp_path: Path, redis_url: str) -> None:
    data = tmp_path / "data"
    with initialized(data) as catalog:
        request = queue(catalog, slow_site, min_delay_s=0.02, per_host=1)
        serve = start_serve(data, redis_url)
        try:
            wait_for(catalog, request.crawl_id, states=("running",), pages=20, process=serve)
        finally:
            stop_serve(serve)
        back = get_crawl(catalog, request.crawl_id)
        assert back is not None and back.state == "queued" and back.claimed_by is None
        assert 20 <= back.progress["pages"] < len(every_page(slow_site, 3))
        assert not crawler_presence(catalog).alive  # it said it stopped
        again = start_serve(data, redis_url)
        try:
            done = wait_for(catalog, request.crawl_id, process=again)
        finally:
            stop_serve(again)
    fetched = fetched_pages(data)
    assert done.attempts == 2 and done.outcome is not None
    assert len(fetched) == len(set(fetched)) == len(every_page(slow_site, 3))


def test_a_crawl_queued_with_no_crawler_running_stays_queued(
        site: TreeSite, tmp_path: Path) -> None:
    with initialized(tmp_path / "data") as catalog:
        request = queue(catalog, site)
        waiting = list_crawls(catalog, states=("queued",))
        presence = crawler_presence(catalog)
    assert [r.crawl_id for r in waiting] == [request.crawl_id]
    assert waiting[0].claimed_by is None and waiting[0].attempts == 0
    assert not presence.alive
    assert "no crawler has ever run" in presence.describe()
