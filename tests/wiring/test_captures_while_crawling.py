"""A crawl that has gone idle closes its segment, and the captures sensor ingests it while
the crawler keeps running (the real crawler, as a subprocess, against a loopback site)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from archive_pipelines.assets.captures import captures
from archive_pipelines.captures.lookup import find_session
from archive_pipelines.datadir import initialize
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.sensors.captures import captures_sensor
from archive_pipelines.settings import Settings
from tests.frontier_service.service.cli_runs import finish, metric, start
from tests.frontier_service.service.tree_site import HOST, TreeSite, serve_tree
from tests.helpers.captures import open_parts
from tests.helpers.crawls import delete_keys

IDLE_S = 1.0


@pytest.fixture(autouse=True)
def _sqlite_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """The resources read the environment: keep a PostgreSQL DATABASE_URL of the run out."""
    monkeypatch.delenv("DATABASE_URL", raising=False)


@pytest.fixture
def site() -> Iterator[TreeSite]:
    with serve_tree(wide=5, deep=2) as served:
        yield served


def _resources(data: Path) -> dict[str, Any]:
    settings = SettingsResource(data_dir=str(data))
    catalog = CatalogResource(settings=settings)
    return {"settings": settings, "catalog": catalog, "storage": StorageResource(catalog=catalog)}


def _wait_for_segment(data: Path, process: Any, timeout: float = 30.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        found = sorted((data / "sessions").glob("*/*/*.jsonl"))
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no segment closed within {timeout} s of an idle crawl")


def test_an_idle_crawls_segment_is_ingested_while_the_crawler_runs(
        site: TreeSite, tmp_path: Path, redis_url: str,
        dagster_instance: dg.DagsterInstance) -> None:
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    name = f"idle-{tmp_path.name[-12:]}"
    pages = site.pages_to_depth(1)
    # --exit-when-idle 0: a seeded run that keeps waiting for new URLs, as a service does.
    process, port = start(["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name",
                           name, "run", "--seed", f"http://{HOST}/", "--host-map",
                           f"{HOST}=127.0.0.1:{site.port}", "--allow-network", "127.0.0.0/8",
                           "--allowed-domain", HOST, "--max-depth", "1", "--min-delay", "0",
                           "--segment-idle-seconds", str(IDLE_S), "--exit-when-idle", "0",
                           "--progress-seconds", "0.5", "--loop", "asyncio"])
    try:
        segment = _wait_for_segment(data, process)
        session_id = segment.parent.name
        assert metric(port, "segments_closed_idle_total") == 1
        assert metric(port, "pages_total") == pages

        with dg.build_sensor_context(instance=dagster_instance,
                                     resources=_resources(data)) as context:
            tick = captures_sensor(context)
        assert isinstance(tick, dg.SensorResult)
        [request] = tick.run_requests or []
        assert request.partition_key == segment.parent.parent.name
        dagster_instance.add_dynamic_partitions("crawl_days", [request.partition_key])
        ran = dg.materialize([captures], partition_key=request.partition_key,
                             instance=dagster_instance, resources=_resources(data),
                             tags=request.tags)
        assert ran.success
        with open_parts(data) as parts:
            assert len(find_session(parts.catalog, session_id)) == pages
        assert process.poll() is None  # the crawl is still running: it was ingested meanwhile
        assert metric(port, "stopping") == 0
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        code, summary, err = finish(process)
        delete_keys(redis_url, name)
    assert code == 0, err[-3000:]
    assert summary["stopped"] == "SIGTERM" and summary["segments"] == 1, summary
    assert "no page archived for" in err and "closing the open segment" in err
    assert "idle for" in err and "waiting for new URLs" in err  # said once, not 0.0 pages/s
    assert err.count("0.0 pages/s") <= 2, err[-3000:]
