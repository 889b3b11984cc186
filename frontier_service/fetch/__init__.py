"""The crawler's fetch path: robots.txt, politeness, the HTTP fetcher and link extraction.

Plain asyncio + aiohttp; no Dagster. The frontier decides what to fetch and when, this
package fetches it.
"""

from frontier_service.fetch.fetch_settings import FetchSettings
from frontier_service.fetch.fetcher import Fetcher
from frontier_service.fetch.links import PageLinks, extract_links, links_from_fetch, resolve_link
from frontier_service.fetch.politeness import HealthVerdict, HostHealth, next_delay
from frontier_service.fetch.result import FetchErrorKind, FetchResult, RedirectHop
from frontier_service.fetch.robots import RobotsCache, origin_of
from frontier_service.fetch.robots_rules import RobotsRules, RobotsSource
from frontier_service.fetch.robots_store import InMemoryRobotsStore, RobotsStore, StoredRobots

__all__ = [
    "FetchErrorKind",
    "FetchResult",
    "FetchSettings",
    "Fetcher",
    "HealthVerdict",
    "HostHealth",
    "InMemoryRobotsStore",
    "PageLinks",
    "RedirectHop",
    "RobotsCache",
    "RobotsRules",
    "RobotsSource",
    "RobotsStore",
    "StoredRobots",
    "extract_links",
    "links_from_fetch",
    "next_delay",
    "origin_of",
    "resolve_link",
]
