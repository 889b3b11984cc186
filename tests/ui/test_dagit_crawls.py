"""A crawl definition in Dagit, launched from its launchpad, captures a site again.

A data dir of this module's own defines one crawl, `tree`, of a small site on loopback
(`[[crawls]]` in archive.toml, with a weekly cadence), and a `frontier-service serve` runs on
it throughout. A first crawl is queued from the command line as Dagit starts; then, in
headless Chromium, the definition's schedule shows in Dagit, `crawl_job` is launched from
its launchpad with the definition pasted into the config editor, the crawler takes the crawl
and finishes it, the crawls sensor turned on in the UI records both crawls in the `crawls`
asset (a partition per crawl_id, its metadata on the partition's page), and the captures
sensor turned on in the UI ingests their pages: every page of the site has two captures, one
per crawl, each with its own time (`archive-pipelines captures`), both in the page's replay
calendar and each replayed at its own time.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from playwright.sync_api import Page, expect

from archive_pipelines.catalog import Catalog, CrawlRequest
from archive_pipelines.crawls.requests import get_crawl, list_crawls
from archive_pipelines.replay.memento import http_date
from archive_pipelines.settings import load_settings
from archive_testkit.dagit import TERMINAL_RUN, Dagit, tune_test_instance
from tests.frontier_service.service.cli_runs import REPO, child_env
from tests.frontier_service.service.serve_runs import FAST, definition_toml, every_page
from tests.frontier_service.service.tree_site import HOST, TreeSite, serve_tree
from tests.helpers.cli import run_cli
from tests.helpers.replay import (
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    opened_catalog,
    running_replay,
)
from tests.ui import dagit_api as api
from tests.ui.dagit_pages import (
    Screenshots,
    launch_from_launchpad,
    metadata_value,
    partition_metadata,
    run_log_lines,
    schedule_details,
    schedule_switch,
    sensor_switch,
)
from tests.ui.demo_data import clean_environ

pytestmark = [pytest.mark.ui, pytest.mark.timeout(600)]

DEFINITION = "tree"
SCHEDULE = "crawl_tree_schedule"
CADENCE = "@weekly"
DEPTH = 3  # the definition's max_depth (definition_toml)
CRAWL_TIMEOUT = 90.0  # a crawl of the site's 19 pages takes seconds
RUN_TIMEOUT = 120.0
TICK_TIMEOUT = 60.0
CRAWL_CONFIG = f"ops:\n  queue_crawl_op:\n    config:\n      definition: {DEFINITION}\n"


@pytest.fixture(scope="module")
def site() -> Iterator[TreeSite]:
    """19 pages to depth 3."""
    with serve_tree(wide=2, deep=2) as served:
        yield served


@pytest.fixture(scope="module")
def crawl_data(site: TreeSite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialized data dir whose archive.toml defines the crawl `tree` of the site."""
    data = tmp_path_factory.mktemp("ui-crawls") / "data"
    data.mkdir()
    (data / "archive.toml").write_text(definition_toml(site, DEFINITION)
                                       + f'cadence = "{CADENCE}"\n', encoding="utf-8")
    done = run_cli("--data-dir", str(data), "init",
                   env={"DAGSTER_HOME": str(data / "dagster")})
    assert done.returncode == 0, done.stdout + done.stderr
    return data


@pytest.fixture(scope="module")
def catalog(crawl_data: Path) -> Iterator[Catalog]:
    opened = Catalog.open(load_settings(crawl_data, environ=clean_environ()).catalog_url)
    try:
        yield opened
    finally:
        opened.close()


