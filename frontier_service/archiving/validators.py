"""Validators of archived bodies (ETag, Last-Modified), kept across crawls of one definition
so that a later crawl asks `If-None-Match` / `If-Modified-Since` and a 304 costs no body.

One Redis hash per key (`validators:{key}`, outside any crawl's prefix: the crawls of one
definition share it), one field per URL, a compact JSON value: the validators and the capture
that holds the body (its URL, time, status, sha256, size and content type), so a 304 becomes
an unchanged capture of that body. Only a whole (not cut, decoded) 200 body with an ETag or a
Last-Modified is remembered; a 304 keeps the entry (new validators it sends replace the old).

The store is a saving, never a source of truth: an entry lost (Redis lost its data, a key
deleted) only means an unconditional request, and a damaged entry is ignored the same way.
Memory: about 300 bytes per remembered URL.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace

from redis.asyncio import Redis
from redis.exceptions import RedisError

from frontier_service.fetch.result import FetchResult

log = logging.getLogger(__name__)

KEY_PREFIX = "validators:"
_MAX_VALIDATOR = 512  # longer ETag / Last-Modified values are not kept (nor sent)
_MAX_TITLE = 1_000


@dataclass(frozen=True)
class Validators:
    """A URL's validators and the capture whose body they validate."""

    etag: str | None
    last_modified: str | None
    url: str  # the capture holding the body (the URL it was fetched as)
    timestamp: float  # its request's start, epoch seconds (ms precision, as its record says)
    status: int
    sha256: str
    size: int
    body_type: str | None  # media type, as the record's body_type
    content_type: str | None  # the Content-Type header as the server sent it
    title: str | None = None  # the page's title, if it is a page that had one

    def request_headers(self) -> list[tuple[str, str]]:
        """The conditional request headers these validators make."""
        headers = []
        if self.etag:
            headers.append(("If-None-Match", self.etag))
        if self.last_modified:
            headers.append(("If-Modified-Since", self.last_modified))
        return headers

    def revisited(self, result: FetchResult) -> Validators:
        """The entry after a 304: the validators it sent (if any) replace ours."""
        etag = _header(result, "etag")
        modified = _header(result, "last-modified")
        return replace(self, etag=etag or self.etag, last_modified=modified or self.last_modified)


def validators_of(result: FetchResult, *, sha256: str, title: str | None) -> Validators | None:
    """The validators of an archived response, if it is worth remembering: a whole 200 body,
    stored decoded, with an ETag or a Last-Modified."""
    if result.status != 200 or result.error is not None or result.truncated \
            or result.body_encoding is not None or result.body is None:
        return None
    etag, modified = _header(result, "etag"), _header(result, "last-modified")
    if etag is None and modified is None:
        return None
    return Validators(etag, modified, url=result.final_url, timestamp=round(result.started_at, 3),
                      status=result.status, sha256=sha256, size=len(result.body),
                      body_type=result.content_type, content_type=_header(result, "content-type"),
                      title=None if title is None else title[:_MAX_TITLE])


def _header(result: FetchResult, name: str) -> str | None:
    for key, value in result.response_headers:
        if key.lower() == name:
            value = value.strip()
            return value if value and len(value) <= _MAX_VALIDATOR and value.isascii() else None
    return None


class ValidatorStore:
    """The validators of one key (a crawl definition) in Redis. Redis trouble is logged and
    taken as "no validators": the request goes out unconditional."""

    def __init__(self, redis: Redis, key: str) -> None:
        self.redis = redis
        self.key = KEY_PREFIX + key

    async def get(self, url: str) -> Validators | None:
        try:
            raw = await self.redis.hget(self.key, url)
        except RedisError as exc:
            log.warning("validators of %s not read (%s): an unconditional request", url[:200], exc)
            return None
        return None if raw is None else _parse(raw)

    async def put(self, url: str, validators: Validators) -> None:
        value = json.dumps(asdict(validators), separators=(",", ":"), ensure_ascii=False)
        try:
            await self.redis.hset(self.key, url, value)
        except RedisError as exc:
            log.warning("validators of %s not kept (%s): the next crawl asks unconditionally",
                        url[:200], exc)


def _parse(raw: bytes | str) -> Validators | None:
    try:
        data = json.loads(raw)
        found = Validators(**data)
    except (ValueError, TypeError):
        return None  # damaged: asked unconditionally, then replaced
    if not isinstance(found.sha256, str) or len(found.sha256) != 64 or \
            not isinstance(found.size, int) or not isinstance(found.url, str):
        return None
    return found
