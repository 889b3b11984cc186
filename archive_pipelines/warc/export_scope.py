"""What an export covers, from what a person types: crawl sessions (ids or their start), a
URL prefix (the crawler's canonical form, as `captures --prefix`), a time window."""

from __future__ import annotations

from collections.abc import Sequence

from archive_pipelines.captures.lookup import BadLookup, canonical_target, when_ms
from archive_pipelines.captures.short_ids import resolve_session_id
from archive_pipelines.catalog import CaptureScope, Catalog


def export_scope(catalog: Catalog, *, sessions: Sequence[str] = (), url_prefix: str | None = None,
                 from_time: str | None = None, to_time: str | None = None) -> CaptureScope:
    """The scope, every part checked: BadLookup / BadShortId for a session the catalog does
    not hold, a URL the crawler could not have fetched, a time that is none, or an empty
    window."""
    ids = []
    for text in sessions:
        session_id = resolve_session_id(catalog, text)
        if catalog.captures.crawl_session(session_id) is None:
            raise BadLookup(f"no crawl session {session_id} in the catalog")
        ids.append(session_id)
    site = prefix = None
    if url_prefix is not None:
        prefix, _hash, site = canonical_target(url_prefix)
        if prefix == site + "/" and not url_prefix.rstrip().endswith("/"):
            prefix = site  # `http://example.com` as a prefix: the whole site
    from_ms = None if from_time is None else when_ms(from_time)
    to_ms = None if to_time is None else when_ms(to_time, end=True)
    if from_ms is not None and to_ms is not None and from_ms > to_ms:
        raise BadLookup(f"--from {from_time} is after --to {to_time}")
    return CaptureScope(sessions=tuple(dict.fromkeys(ids)), site=site, canonical_prefix=prefix,
                        from_ms=from_ms, to_ms=to_ms)
