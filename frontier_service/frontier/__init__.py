"""The crawl frontier's state: canonical URLs, per-domain append-only files, Redis coordination.

Redis holds the coordination (domain leases, the ready queue, offsets in bytes, the seen filter,
compact visited records); the URLs themselves live in one append-only file per domain.
`Frontier` (frontier.py) is the facade the crawler uses; redis_conn.py opens the crawl's
Redis (a URL, or the embedded server).
"""
