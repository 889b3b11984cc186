"""One claimed page's way through the crawl, and what it hands back to the frontier.

`DomainClaimer` (claimer.py) leases due domains and releases them in Redis;
`HostDispatcher` (host_dispatcher.py) feeds their URLs to the workers, holding a busy host
between URLs (held_host.py); `PageProcessor` (processor.py) takes one
URL from the robots check through the fetch and the archive to its links and its host's
next fetch time. What a page hands back is written in batches: its links through
`LinkBuffer` (link_buffer.py, made durable first by link_journal.py), its visit and the
domain's page count through `VisitBuffer` (visit_buffer.py); both flush in the background
(flush_loop.py).
"""
