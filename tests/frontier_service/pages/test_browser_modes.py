"""Which domains go to the browser: the crawl's mode, overridden per host name or glob."""

from __future__ import annotations

import pytest

from frontier_service.pages.browser_modes import BrowserModes

pytestmark = pytest.mark.unit

MODES = BrowserModes("auto", (("app.example.org", "always"), ("example.org", "never"),
                              ("*.cdn.test", "never"), ("*.test", "always")))


@pytest.mark.parametrize(("domain", "mode"), [
    ("app.example.org", "always"),
    ("deep.app.example.org", "always"),  # a name matches its subdomains; the longest wins
    ("www.example.org", "never"),
    ("example.org:8080", "never"),  # the domain key's port does not matter
    ("img.cdn.test", "never"),  # globs in the order given
    ("site.test", "always"),
    ("other.net", "auto"),  # no override: the crawl's mode
])
def test_the_most_specific_override_wins(domain: str, mode: str) -> None:
    assert MODES.mode_for(domain) == mode


def test_any_browser_sees_overrides() -> None:
    assert not BrowserModes().any_browser
    assert BrowserModes("never", (("a.test", "auto"),)).any_browser
    assert not BrowserModes("never", (("a.test", "never"),)).any_browser


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="not 'often'"):
        BrowserModes("often")
