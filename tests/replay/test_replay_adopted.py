"""A page of an adopted ArchiveBox collection replays from its snapshot's own WARC: every
response record of every snapshot WARC is served (`id_`) with the payload warcio reads."""

from __future__ import annotations

import hashlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.archivebox import Aged07, generate_collection
from tests.helpers.cli import run_cli
from tests.helpers.replay import (
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    opened_catalog,
    running_replay,
)


def warc_responses(data: Path) -> set[tuple[str, str]]:
    """(URL, sha256 of the payload) of every response record of the snapshots' WARCs."""
    found = set()
    for path in sorted(data.glob("archive/*/warc/*.warc.gz")):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "response":
                    body = hashlib.sha256(record.content_stream().read()).hexdigest()
                    found.add((record.rec_headers.get_header("WARC-Target-URI"), body))
    return found


def test_an_adopted_snapshots_warc_replays(tmp_path: Path) -> None:
    data = tmp_path / "data"
    generate_collection(data, Aged07(files_per_snapshot=20), snapshots=4, seed=31)
    initialize(Settings(data_dir=data))
    responses = warc_responses(data)
    assert len(responses) >= 4, "the collection has WARCs"
    adopted = run_cli("--data-dir", str(data), "update", "--import-orphans", "--migrate-fs")
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    with opened_catalog(data) as catalog, running_replay(make_replayer(data, catalog)) as replay:
        for url, sha256 in sorted(responses):
            served = set()
            for capture in captures_of(catalog, url):
                answer = fetch(replay.port, memento_path(capture, "id_"))
                assert answer.status == capture.status_code, (url, answer.text)
                served.add(hashlib.sha256(answer.body).hexdigest())
            assert sha256 in served, url
