"""Which pages of a crawl go to the browser: `never`, `auto` or `always`, per domain.

A crawl has one mode and may override it per domain (`browser_by_domain`): a name matches
itself and its subdomains (the longest matching name wins), a glob (`*.example`) its hosts;
names are tried before globs, globs in the order given.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from functools import lru_cache

from frontier_service.scope.crawl_scope import host_of

NEVER = "never"
AUTO = "auto"
ALWAYS = "always"
MODES = (NEVER, AUTO, ALWAYS)


class BrowserModes:
    """The browser mode of each domain: `default`, or the override its host matches."""

    def __init__(self, default: str = NEVER, by_domain: Sequence[tuple[str, str]] = ()) -> None:
        for mode in (default, *(mode for _, mode in by_domain)):
            if mode not in MODES:
                raise ValueError(f"a browser mode is one of {', '.join(MODES)}, not {mode!r}")
        self.default = default
        entries = [(name.strip().lower().rstrip("."), mode) for name, mode in by_domain]
        self._patterns = [(n, m) for n, m in entries if any(c in n for c in "*?[")]
        self._names = {n.removeprefix("."): m for n, m in entries
                       if not any(c in n for c in "*?[")}
        self.mode_for = lru_cache(maxsize=1 << 14)(self._mode_for)

    @property
    def any_browser(self) -> bool:
        """Whether some domain may be loaded in the browser."""
        return any(mode != NEVER for mode in (self.default, *self._names.values(),
                                              *(m for _, m in self._patterns)))

    def _mode_for(self, domain_key: str) -> str:
        host = host_of(domain_key).lower()
        labels = host.split(".")
        for start in range(len(labels)):
            mode = self._names.get(".".join(labels[start:]))
            if mode is not None:
                return mode
        for pattern, mode in self._patterns:
            if fnmatch.fnmatchcase(host, pattern):
                return mode
        return self.default
