"""A data dir holding two crawls of the test web's asset gallery and a home page (ingested),
made once for the package, and a replay server over it; another whose home page changed
between its two crawls."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.catalog import Catalog
from archive_testkit.testweb import TestWeb, serve_in_background
from tests.helpers.replay import (
    GALLERY_URL,
    HOME_URL,
    SCRIPTED_URL,
    RunningReplay,
    crawled_data_dir,
    make_replayer,
    opened_catalog,
    running_replay,
)


@pytest.fixture(scope="package")
def replay_data(captures_web: TestWeb, redis_url: str,
                tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two crawls (a second apart) of the gallery, its assets, the host's home page and a
    page its script builds."""
    return crawled_data_dir(tmp_path_factory.mktemp("replay") / "data",
                            webs=(captures_web, captures_web), redis_url=redis_url,
                            name=f"replay-{uuid.uuid4().hex[:8]}",
                            seeds=(GALLERY_URL, HOME_URL, SCRIPTED_URL))


@pytest.fixture(scope="package")
def replay_catalog(replay_data: Path) -> Iterator[Catalog]:
    with opened_catalog(replay_data) as catalog:
        yield catalog


@pytest.fixture(scope="module")
def replay(replay_data: Path, replay_catalog: Catalog) -> Iterator[RunningReplay]:
    with running_replay(make_replayer(replay_data, replay_catalog)) as running:
        yield running


@pytest.fixture(scope="package")
def changed_web(captures_web: TestWeb) -> Iterator[TestWeb]:
    """The test web under another seed: the same host names, other pages (the site changed)."""
    changed = captures_web.config.with_changes(seed=captures_web.config.seed + 1)
    with serve_in_background(changed) as running:
        yield running


@pytest.fixture(scope="package")
def changed_data(captures_web: TestWeb, changed_web: TestWeb, redis_url: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two crawls of the home page, a second apart: from the test web, then from the test
    web changed."""
    return crawled_data_dir(tmp_path_factory.mktemp("changed") / "data",
                            webs=(captures_web, changed_web), redis_url=redis_url,
                            name=f"changed-{uuid.uuid4().hex[:8]}", seeds=(HOME_URL,))
