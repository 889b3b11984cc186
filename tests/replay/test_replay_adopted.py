"""A page of an adopted ArchiveBox collection replays from its snapshot's own WARC: every
response record of every snapshot WARC is served (`id_`) with the payload warcio reads."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.helpers.adopted import adopted_collection
from tests.helpers.replay import (
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    opened_catalog,
    running_replay,
)


def test_an_adopted_snapshots_warc_replays(tmp_path: Path) -> None:
    data = tmp_path / "data"
    responses = {(r.url, r.sha256) for r in adopted_collection(data, snapshots=4, seed=31)}
    assert len(responses) >= 4, "the collection has WARCs"
    with opened_catalog(data) as catalog, running_replay(make_replayer(data, catalog)) as replay:
        for url, sha256 in sorted(responses):
            served = set()
            for capture in captures_of(catalog, url):
                answer = fetch(replay.port, memento_path(capture, "id_"))
                assert answer.status == capture.status_code, (url, answer.text)
                served.add(hashlib.sha256(answer.body).hexdigest())
            assert sha256 in served, url