class Serve:
    """`frontier-service serve` on the data dir, its log in a file (read on failure)."""

    def __init__(self, data: Path, redis_url: str) -> None:
        self.log_path = data / "logs" / "serve.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[bytes] = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "frontier_service", "--data-dir", str(data), "--redis-url",
             redis_url, "serve", *FAST], cwd=REPO, env=child_env(),
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]

    def wait_finished(self, catalog: Catalog, crawl_id: str) -> CrawlRequest:
        deadline = time.monotonic() + CRAWL_TIMEOUT
        while True:
            assert self.process.poll() is None, (
                f"serve exited {self.process.returncode}:\n{self.log_tail()}")
            request = get_crawl(catalog, crawl_id)
            assert request is not None, f"no crawl {crawl_id}"
            if request.state in ("finished", "failed", "cancelled"):
                return request
            assert time.monotonic() < deadline, (
                f"crawl {crawl_id} still {request.state} after {CRAWL_TIMEOUT:.0f} s: "
                f"{request}\n{self.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@pytest.fixture(scope="module")
def serve(crawl_data: Path, redis_url: str) -> Iterator[Serve]:
    running = Serve(crawl_data, redis_url)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def first_crawl(crawl_data: Path, serve: Serve) -> str:
    """An earlier crawl of the definition, queued from the command line (as Dagit starts)."""
    queued = run_cli("--data-dir", str(crawl_data), "crawls", "queue", DEFINITION)
    assert queued.returncode == 0, queued.stdout + queued.stderr
    return queued.stdout.splitlines()[0].removeprefix("queued crawl ").split()[0]


@pytest.fixture(scope="module")
def dagit(crawl_data: Path, first_crawl: str) -> Iterator[Dagit]:
    """Dagit on this module's data dir, every sensor and schedule stopped until a test
    starts one (the crawler meanwhile takes the first crawl)."""
    home = crawl_data / "dagster"
    tune_test_instance(home)
    server = Dagit(data_dir=crawl_data, dagster_home=home,
                   log_path=crawl_data / "logs" / "dagit.log", environ=clean_environ())
    server.start(automation=False)
    try:
        server.graphql("mutation { setNuxSeen }")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def crawled() -> dict[str, str]:
    """The crawl ids by how they were queued ("cli", "dagit"), for the later tests."""
    return {}


def test_the_definition_shows_as_its_schedule(page: Page, dagit: Dagit,
                                              screenshots: Screenshots) -> None:
    details = schedule_details(page, SCHEDULE)
    expect(details.get_by_role("row", name=re.compile("^Target")).get_by_role(
        "link", name="crawl_job")).to_be_visible()
    expect(details.get_by_role("row", name=re.compile("^Schedule"))).to_contain_text(
        f"({CADENCE})")
    expect(details.get_by_role("row", name=re.compile("^Description"))).to_contain_text(
        f"Queues a crawl of {DEFINITION}")
    assert _schedule(dagit) == {"cronSchedule": CADENCE, "scheduleState": {"status": "STOPPED"}}
    # On, as it is by default outside the tests (its next tick: midnight on Sunday, UTC).
    switch, label = schedule_switch(page, SCHEDULE)
    expect(switch).not_to_be_checked()
    label.click()
    expect(switch).to_be_checked()
    dagit.wait_for(f"{SCHEDULE} to run", lambda: _schedule(dagit)["scheduleState"][
        "status"] == "RUNNING", timeout=TICK_TIMEOUT)
    screenshots.take(page, "dagit-crawl-schedule", docs=True)


def test_crawl_job_launched_from_the_launchpad_crawls_again(
        page: Page, dagit: Dagit, catalog: Catalog, serve: Serve, site: TreeSite,
        first_crawl: str, crawled: dict[str, str], screenshots: Screenshots) -> None:
    first = serve.wait_finished(catalog, first_crawl)
    assert first.state == "finished" and first.outcome is not None, first
    crawled["cli"] = first_crawl

    run_id = launch_from_launchpad(page, "crawl_job", CRAWL_CONFIG)
    run = dagit.wait_for(f"crawl_job run {run_id} to finish",
                         lambda: api.finished_run(dagit, run_id), timeout=RUN_TIMEOUT)
    assert run is not None and run["status"] == "SUCCESS", api.run_errors(dagit, run_id)
    ours = [r for r in list_crawls(catalog, name=DEFINITION)
            if r.requested_by == f"dagster run {run_id}"]
    assert len(ours) == 1, list_crawls(catalog, name=DEFINITION)
    second = ours[0].crawl_id
    assert second != first_crawl
    expect(run_log_lines(page, run_id, f"queued crawl {second}").first).to_be_visible()
    screenshots.take(page, "dagit-crawl-run")

    done = serve.wait_finished(catalog, second)
    assert done.state == "finished" and done.outcome is not None, done
    pages = len(every_page(site, DEPTH))
    assert done.outcome["pages"] == first.outcome["pages"] == pages, (first.outcome, done.outcome)
    # The site did not change: the second crawl fetched every page again, and stored no body.
    assert first.outcome["new_bodies"] > 0 and done.outcome["new_bodies"] == 0, (
        first.outcome, done.outcome)
    crawled["dagit"] = second


def test_the_crawls_asset_shows_each_crawl(page: Page, dagit: Dagit, site: TreeSite,
                                           crawled: dict[str, str],
                                           screenshots: Screenshots) -> None:
    assert set(crawled) == {"cli", "dagit"}, "see test_crawl_job_launched_from_the_launchpad"
    _turn_on(page, dagit, "crawls_sensor")
    for how in ("cli", "dagit"):  # the one launched from Dagit last, for the screenshot
        section = partition_metadata(page, "crawls", crawled[how])
        expect(metadata_value(section, "state")).to_have_text("finished")
        expect(metadata_value(section, "definition")).to_have_text(DEFINITION)
        expect(metadata_value(section, "pages")).to_have_text(
            str(len(every_page(site, DEPTH))))
        expect(metadata_value(section, "stopped_because")).to_have_text("frontier exhausted")
    expect(metadata_value(section, "requested_by")).to_have_text(
        re.compile(r"^dagster run [0-9a-f-]{36}$"))
    screenshots.take(page, "dagit-crawls-partition", docs=True)


def test_the_pages_are_captured_once_per_crawl(page: Page, dagit: Dagit, site: TreeSite,
                                               crawl_data: Path,
                                               crawled: dict[str, str]) -> None:
    assert set(crawled) == {"cli", "dagit"}, "see test_crawl_job_launched_from_the_launchpad"
    _turn_on(page, dagit, "captures_sensor")
    runs = dagit.wait_for("the captures sensor's runs to finish",
                          lambda: _finished_runs(dagit, "captures_job"), timeout=RUN_TIMEOUT)
    failed = {r["id"]: api.run_errors(dagit, r["id"]) for r in runs if r["status"] != "SUCCESS"}
    assert not failed, failed

    listed = run_cli("--data-dir", str(crawl_data), "captures", f"http://{HOST}/",
                     "--prefix", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    captures = json.loads(listed.stdout)["captures"]
    per_url: dict[str, list[dict[str, object]]] = {}
    for capture in captures:
        per_url.setdefault(str(capture["url"]), []).append(capture)
    assert {url: len(found) for url, found in per_url.items()} == dict.fromkeys(
        every_page(site, DEPTH), 2)
    for url, found in per_url.items():
        times = {c["fetched_ms"] for c in found}
        sessions = {c["session_id"] for c in found}
        assert len(times) == 2 and len(sessions) == 2, (url, found)
    # One page as a person asks for it: two lines, each with its own time.
    one = run_cli("--data-dir", str(crawl_data), "captures", f"http://{HOST}/a1/b1/c2")
    assert one.returncode == 0, one.stderr
    lines = one.stdout.splitlines()
    assert lines[-1].startswith("2 capture(s)"), one.stdout
    assert lines[0].split()[0] != lines[1].split()[0], one.stdout
    _replayed_once_per_crawl(page, crawl_data, f"http://{HOST}/a1/b1/c2")


def _replayed_once_per_crawl(page: Page, crawl_data: Path, url: str) -> None:
    """The page's replay calendar, as a person opens it, lists both crawls' captures, and
    each memento is that capture at its own time."""
    with opened_catalog(crawl_data) as catalog, \
            running_replay(make_replayer(crawl_data, catalog)) as replay:
        captures = captures_of(catalog, url)
        assert len(captures) == 2 and captures[0].fetched_ms != captures[1].fetched_ms
        page.goto(f"http://127.0.0.1:{replay.port}/web/*/{url}")
        listed = page.locator("a[href*='/web/']").evaluate_all(
            "links => links.map(a => a.getAttribute('href'))")
        for capture in captures:
            assert memento_path(capture) in listed, (memento_path(capture), listed)
            answer = fetch(replay.port, memento_path(capture))
            assert answer.status == 200, (capture, answer.status)
            assert answer.header("Memento-Datetime") == http_date(capture.fetched_ms)


def _schedule(dagit: Dagit) -> dict[str, Any]:
    return dict(dagit.graphql("""query($s: ScheduleSelector!) { scheduleOrError(
        scheduleSelector: $s) { ... on Schedule { cronSchedule scheduleState { status } } } }""",
        {"s": {**api.REPOSITORY, "scheduleName": SCHEDULE}})["scheduleOrError"])


def _finished_runs(dagit: Dagit, job: str) -> list[dict[str, Any]]:
    """The job's runs once there are some and every one has ended, else none."""
    runs = api.runs_of_job(dagit, job)
    return runs if all(r["status"] in TERMINAL_RUN for r in runs) else []


def _turn_on(page: Page, dagit: Dagit, sensor: str) -> None:
    """The sensor's Running switch clicked in the UI, then its first tick (not a failure)."""
    switch, label = sensor_switch(page, sensor)
    expect(switch).not_to_be_checked()
    turned_on = time.time()
    label.click()
    expect(switch).to_be_checked()
    ticks = dagit.wait_for(f"a tick of {sensor}", lambda: [
        t for t in api.sensor(dagit, sensor)["sensorState"]["ticks"]
        if float(t["timestamp"]) >= turned_on - 1 and t["status"] != "STARTED"],
        timeout=TICK_TIMEOUT)
    assert ticks[0]["status"] != "FAILURE", ticks[0]["error"]
