"""Captures: crawled pages in the catalog, indexed by URL and time.

The crawler (frontier_service) writes page-fetch records into segment files under
`sessions/{day}/{session_id}/` and their bodies into the primary blob store. Here a closed
segment becomes catalog rows (`ingest`): one capture per HTTP exchange (`records`), the
segment file itself as a blob, exact ref counts, and a ledger entry so it is ingested once.
`lookup` answers "what do we hold for this URL?", a session's pages and a body's
referrers; `pending` names the bodies that segments not yet ingested reference (gc keeps
them).
"""
