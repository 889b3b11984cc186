"""The validators store: what is remembered of an archived response, the conditional headers
it makes, and Redis entries read back, damaged ones ignored."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

import pytest
from redis.asyncio import Redis

from archive_pipelines.archive_error import SettingsError
from frontier_service.archiving.validators import KEY_PREFIX, ValidatorStore, validators_of
from frontier_service.fetch.result import FetchResult
from frontier_service.service.crawler_settings import CrawlerSettings

SHA = "ab" * 32
OK = FetchResult(url="http://a.test/", final_url="http://a.test/", status=200, body=b"<p>hi</p>",
                 content_type="text/html", started_at=1_700_000_000.1234,
                 response_headers=[("Content-Type", "text/html; charset=utf-8"),
                                   ("ETag", '"v1"'),
                                   ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")])


@pytest.mark.unit
def test_a_whole_200_with_validators_is_remembered() -> None:
    kept = validators_of(OK, sha256=SHA, title="Hi")
    assert kept is not None
    assert kept.request_headers() == [("If-None-Match", '"v1"'),
                                      ("If-Modified-Since", "Mon, 01 Jan 2024 00:00:00 GMT")]
    assert (kept.url, kept.timestamp, kept.status, kept.size) == ("http://a.test/", 1_700_000_000.123,
                                                                  200, 9)
    assert kept.content_type == "text/html; charset=utf-8" and kept.body_type == "text/html"
    assert kept.title == "Hi"


@pytest.mark.unit
@pytest.mark.parametrize("changes", [
    {"status": 404}, {"truncated": True}, {"body_encoding": "compress"}, {"error": "cut"},
    {"response_headers": [("Content-Type", "text/html")]},  # no validator to send back
])
def test_what_is_not_remembered(changes: dict[str, object]) -> None:
    assert validators_of(replace(OK, **changes), sha256=SHA, title=None) is None  # type: ignore[arg-type]


@pytest.mark.unit
def test_a_304_keeps_the_entry_with_the_validators_it_sends() -> None:
    kept = validators_of(OK, sha256=SHA, title=None)
    assert kept is not None
    answer = replace(OK, status=304, body=b"", response_headers=[("ETag", '"v2"')])
    again = kept.revisited(answer)
    assert again.etag == '"v2"' and again.last_modified == kept.last_modified
    assert (again.sha256, again.url, again.timestamp) == (kept.sha256, kept.url, kept.timestamp)


@pytest.mark.unit
@pytest.mark.parametrize("key", ["with space", "a/b", "x" * 101])
def test_a_bad_validators_key_is_refused(key: str, tmp_path: object) -> None:
    with pytest.raises(SettingsError, match="revisit-of"):
        CrawlerSettings(data_dir=tmp_path).with_changes(validators_key=key)  # type: ignore[arg-type]


def test_entries_round_trip_through_redis_and_damaged_ones_are_ignored(redis_url: str) -> None:
    async def run() -> None:
        redis = Redis.from_url(redis_url)
        key = f"test-{uuid.uuid4().hex[:8]}"
        store = ValidatorStore(redis, key)
        try:
            kept = validators_of(OK, sha256=SHA, title="Hi")
            assert kept is not None
            assert await store.get(OK.url) is None
            await store.put(OK.url, kept)
            assert await store.get(OK.url) == kept
            for damaged in (b"not json", b'{"etag": 1}', b'{"sha256": "short"}'):
                await redis.hset(KEY_PREFIX + key, OK.url, damaged)
                assert await store.get(OK.url) is None
        finally:
            await redis.delete(KEY_PREFIX + key)
            await redis.aclose()

    asyncio.run(run())
