"""Captures replay wherever their records lie: a compacted crawl session (zstd JSON lines)
and an imported WARC (our export of the crawl, imported into a fresh data dir): the same
bytes, the recorded headers found."""

from __future__ import annotations

import hashlib
import shutil
from datetime import timedelta
from pathlib import Path

from archive_pipelines.captures.compaction import compact_sessions
from archive_pipelines.catalog import Catalog, utcnow
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from tests.helpers.captures import capture_primary, parts_of
from tests.helpers.cli import run_cli
from tests.helpers.replay import (
    GALLERY_URL,
    HOST,
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    opened_catalog,
    running_replay,
)

IMAGE = f"http://{HOST}/assets/img/photo-400.png"


def replayed_the_same(data_dir: Path, catalog: Catalog, reference: Catalog) -> None:
    """Every capture of the gallery and of an image replays (id_) the bytes it had in the
    reference crawl, with the recorded Date header kept aside."""
    with running_replay(make_replayer(data_dir, catalog)) as replay:
        for url in (GALLERY_URL, IMAGE):
            expected = {c.body_sha256 for c in captures_of(reference, url)}
            found = captures_of(catalog, url)
            assert found, url
            for capture in found:
                answer = fetch(replay.port, memento_path(capture, "id_"))
                assert answer.status == 200, (url, answer.text)
                assert hashlib.sha256(answer.body).hexdigest() in expected
                assert answer.header("X-Archive-Orig-Date"), "the recorded headers were read"


def test_a_compacted_session_replays(replay_data: Path, replay_catalog: Catalog,
                                     tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(replay_data, data_dir, symlinks=True)
    with parts_of(data_dir) as parts:
        report = compact_sessions(parts.catalog, capture_primary(parts), data_dir,
                                  older_than=timedelta(0), now=utcnow() + timedelta(days=1))
        assert [s.outcome for s in report.sessions] == ["compacted", "compacted"]
    with opened_catalog(data_dir) as catalog:
        assert all(c.index_path.endswith(".jsonl.zst") for c in captures_of(catalog, IMAGE))
        replayed_the_same(data_dir, catalog, replay_catalog)


def test_an_imported_warc_replays(replay_data: Path, replay_catalog: Catalog,
                                  tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(replay_data, source, symlinks=True)
    warc = tmp_path / "crawl.warc.gz"
    exported = run_cli("--data-dir", str(source), "export-warc", str(warc))
    assert exported.returncode == 0, exported.stderr
    target = tmp_path / "imported"
    initialize(Settings(data_dir=target))
    imported = run_cli("--data-dir", str(target), "import-warc", str(warc))
    assert imported.returncode == 0, imported.stderr
    with opened_catalog(target) as catalog:
        assert all(c.index_path.startswith("imports/") for c in captures_of(catalog, IMAGE))
        replayed_the_same(target, catalog, replay_catalog)
