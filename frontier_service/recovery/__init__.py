"""Redis-loss recovery: the crawl's Redis state checked against the disk, rebuilt or audited.

The frontier files and the sessions' offset checkpoints hold the truth; Redis is a fast
index of them. `FrontierRecovery` (frontier_recovery.py) runs during a crawl: it checks
the crawl id (epoch.py) before anything is claimed, rebuilds a Redis that lost the crawl
(rebuild.py, reading the files through disk_frontier.py, with lua_recovery.py's scripts),
audits before the crawl may end "exhausted" (audit.py), and refuses a Redis that would
keep evicting the crawl's state (redis_memory.py).
"""
