"""A body hash or a crawl session id from what a person typed: the whole value, or its first
characters when they name exactly one (upper or lower case). None: `NotFound` (exit 1);
several: `AmbiguousPrefix` listing them (exit 2, like any input the command cannot use)."""

from __future__ import annotations

import re
from collections.abc import Callable

from archive_pipelines.archive_error import ArchiveError, NotFound
from archive_pipelines.captures.segment_files import canonical_session_id
from archive_pipelines.catalog import Catalog

SHOWN = 10  # candidates an ambiguous prefix lists
_HASH = re.compile(r"(?:sha256:)?([0-9a-f]{1,64})")
_SESSION = re.compile(r"[0-9a-f-]{1,36}")


class AmbiguousPrefix(ArchiveError):
    """A prefix that starts more than one value: each is listed, one a line."""


class BadShortId(ArchiveError):
    """Not a hash, a session id, or the start of one."""


def resolve_body_hash(catalog: Catalog, text: str) -> str:
    """The sha256 `text` is, or the one capture body hash it starts."""
    match = _HASH.fullmatch(text.strip().lower())
    if match is None:
        raise BadShortId(f"bad hash {text[:100]!r}: expected a sha256 (64 hex digits) or its "
                         "first digits")
    prefix = match.group(1)
    if len(prefix) == 64:
        return prefix
    return _one(catalog.blobs.body_hashes_with_prefix, prefix, option="--sha256",
                what=("capture body hash", "capture body hashes"))


def resolve_session_id(catalog: Catalog, text: str) -> str:
    """The crawl session id `text` is, or the one recorded session id it starts."""
    value = text.strip().lower()
    if canonical_session_id(value) is not None:
        return value
    if _SESSION.fullmatch(value) is None:
        raise BadShortId(f"bad --session {text[:100]!r}: a session id is a UUID "
                         "(or its first characters)")
    return _one(catalog.blobs.session_ids_with_prefix, value, option="--session",
                what=("crawl session", "crawl sessions"))


def _one(query: Callable[..., list[str]], prefix: str, *, option: str,
         what: tuple[str, str]) -> str:
    """The one value `query` finds for `prefix`; `what`: its name, singular and plural."""
    found: list[str] = query(prefix, limit=SHOWN + 1)  # one read transaction
    if not found:
        raise NotFound(f"no {what[0]} starts with {prefix!r} ({option})")
    if len(found) == 1:
        return found[0]
    count = f"more than {SHOWN}" if len(found) > SHOWN else f"{len(found)}"
    lines = [f"  {value}" for value in found[:SHOWN]] + (["  ..."] if len(found) > SHOWN else [])
    raise AmbiguousPrefix("\n".join([f"{option} {prefix!r} starts {count} {what[1]}; give more "
                                     "of it:", *lines]))
