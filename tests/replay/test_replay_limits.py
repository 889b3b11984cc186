"""A client that stops reading a large body is cut off after `send_timeout_seconds` (its
response abandoned and counted) while others are served; a capture whose record is gone
still replays its body with the catalog's status and type."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path

import pytest

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import Catalog
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import ReplaySettings, Settings
from archive_testkit.recorded_captures import Fetch, record_fetches
from tests.helpers.replay import fetch, make_replayer, running_replay

BIG = 32 * 1024 * 1024
URL = "http://big.test/video.webm"
WHEN_MS = 1_790_000_000_000  # 2026-09-21 14:13:20 UTC


def big_archive(data_dir: Path) -> tuple[Catalog, bytes]:
    settings = Settings(data_dir=data_dir)
    initialize(settings)
    body = bytes(range(256)) * (BIG // 256)
    open_store(settings.primary_store, data_dir).put_bytes(body)
    catalog = Catalog.open(settings.catalog_url)
    record_fetches(catalog, [Fetch(URL, WHEN_MS, body=body, content_type="video/webm")])
    return catalog, body


def test_a_client_that_stops_reading_is_cut_off_and_others_are_served(tmp_path: Path) -> None:
    catalog, body = big_archive(tmp_path / "data")
    settings = ReplaySettings(send_timeout_seconds=1.0)
    try:
        with running_replay(make_replayer(tmp_path / "data", catalog, settings)) as replay:
            stalled = socket.socket()
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.connect(("127.0.0.1", replay.port))
            stalled.sendall(f"GET /web/20260921141320id_/{URL} HTTP/1.1\r\nHost: x\r\n\r\n"
                            .encode())
            time.sleep(0.5)
            whole = fetch(replay.port, f"/web/20260921141320id_/{URL}")
            assert whole.status == 200 and whole.body == body  # served beside the stalled one
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                metrics = fetch(replay.port, "/metrics").text
                if "replay_slow_clients_cut_total 1" in metrics:
                    break
                time.sleep(0.2)
            assert "replay_slow_clients_cut_total 1" in metrics
            stalled.settimeout(10)
            received = 0
            while chunk := stalled.recv(1 << 20):
                received += len(chunk)
            assert received < BIG  # it got what fit in the buffers, then the connection closed
            stalled.close()
    finally:
        catalog.close()


def test_a_capture_whose_record_is_gone_replays_from_the_catalog(tmp_path: Path) -> None:
    catalog, body = big_archive(tmp_path / "data")
    try:
        with running_replay(make_replayer(tmp_path / "data", catalog)) as replay:
            answer = fetch(replay.port, f"/web/20260921141320id_/{URL}",
                           headers={"Range": "bytes=1000-1999"})
        assert answer.status == 206 and answer.body == body[1000:2000]
        assert answer.header("Content-Type") == "video/webm"
        assert answer.header("X-Archive-Orig-Date") is None  # no recorded headers to show
    finally:
        catalog.close()


def test_lookups_are_kept_for_lookup_cache_seconds(tmp_path: Path) -> None:
    catalog, _body = big_archive(tmp_path / "data")
    later = Fetch(URL, WHEN_MS + 60_000, body=b"later", content_type="text/plain")
    try:
        kept = make_replayer(tmp_path / "data", catalog,
                             ReplaySettings(lookup_cache_seconds=3600)).archive
        fresh = make_replayer(tmp_path / "data", catalog,
                              ReplaySettings(lookup_cache_seconds=0)).archive
        for archive in (kept, fresh):
            found = archive.nearest(URL, at_ms=None)
            assert found is not None and found.capture.fetched_ms == WHEN_MS
        record_fetches(catalog, [later])
        again = kept.nearest(URL, at_ms=None)
        assert again is not None and again.capture.fetched_ms == WHEN_MS  # as kept
        assert kept.cache.hits == 1
        now = fresh.nearest(URL, at_ms=None)
        assert now is not None and now.capture.fetched_ms == WHEN_MS + 60_000
    finally:
        catalog.close()


def test_a_client_leaving_mid_body_is_no_error(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    catalog, _body = big_archive(tmp_path / "data")
    try:
        with running_replay(make_replayer(tmp_path / "data", catalog)) as replay, \
                caplog.at_level(logging.INFO):
            for _ in range(3):
                leaving = socket.create_connection(("127.0.0.1", replay.port), timeout=10)
                leaving.sendall(f"GET /web/20260921141320id_/{URL} HTTP/1.1\r\nHost: x\r\n\r\n"
                                .encode())
                assert leaving.recv(65536).startswith(b"HTTP/1.1 200")
                leaving.close()
            time.sleep(1.0)
            assert fetch(replay.port, "/healthz").status == 200
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == [], [r.getMessage() for r in errors]
    finally:
        catalog.close()
