"""Crawls defined, queued and followed: crawl definitions (`definitions`) and the request
protocol between whoever queues a crawl (Dagster, a schedule, the command line) and the
long-running crawler that runs it (`requests`). The crawler imports this package; nothing
here imports the crawler."""
