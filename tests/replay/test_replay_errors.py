"""A damaged store: a missing body is a 404 page naming the capture, a corrupt one a 502
page (or, when it is found out mid-stream, a cut connection: never wrong bytes sent as
whole); large bodies are streamed, ranges included; withdrawn URLs are not replayed."""

from __future__ import annotations

import http.client
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import Capture, Catalog
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.settings import ReplaySettings, Settings
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

SMALL_ITEMS = ReplaySettings(body_cache_item_bytes=40)  # bodies over 40 bytes are streamed


@pytest.fixture(scope="module")
def damaged(replay_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    data_dir = tmp_path_factory.mktemp("damaged") / "data"
    shutil.copytree(replay_data, data_dir, symlinks=True)
    yield data_dir


@pytest.fixture(scope="module")
def damaged_catalog(damaged: Path) -> Iterator[Catalog]:
    with opened_catalog(damaged) as catalog:
        yield catalog


def blob_path(data_dir: Path, capture: Capture) -> Path:
    assert capture.body_sha256 is not None
    path = open_store(Settings(data_dir=data_dir).primary_store, data_dir).local_path(
        capture.body_sha256)
    assert path is not None and path.exists()
    return path


def latest(catalog: Catalog, path: str) -> Capture:
    return captures_of(catalog, f"http://{HOST}{path}")[-1]


def largest(catalog: Catalog) -> Capture:
    """The capture of the test web with the largest body (a few KB)."""
    from archive_pipelines.catalog.replay_repository import KeyRange
    from archive_pipelines.surt import urlkey

    with catalog.reading() as tx:
        found = tx.replay.page(KeyRange.prefix(urlkey(f"http://{HOST}/")), limit=1000)
    return max(found, key=lambda c: (c.body_size or 0, c.id))


@pytest.mark.parametrize("settings", [ReplaySettings(), SMALL_ITEMS], ids=["cached", "streamed"])
def test_a_missing_body_is_a_404_page_naming_the_capture(
        damaged: Path, damaged_catalog: Catalog, settings: ReplaySettings) -> None:
    capture = latest(damaged_catalog, "/assets/img/art-1x.png")
    path = blob_path(damaged, capture)
    kept = path.read_bytes()
    path.chmod(0o644)
    path.unlink()
    try:
        with running_replay(make_replayer(damaged, damaged_catalog, settings)) as replay:
            answer = fetch(replay.port, memento_path(capture))
    finally:
        path.write_bytes(kept)
    assert answer.status == 404
    assert f"capture {capture.id}" in answer.text and capture.url in answer.text
    assert str(capture.body_sha256) in answer.text


def test_a_corrupt_small_body_is_a_502_page(damaged: Path, damaged_catalog: Catalog) -> None:
    capture = latest(damaged_catalog, "/assets/img/art-2x.png")
    path = blob_path(damaged, capture)
    kept = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(b"X" * len(kept))
    try:
        with running_replay(make_replayer(damaged, damaged_catalog)) as replay:
            answer = fetch(replay.port, memento_path(capture))
            metrics = fetch(replay.port, "/metrics").text
    finally:
        path.write_bytes(kept)
    assert answer.status == 502
    assert f"capture {capture.id}" in answer.text and "cannot be read" in answer.text
    assert "replay_corrupt_bodies_total 1" in metrics


def test_a_large_body_cut_short_in_the_store_cuts_the_connection(
        damaged: Path, damaged_catalog: Catalog) -> None:
    capture = largest(damaged_catalog)
    path = blob_path(damaged, capture)
    kept = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(kept[:len(kept) // 2])
    try:
        with running_replay(make_replayer(damaged, damaged_catalog, SMALL_ITEMS)) as replay, \
                pytest.raises(http.client.IncompleteRead):
            fetch(replay.port, memento_path(capture, "id_"))
    finally:
        path.write_bytes(kept)


def test_large_bodies_stream_whole_and_in_ranges(damaged: Path, damaged_catalog: Catalog) -> None:
    capture = largest(damaged_catalog)
    kept = blob_path(damaged, capture).read_bytes()
    assert len(kept) > 1000 > SMALL_ITEMS.body_cache_item_bytes
    with running_replay(make_replayer(damaged, damaged_catalog, SMALL_ITEMS)) as replay:
        assert fetch(replay.port, memento_path(capture, "id_")).body == kept
        middle = fetch(replay.port, memento_path(capture, "id_"),
                       headers={"Range": "bytes=100-299"})
        assert middle.status == 206 and middle.body == kept[100:300]
        replayer = replay.server.replayer
        assert len(replayer.bodies.cache) == 0  # nothing that large is kept


def test_a_streamed_page_is_rewritten_as_a_cached_one(damaged: Path,
                                                      damaged_catalog: Catalog) -> None:
    page = latest(damaged_catalog, "/assets/gallery.html")
    with running_replay(make_replayer(damaged, damaged_catalog)) as replay:
        cached = fetch(replay.port, memento_path(page))
    with running_replay(make_replayer(damaged, damaged_catalog, SMALL_ITEMS)) as replay:
        streamed = fetch(replay.port, memento_path(page))
    assert cached.status == streamed.status == 200
    assert streamed.body == cached.body and b"/web/" in streamed.body
    assert streamed.header("Content-Length") is None  # rewritten: sent chunked


def test_withdrawn_urls_are_not_replayed_listed_or_timemapped(
        damaged: Path, damaged_catalog: Catalog) -> None:
    withdrawn = Exclusions([f"{HOST}/assets/img/"])  # any scheme, as an operator writes it
    with running_replay(make_replayer(damaged, damaged_catalog, withdrawn=withdrawn)) as replay:
        image = latest(damaged_catalog, "/assets/img/hero.png")
        for path in (memento_path(image), f"/web/{image.url}", f"/timemap/link/{image.url}",
                     f"/web/*/{image.url}"):
            answer = fetch(replay.port, path)
            assert answer.status == 403 and "withdrawn" in answer.text, path
        listed = fetch(replay.port, f"/web/*/http://{HOST}/assets/*?output=json").text
        assert "/assets/img/" not in listed and "/assets/css/main.css" in listed
        assert fetch(replay.port, f"/web/2/{GALLERY_URL}").status == 302


def test_an_idle_connection_is_closed_after_the_keepalive(damaged: Path,
                                                          damaged_catalog: Catalog) -> None:
    import socket
    import time

    with running_replay(make_replayer(damaged, damaged_catalog), keepalive_s=1.0) as replay:
        silent = socket.create_connection(("127.0.0.1", replay.port), timeout=10)
        started = time.monotonic()
        assert silent.recv(1) == b""  # closed by the server, nothing sent
        assert 0.5 < time.monotonic() - started < 5
        silent.close()
        # Headers sent a byte at a time (slowloris) are cut off the same way.
        trickle = socket.create_connection(("127.0.0.1", replay.port), timeout=10)
        trickle.setblocking(False)
        started = time.monotonic()
        closed = False
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            time.sleep(0.1)
            try:
                trickle.send(bytes([byte]))
                closed = trickle.recv(1) == b""
            except BlockingIOError:
                continue
            except OSError:
                closed = True
            if closed:
                break
        assert closed and time.monotonic() - started < 5
        trickle.close()
        assert fetch(replay.port, "/healthz").status == 200
