"""The `captures` asset checks a sample of the day's new browser captures against their replay
(figures in its metadata) and the `capture_qa` check fails listing the pages under
`qa.threshold`; a second run samples none (all checked), `sample_pages = 0` checks none."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from archive_pipelines.assets.capture_qa import CAPTURE_QA, capture_qa
from archive_pipelines.assets.captures import captures
from archive_pipelines.canonical_urls import canonicalize
from archive_pipelines.catalog import Catalog
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.settings import Settings
from archive_testkit.testweb.js_pages import FETCHED, FETCHED_JSON
from tests.qa.qa_crawls import page_url


@pytest.fixture(autouse=True)
def _sqlite_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)


def _resources(data: Path) -> dict[str, Any]:
    settings = SettingsResource(data_dir=str(data))
    catalog = CatalogResource(settings=settings)
    return {"settings": settings, "catalog": catalog, "storage": StorageResource(catalog=catalog)}


def _materialize(data: Path, day: str, instance: dg.DagsterInstance) -> tuple[dict[str, Any], Any]:
    result = dg.materialize([captures, capture_qa], partition_key=day, instance=instance,
                            resources=_resources(data), raise_on_error=False)
    [meta] = [{k: v.value for k, v in m.metadata.items()}
              for m in result.asset_materializations_for_node("captures")]
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == CAPTURE_QA
    return meta, check


def _lose_the_fetched_json(data: Path) -> None:
    """The store loses the fetched JSON's body once it is ingested (its blob file deleted):
    the fetched page's replay then misses it and the images its script would insert."""
    settings = Settings(data_dir=data)
    body = hashlib.sha256(canonicalize(page_url(FETCHED_JSON)).encode()).hexdigest()
    catalog = Catalog.open(settings.catalog_url)
    try:
        with catalog.reading() as tx:
            [capture] = [c for c in tx.captures.captures_by_url(body) if c.kind == "request"]
    finally:
        catalog.close()
    assert capture.body_sha256 is not None
    blob = next((data / "cas").rglob(capture.body_sha256 + "*"))
    blob.unlink()


def test_the_asset_samples_new_browser_captures_and_the_check_lists_those_under_the_threshold(
        browser_crawl: Path, tmp_path: Path, dagster_instance: dg.DagsterInstance) -> None:
    data = tmp_path / "data"
    shutil.copytree(browser_crawl, data, symlinks=True)
    (data / "archive.toml").write_text("[qa]\nsample_pages = 0\n")
    [day] = sorted({path.parent.parent.name for path in (data / "sessions").glob("*/*/*.jsonl")})
    dagster_instance.add_dynamic_partitions("crawl_days", [day])
    meta, check = _materialize(data, day, dagster_instance)  # sampling off: ingest only
    assert meta["qa_checked"] == 0 and meta["run_pages"] > 0
    assert check.passed and check.metadata["below_threshold"].value == 0

    _lose_the_fetched_json(data)
    catalog = Catalog.open(Settings(data_dir=data).catalog_url)
    try:
        browser_pages = catalog.qa.unchecked_browser_pages(day)
        assert len(browser_pages) >= 10
        (data / "archive.toml").write_text("[qa]\nsample_pages = 100\nthreshold = 0.9\n")
        meta, check = _materialize(data, day, dagster_instance)  # nothing new to ingest; QA runs
        scores = {r.url: r.check.score for r in catalog.qa.latest(browser_pages).values()}
    finally:
        catalog.close()
    assert meta["run_pages"] == 0
    assert meta["qa_checked"] == len(browser_pages) == len(scores)
    under = sorted(url for url, score in scores.items() if score < 0.9)
    assert page_url(FETCHED) in under
    assert meta["qa_below_threshold"] == len(under) and meta["qa_threshold"] == 0.9
    assert 0 <= meta["qa_median_score"] <= 1
    assert not check.passed and check.metadata["below_threshold"].value == len(under)
    listed = sorted(line[2:].split(": score ")[0] for line in
                    str(check.metadata["pages"].value).splitlines())
    assert listed == under
    assert sorted(line[2:].split(": score ")[0]
                  for line in str(meta["qa_below"]).splitlines()) == under

    meta, check = _materialize(data, day, dagster_instance)  # every browser capture checked
    assert meta["qa_checked"] == 0 and not check.passed
