"""The same crawl ingested into a PostgreSQL catalog replays exactly as on SQLite: mementos,
TimeGate, TimeMaps, calendars and CDX lines answer the same, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

from archive_pipelines.catalog import Catalog
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.replay import (
    GALLERY_URL,
    HOST,
    SCRIPTED_URL,
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    running_replay,
)


def test_postgresql_answers_as_sqlite(replay_data: Path, replay_catalog: Catalog,
                                      postgres_url: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(replay_data, data_dir, symlinks=True)
    with parts_of(data_dir, postgres_url) as parts:
        ingest_all(parts, data_dir)
    first, second = captures_of(replay_catalog, GALLERY_URL)
    paths = [memento_path(first), memento_path(second), f"/web/2/{GALLERY_URL}",
             memento_path(captures_of(replay_catalog, SCRIPTED_URL)[0]),
             f"/web/{GALLERY_URL}", f"/timemap/link/{GALLERY_URL}", f"/timemap/json/{GALLERY_URL}",
             f"/web/*/{GALLERY_URL}", f"/web/*/http://{HOST}/assets/*?output=json",
             f"/cdx/search/cdx?url={HOST}/&matchType=host&output=json",
             f"/web/29991231/http://{HOST}/assets/img/moved.png"]
    postgres = Catalog.open(postgres_url)
    try:
        with running_replay(make_replayer(replay_data, replay_catalog)) as on_sqlite, \
                running_replay(make_replayer(data_dir, postgres)) as on_postgres:
            for path in paths:
                expected = fetch(on_sqlite.port, path)
                got = fetch(on_postgres.port, path)
                assert expected.status in (200, 301, 302), (path, expected.status)
                assert (got.status, got.body) == (expected.status, expected.body), path
                for name in ("Link", "Location", "Memento-Datetime", "Content-Type"):
                    assert got.header(name) == expected.header(name), (path, name)
    finally:
        postgres.close()
