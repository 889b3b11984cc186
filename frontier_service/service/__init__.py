"""The crawler service: settings, startup, a TaskGroup of workers, graceful drain, health endpoint.

It starts, runs and stops the other packages (frontier, recovery, scope, fetch, archiving,
pages) in one process (service.py) or several (supervisor.py, child.py). Pure asyncio;
Dagster is touched only to report closed segments (`frontier_service.archiving.events`,
imported lazily).
"""

from frontier_service.scope.crawl_scope import Scope
from frontier_service.service.crawler_settings import CrawlerSettings, from_settings
from frontier_service.service.process import configure_logging, run_crawler
from frontier_service.service.service import CrawlerService, RunReport

__all__ = [
    "CrawlerService",
    "CrawlerSettings",
    "RunReport",
    "Scope",
    "configure_logging",
    "from_settings",
    "run_crawler",
]
