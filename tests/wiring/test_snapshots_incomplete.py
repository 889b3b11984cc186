"""The `snapshots` asset shows a day's incomplete snapshots (an ingest running or interrupted)
in its metadata, with the command that finishes each."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from archive_pipelines.assets.snapshots import snapshots
from archive_pipelines.datadir import initialize
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.snapshot_ingest import open_ingest, run_ingest
from tests.helpers.storage import write_tree

DAY = "2024-12-25"


def _metadata(data: Path, instance: dg.DagsterInstance) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    instance.add_dynamic_partitions("snapshot_days", [DAY])  # what the days sensor does
    result = dg.materialize([snapshots], partition_key=DAY, instance=instance, resources={
        "storage": StorageResource(catalog=CatalogResource(settings=settings))})
    assert result.success
    [materialization] = result.asset_materializations_for_node("snapshots")
    return {key: value.value for key, value in materialization.metadata.items()}


def test_the_snapshots_asset_lists_the_days_incomplete_snapshots(
        tmp_path: Path, dagster_instance: dg.DagsterInstance) -> None:
    data = tmp_path / "data"
    settings = load_settings(data, environ={})
    initialize(settings)
    src = write_tree(tmp_path / "site", {"index.html": b"<html>hi</html>"})
    with open_storage(settings) as parts:
        ingest = open_ingest(parts.catalog, url="https://a.test/", extractor="wget", source=src,
                             timestamp="1735128000", created_at=datetime(2024, 12, 25, 12,
                                                                         tzinfo=UTC))
        meta = _metadata(data, dagster_instance)
        assert meta["day_incomplete_snapshots"] == 1 and meta["day_snapshots"] == 1
        listed = str(meta["incomplete_snapshots"])
        assert ingest.snapshot_id in listed
        assert f"archive-pipelines ingest --resume {ingest.snapshot_id}" in listed
        run_ingest(parts.catalog, parts.primary, parts.views, work=parts.work, ingest=ingest)
        parts.catalog.engine.dispose()
    meta = _metadata(data, dagster_instance)
    assert meta["day_incomplete_snapshots"] == 0 and meta["incomplete_snapshots"] == "none"
