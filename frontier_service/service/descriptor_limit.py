"""The descriptors one crawler process may hold, checked against RLIMIT_NOFILE at start."""

from __future__ import annotations

import logging
import resource

from archive_pipelines.archive_error import SettingsError
from frontier_service.service.crawler_settings import CrawlerSettings

log = logging.getLogger(__name__)

# Redis connections, the health endpoint, segments and journals, the archive threads'
# files, DNS, logs, a browser's pipes: generous, since running out fails fetches at random.
MARGIN = 256


def descriptors_needed(settings: CrawlerSettings) -> int:
    """Frontier files + connections in use (one per fetch, a robots.txt fetch each beside
    them) + idle keep-alive connections + the margin."""
    return (settings.max_open_files + 2 * settings.concurrency + settings.max_idle_connections
            + MARGIN)


def ensure_descriptor_limit(settings: CrawlerSettings) -> int:
    """Raise this process's soft RLIMIT_NOFILE to what `settings` need (children inherit it);
    SettingsError (one line, what to lower) if even the hard limit is below. Returns the
    soft limit in force."""
    needed = descriptors_needed(settings)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return needed if soft == resource.RLIM_INFINITY else soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SettingsError(
            f"a crawler process may need {needed:,} open descriptors ({settings.max_open_files:,}"
            f" frontier files, 2 x {settings.concurrency:,} fetches, "
            f"{settings.max_idle_connections:,} idle connections, {MARGIN} others) but this "
            f"system allows {hard:,} (ulimit -Hn): lower --max-open-files, "
            "--max-idle-connections or --concurrency, or raise the hard limit")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    log.info("raised the open-descriptor limit from %d to %d", soft, needed)
    return needed
