"""EmbeddedRedis: the crawl's persistent redis-server under <data>/redis, which never runs
on files it cannot read and never starts empty in silence."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import redis

from archive_pipelines.embedded_redis.binaries import (
    RedisServerBinary,
    newest,
    redis_server_binaries,
)
from archive_pipelines.embedded_redis.local_redis import NOT_FOUND, LocalRedis
from archive_pipelines.embedded_redis.server_record import (
    EmbeddedRedisRefused,
    files_need,
    read_record,
    refuse_older,
    write_record,
)

# A key the embedded Redis always holds (set at start and at a clean stop): without it
# after loading, its files were not loaded.
MARKER_KEY = "archive:embedded-redis"


class EmbeddedRedis(LocalRedis):
    """The crawl's persistent redis-server in `workdir`, run by the newest binary here.

    Refused (EmbeddedRedisRefused, nothing started) if the files need a newer Redis than
    that; stopped again before writing anything if it comes up without the data its files
    hold. Each start records which binary (path, version) now owns the files."""

    def __init__(self, workdir: Path, *,
                 binaries: Sequence[RedisServerBinary] | None = None) -> None:
        chosen = newest(redis_server_binaries() if binaries is None else binaries)
        if chosen is None:
            raise RuntimeError(NOT_FOUND)
        super().__init__(workdir, binary=chosen.path, persist=True)
        self.chosen = chosen

    def start(self) -> Self:
        self.workdir.mkdir(parents=True, exist_ok=True)
        record = read_record(self.workdir)
        refuse_older(self.workdir, files_need(self.workdir, record), self.chosen)
        try:
            super().start()
        except RuntimeError as exc:  # e.g. it refused a damaged file: its log says which
            self.kill()  # (if it still runs, it never answered)
            raise EmbeddedRedisRefused(
                f"the embedded redis-server {self.chosen.version_text} ({self.chosen.path}) "
                f"could not start on the files in {self.workdir} ({exc}): "
                f"{self._last_log_line() or 'see its log'}") from None
        try:
            if record is not None and not self._loaded():
                raise EmbeddedRedisRefused(
                    f"the embedded redis-server {self.chosen.version_text} ({self.chosen.path}) "
                    f"came up without the data in {self.workdir} that redis-server "
                    f"{record.version_text} ({record.path}) wrote: its files could not be "
                    f"loaded (see {self.workdir / 'redis.log'}), so it was stopped before "
                    f"writing anything. The data dir holds the crawl: move {self.workdir} "
                    "aside and run again to rebuild Redis from it")
            self._mark()
            write_record(self.workdir, self.chosen)
        except BaseException:
            self.kill()  # not stop(): a shutdown would save its empty dataset over the files
            raise
        return self

    def stop(self) -> None:
        if self.running():  # a FLUSHALL meanwhile took the marker: put it back
            with contextlib.suppress(redis.RedisError, OSError):
                self._mark()
        super().stop()

    def _client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)

    def _loaded(self) -> bool:
        """Whether the server holds data (the marker at least) after loading its files."""
        with contextlib.closing(self._client()) as client:
            return bool(client.exists(MARKER_KEY) or client.dbsize())

    def _mark(self) -> None:
        with contextlib.closing(self._client()) as client:
            client.set(MARKER_KEY, json.dumps({"path": self.chosen.path,
                                               "version": self.chosen.version_text}))

    def _last_log_line(self) -> str:
        """The last line redis-server logged (its reason for exiting), without its prefix."""
        try:
            lines = (self.workdir / "redis.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        last = next((line for line in reversed(lines) if line.strip()), "")
        return last.split(" # ", 1)[-1].strip()
