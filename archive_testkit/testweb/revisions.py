"""Pages that change over time, their validators (ETag, Last-Modified), and conditional
requests answered 304 Not Modified.

`revision` counts the site's edits: at each revision r (1, 2, ...) a share `changed_fraction`
of the 200 answers (pages and files, chosen by a stable hash of seed, host, path and r)
changes, its body then ending with `<!-- revision r -->` (bytes after the end of an image or
a font, which their readers ignore). A page's Last-Modified is 2024-01-01 plus one day per
revision it last changed at; its ETag is a hash of its body. So the web under revision r + 1
answers the validators it gave under r with 304 for the pages that did not change, and with
the new page for those that did. `validators_fraction` of the pages (default all) send
validators and honour If-None-Match / If-Modified-Since (RFC 9110: If-Modified-Since is
looked at only without If-None-Match).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.testweb.routes import Action, Reply
from archive_testkit.testweb.seeding import stable_fraction

BASE_MODIFIED_S = 1_704_067_200  # 2024-01-01T00:00:00Z
_DAY_S = 86_400


def last_change(config: TestWebConfig, host: str, path: str) -> int:
    """The last revision (0: none) at which the page at (host, path) changed."""
    if config.revision <= 0 or config.changed_fraction <= 0:
        return 0
    for revision in range(config.revision, 0, -1):
        if stable_fraction(config.seed, "changed", host, path, revision) < config.changed_fraction:
            return revision
    return 0


def revised(config: TestWebConfig, host: str, path: str, reply: Reply) -> Reply:
    """The reply as the site's current revision has it: a changed text page's body marked,
    and validators on the pages that send them (200s with a body only)."""
    if reply.status != 200 or reply.action is not Action.RESPOND:
        return reply
    changed = last_change(config, host, path)
    body = reply.body
    if changed:
        body = body + f"\n<!-- revision {changed} -->\n".encode()
    if stable_fraction(config.seed, "validators", host, path) >= config.validators_fraction:
        return reply if body is reply.body else replace(reply, body=body)
    etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
    modified = format_datetime(datetime.fromtimestamp(BASE_MODIFIED_S + changed * _DAY_S, UTC),
                               usegmt=True)
    return replace(reply, body=body,
                   headers=(*reply.headers, ("ETag", etag), ("Last-Modified", modified)))


def not_modified(reply: Reply, if_none_match: str | None, if_modified_since: str | None) -> bool:
    """Whether a conditional GET of `reply` is answered 304 (weak ETag comparison)."""
    headers = dict(reply.headers)
    etag = headers.get("ETag")
    if etag is None:
        return False
    if if_none_match is not None:
        asked = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in asked or etag in asked
    if if_modified_since is None:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since).timestamp()
        modified = parsedate_to_datetime(headers["Last-Modified"]).timestamp()
    except (TypeError, ValueError, IndexError, KeyError):
        return False
    return modified <= since


def not_modified_reply(reply: Reply) -> Reply:
    """The 304: the validators, no body."""
    kept = tuple((name, value) for name, value in reply.headers
                 if name in ("ETag", "Last-Modified"))
    return Reply(304, b"", content_type="", headers=kept)

