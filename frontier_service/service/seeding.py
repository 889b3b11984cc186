"""Seeds: start URLs checked one by one (a clear reason for each bad one), queued at depth 0."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.canonical_urls import canonical_url_and_domain, has_userinfo, without_userinfo
from frontier_service.frontier.frontier import AddResult, Frontier
from frontier_service.scope.crawl_scope import DOMAIN_NOT_ALLOWED, TOO_DEEP, Scope
from frontier_service.service.crawler_settings import CrawlerSettings, scope_for


class BadSeed(ArchiveError):
    """A seed URL the crawl cannot use."""


@dataclass(frozen=True)
class CheckedSeeds:
    urls: list[str] = field(default_factory=list)  # canonical
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (as given, reason)


def check_seeds(raw: Iterable[str], scope: Scope) -> CheckedSeeds:
    """Canonical seeds, and the reason each bad one was refused."""
    checked = CheckedSeeds()
    for url in raw:
        credentials = has_userinfo(url)
        if credentials:  # the message does not repeat the password
            url = without_userinfo(url).replace("//", "//***@", 1)
        shown = url if len(url) <= 100 else url[:97] + "..."
        if credentials:
            checked.rejected.append((shown, "it carries credentials (user:password@), which "
                                            "the crawler never sends: give the URL without them"))
            continue
        try:
            canonical, domain, _ = canonical_url_and_domain(url)
        except ValueError as exc:
            checked.rejected.append((shown, str(exc)))
            continue
        refusal = scope.refusal(domain, 0)
        if refusal in (TOO_DEEP, DOMAIN_NOT_ALLOWED):
            checked.rejected.append((shown, f"out of scope ({refusal}: {domain})"))
            continue
        if refusal is not None:  # an address, which the reason names
            checked.rejected.append((shown, f"out of scope ({refusal})"))
            continue
        checked.urls.append(canonical)
    return checked


def checked_seeds(settings: CrawlerSettings, raw: Iterable[str]) -> list[str]:
    """The canonical seeds; BadSeed (one line) if any is unusable."""
    checked = check_seeds(list(raw), scope_for(settings))
    if checked.rejected:
        url, reason = checked.rejected[0]
        more = f" (and {len(checked.rejected) - 1} more)" if len(checked.rejected) > 1 else ""
        raise BadSeed(f"bad seed URL {url!r}: {reason}{more}")
    return checked.urls


async def add_seeds(frontier: Frontier, settings: CrawlerSettings, raw: Iterable[str]) -> AddResult:
    """Queue seeds at depth 0; BadSeed (one line) if any is unusable, nothing queued then."""
    urls = checked_seeds(settings, raw)
    result = AddResult(0, 0, 0)
    for start in range(0, len(urls), 10_000):
        part = await frontier.add_urls([(u, 0) for u in urls[start:start + 10_000]])
        result = AddResult(result.added + part.added, result.duplicate + part.duplicate,
                           result.invalid + part.invalid)
    return result
