"""Dagit on demo data, in headless Chromium: what a user sees and launches from the UI.

The code location loads; the lineage has the expected edges; a backfill of two partitions
of one asset alone completes (blobs, replica_copies); each asset check runs on its own; a
metadata plot renders; a sensor turned on ticks; a replica_copies partition shows its own
prefix's counts and its run's log the INFO summary; freshness and check states render.
Outcomes are read back from Dagit's GraphQL API, the one its pages use. Timeouts only bound a
failure (the backfill daemon looks every 30 s); they are not performance assertions.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from archive_testkit.dagit import LOCATION, Dagit, DagitError
from tests.ui import dagit_api as api
from tests.ui.dagit_pages import (
    FRESHNESS_STATES,
    Screenshots,
    check_blocking_note,
    check_row,
    execute_check,
    freshness_state,
    graph_node,
    launch_backfill,
    metadata_value,
    open_lineage,
    open_materialize_dialog,
    partition_metadata,
    run_log_lines,
    select_keys,
    sensor_switch,
    show_metadata_plots,
    tick_rows,
)
from tests.ui.demo_data import DemoData, referenced_blobs_per_prefix

# The module's runs share two cores with whatever else runs: a generous bound, not a target.
pytestmark = [pytest.mark.ui, pytest.mark.timeout(600)]

EXPECTED_EDGES = {("snapshots", "blobs"), ("blobs", "views"), ("crawl_segments", "captures"),
                  ("blobs", "replica_copies"), ("captures", "replica_copies")}
ASSETS = sorted({asset for edge in EXPECTED_EDGES for asset in edge})
ASSETS_WITH_CHECKS = {"blobs", "views", "replica_copies", "captures"}
SENSOR = "captures_sensor"
BACKFILL_TIMEOUT = 180.0  # two or three passes of the backfill daemon (every 30 s)
RUN_TIMEOUT = 240.0
LAUNCH_TIMEOUT = 30.0
BACKFILLED = ["blobs", "replica_copies"]


def test_code_location_loads_without_errors(page: Page, dagit: Dagit,
                                            screenshots: Screenshots) -> None:
    assert dagit.location_error() is None
    page.goto("/locations")
    expect(page.get_by_text(LOCATION, exact=True).first).to_be_visible()
    expect(page.get_by_text("Loaded", exact=True)).to_be_visible()
    expect(page.get_by_text(re.compile(r"^(Failed|View error)$"))).to_have_count(0)
    screenshots.take(page, "dagit-code-location")
    statuses = dagit.graphql("""{ instance { daemonHealth { allDaemonStatuses {
        daemonType required healthy lastHeartbeatErrors { message } } } } }""")
    unhealthy = [s for s in statuses["instance"]["daemonHealth"]["allDaemonStatuses"]
                 if s["required"] and not s["healthy"]]
    assert not unhealthy


def test_lineage_shows_the_expected_edges(page: Page, dagit: Dagit,
                                          screenshots: Screenshots) -> None:
    edges = {edge for edge in api.asset_graph(dagit).edges if set(edge) <= set(ASSETS)}
    assert edges == EXPECTED_EDGES
    open_lineage(page)
    for asset in ASSETS:
        expect(graph_node(page, asset)).to_be_visible()
    screenshots.take(page, "dagit-lineage", docs=True)


@pytest.fixture(scope="module")
def backfills() -> dict[str, str]:
    """Backfill ids by asset, from the launch tests to the tests awaiting them (later in the
    module: the checks and the sensor run while the backfill daemon does its passes)."""
    return {}


@pytest.mark.parametrize("asset", BACKFILLED)
def test_backfill_of_one_asset_alone_launches_from_the_ui(
        asset: str, page: Page, dagit: Dagit, demo: DemoData, backfills: dict[str, str],
        screenshots: Screenshots) -> None:
    partitions = _partitions(demo, asset)
    before = {b["id"] for b in api.backfills_of(dagit, asset)}
    try:
        dialog = open_materialize_dialog(page, asset)
        select_keys(page, dialog, partitions)
        screenshots.take(page, f"dagit-backfill-{asset}-dialog")
        launch_backfill(dialog)
        created = dagit.wait_for(f"the {asset} backfill to be created", lambda: [
            b for b in api.backfills_of(dagit, asset) if b["id"] not in before],
            timeout=LAUNCH_TIMEOUT)
    except (PlaywrightError, AssertionError, DagitError) as exc:
        shot = screenshots.take(page, f"dagit-backfill-{asset}-launch-failed")
        pytest.fail(f"launching the {asset} backfill from the UI failed: {exc}\n"
                    f"on the page ({shot}): {_alerts(page)}")
    backfills[asset] = created[0]["id"]
    found = api.backfill(dagit, backfills[asset])
    assert sorted(found["partitionNames"]) == sorted(partitions)


def test_each_asset_check_executes_on_its_own(page: Page, dagit: Dagit,
                                              screenshots: Screenshots) -> None:
    checks = [(asset, check) for asset, names in sorted(api.asset_graph(dagit).checks.items())
              for check in names]
    assert {asset for asset, _ in checks} >= ASSETS_WITH_CHECKS, checks
    runs = {}
    for asset, check in checks:
        before = api.run_ids(dagit)
        execute_check(page, asset, check)
        new = dagit.wait_for(f"the run of check {check}", lambda b=before: [
            r["id"] for r in api.runs_since(dagit, b) if r["assetCheckSelection"]],
            timeout=LAUNCH_TIMEOUT)
        runs[(asset, check)] = new[0]

    problems = []
    for (asset, check), run_id in runs.items():
        run = dagit.wait_for(f"run {run_id} of check {check}",
                             lambda r=run_id: api.finished_run(dagit, r), timeout=RUN_TIMEOUT)
        selected = [c["name"] for c in run["assetCheckSelection"] or []]
        evaluated = api.check_evaluations(dagit, run_id)
        if run["status"] != "SUCCESS":
            problems.append(f"{asset}/{check}: run {run_id} {run['status']}: "
                            f"{api.run_errors(dagit, run_id)}")
        elif selected != [check] or run["assetSelection"]:
            problems.append(f"{asset}/{check}: run {run_id} selected {selected} and assets "
                            f"{run['assetSelection']}, not the check alone")
        elif evaluated != [(asset, check, True)]:
            problems.append(f"{asset}/{check}: run {run_id} evaluated {evaluated}")
    assert not problems, "\n".join(problems)
    # An asset no backfill is materializing, so its checks' status is this test's runs.
    asset, check = next((a, c) for a, c in checks if a not in BACKFILLED)
    page.goto(f"/assets/{asset}?view=checks&checkDetail={check}")
    expect(page.get_by_text("Succeeded").first).to_be_visible()
    screenshots.take(page, "dagit-asset-checks", docs=True)


def test_sensor_turned_on_in_the_ui_ticks(page: Page, dagit: Dagit,
                                          screenshots: Screenshots) -> None:
    assert api.sensor(dagit, SENSOR)["sensorState"]["status"] == "STOPPED"
    switch, label = sensor_switch(page, SENSOR)
    expect(switch).not_to_be_checked()
    turned_on = time.time()
    label.click()
    expect(switch).to_be_checked()
    ticks = dagit.wait_for(f"a tick of {SENSOR}", lambda: [
        t for t in api.sensor(dagit, SENSOR)["sensorState"]["ticks"]
        if float(t["timestamp"]) >= turned_on - 1], timeout=RUN_TIMEOUT)
    assert ticks[0]["status"] != "FAILURE", ticks[0]["error"]
    page.reload()
    expect(tick_rows(page).first).to_be_visible()
    screenshots.take(page, "dagit-sensor-ticks", docs=True)


@pytest.mark.parametrize("asset", BACKFILLED)
def test_backfill_of_one_asset_alone_completes(asset: str, backfills: dict[str, str],
                                               demo: DemoData, dagit: Dagit, page: Page,
                                               screenshots: Screenshots) -> None:
    backfill_id = backfills.get(asset)
    assert backfill_id, f"not launched: see test_backfill_of_one_asset_alone_launches_from_the_ui[{asset}]"
    done = dagit.wait_for(f"the {asset} backfill {backfill_id} to finish",
                          lambda: api.finished_backfill(dagit, backfill_id),
                          timeout=BACKFILL_TIMEOUT, interval=2)
    page.goto(f"/runs/b/{backfill_id}")
    expect(page.get_by_text(backfill_id).first).to_be_visible()
    screenshots.take(page, f"dagit-backfill-{asset}", docs=asset == "blobs")

    runs = done["runs"]
    failed = {r["id"]: api.run_errors(dagit, r["id"]) for r in runs if r["status"] != "SUCCESS"}
    assert done["status"] in ("COMPLETED_SUCCESS", "COMPLETED") and not failed, (
        f"backfill {backfill_id} of {asset} ended {done['status']}: "
        f"{(done.get('error') or {}).get('message', '')}\nfailed runs: {failed}")
    assert sorted(key for r in runs for key in _run_partitions(r)) == sorted(_partitions(demo, asset))
    assert all([a["path"] for a in r["assetSelection"]] == [[asset]] for r in runs)


def test_metadata_plot_is_visible(page: Page, dagit: Dagit, backfills: dict[str, str],
                                  screenshots: Screenshots) -> None:
    plotted = _assets_materialized_twice(dagit)
    assert plotted, ("no asset has two materializations to plot: the backfills make them "
                     f"(see their tests): {backfills}")
    asset = "blobs" if "blobs" in plotted else plotted[0]
    plots = show_metadata_plots(page, asset)
    expect(plots.first).to_be_visible()
    plots.first.scroll_into_view_if_needed()
    screenshots.take(page, "dagit-metadata-plot", docs=True)


def test_a_prefix_shows_its_own_counts_and_the_run_its_summary(
        page: Page, dagit: Dagit, demo: DemoData, backfills: dict[str, str],
        screenshots: Screenshots) -> None:
    """Each replica_copies partition of the backfill's range shows its own prefix's blob
    count (the catalog's referenced blobs of that prefix), and the run's log its INFO summary."""
    backfill_id = backfills.get("replica_copies")
    assert backfill_id, "not launched: see test_backfill_of_one_asset_alone_launches_from_the_ui"
    done = api.finished_backfill(dagit, backfill_id)
    assert done, f"the replica_copies backfill {backfill_id} has not finished (see its test)"
    expected = referenced_blobs_per_prefix(demo.data_dir)
    assert max(expected[p] for p in demo.hash_prefixes) > 0, expected  # a count to compare
    # The busiest prefix last: the screenshot shows a count that is not 0.
    for prefix in sorted(demo.hash_prefixes, key=lambda p: expected.get(p, 0)):
        section = partition_metadata(page, "replica_copies", prefix)
        expect(metadata_value(section, "prefix_blobs_checked")).to_have_text(
            f"{expected.get(prefix, 0):,}")
    screenshots.take(page, "dagit-partition-metadata", docs=True)
    run_id = done["runs"][0]["id"]
    expect(run_log_lines(page, run_id, "blobs checked").first).to_be_visible()
    screenshots.take(page, "dagit-run-summary", docs=True)


def test_freshness_and_check_states_render(page: Page, dagit: Dagit,
                                           screenshots: Screenshots) -> None:
    """The freshness policy's state is evaluated (init's dagster.yaml enables it), a check
    executed earlier reads Succeeded, and a blocking check says so."""
    evaluated = [s for s in FRESHNESS_STATES if s != "Not evaluated"]
    expect(freshness_state(page, "replica_copies")).to_have_text(
        re.compile("^(" + "|".join(evaluated) + ")$"))
    screenshots.take(page, "dagit-freshness", docs=True)
    expect(check_row(page, "views", "view_links_healthy")).to_contain_text("Succeeded")
    expect(check_blocking_note(page, "blobs", "blob_files_present")).to_have_text(
        "This is a blocking asset check.")
    expect(check_blocking_note(page, "views", "view_links_healthy")).to_have_text(
        "This is a non-blocking asset check.")
    screenshots.take(page, "dagit-check-blocking")


def _partitions(demo: DemoData, asset: str) -> list[str]:
    return demo.snapshot_days if asset == "blobs" else demo.hash_prefixes


def _run_partitions(run: dict[str, object]) -> list[str]:
    """The partition of a run, or the ends of its range (replica_copies backfills a range of
    prefixes in one run: a selection of 00 and ff is two one-prefix ranges)."""
    tags = run["tags"]
    assert isinstance(tags, list)
    found = {str(t["key"]): str(t["value"]) for t in tags}
    if "dagster/partition" in found:
        return [found["dagster/partition"]]
    start, end = found["dagster/asset_partition_range_start"], found["dagster/asset_partition_range_end"]
    return [start] if start == end else [start, end]


def _assets_materialized_twice(dagit: Dagit) -> list[str]:
    nodes = dagit.graphql("""{ assetNodes { assetKey { path }
        assetMaterializations(limit: 2) { timestamp } } }""")["assetNodes"]
    return sorted("/".join(n["assetKey"]["path"]) for n in nodes
                  if len(n["assetMaterializations"]) >= 2)


def _alerts(page: Page) -> str:
    """The text of the dialogs, alerts and toasts on the page (what Dagit said went wrong)."""
    found = page.locator("[role=alert], [role=dialog], [role=status], .dagster-dialog")
    return " | ".join(t.strip() for t in found.all_inner_texts() if t.strip())[:2000] or "none"
