"""The CDX routes over HTTP (the parameters themselves: the CDX tests): `/cdx` answers in
pywb's dialect, `/cdx/search/cdx` in the Internet Archive's, both from the same captures."""

from __future__ import annotations

import json

from archive_pipelines.catalog import Catalog
from archive_pipelines.replay.timestamps import timestamp_of
from tests.helpers.replay import GALLERY_URL, HOST, RunningReplay, captures_of, fetch


def test_both_dialects_list_a_urls_captures(replay: RunningReplay,
                                            replay_catalog: Catalog) -> None:
    stamps = [timestamp_of(c.fetched_ms) for c in captures_of(replay_catalog, GALLERY_URL)]
    ia = fetch(replay.port, f"/cdx/search/cdx?url={GALLERY_URL}&output=json")
    assert ia.status == 200
    rows = json.loads(ia.body)
    assert rows[0][:3] == ["urlkey", "timestamp", "original"]
    assert [row[1] for row in rows[1:]] == stamps
    pywb = fetch(replay.port, f"/cdx?url={GALLERY_URL}&output=json")
    assert pywb.status == 200
    lines = [json.loads(line) for line in pywb.text.splitlines()]
    assert [line["timestamp"] for line in lines] == stamps
    text = fetch(replay.port, f"/cdx/search/cdx?url={HOST}/assets/css/*&fl=original")
    assert f"http://{HOST}/assets/css/main.css" in text.text.split()


def test_a_bad_cdx_request_is_a_400_with_the_reason(replay: RunningReplay) -> None:
    answer = fetch(replay.port, f"/cdx/search/cdx?url={GALLERY_URL}&matchType=sideways")
    assert answer.status == 400 and "matchType" in answer.text
