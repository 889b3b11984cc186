"""Crawl definitions: `[[crawls]]` in archive.toml, validated with errors naming the
definition and the key, and the JSON snapshot a queued crawl stores."""

import json
from pathlib import Path

import pytest

from archive_pipelines.archive_error import SettingsError
from archive_pipelines.crawls.definitions import CrawlDefinition
from archive_pipelines.settings import Settings, load_settings

pytestmark = pytest.mark.unit

DOCS = '[[crawls]]\nname = "docs"\nseeds = ["http://docs.test/"]\n'


def _load(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "archive.toml").write_text(text)
    return load_settings(tmp_path, environ={})


def test_a_definition_takes_what_it_omits_from_the_crawl_section(tmp_path: Path) -> None:
    settings = _load(tmp_path, '[crawl]\nmax_depth = 5\ndomain_page_budget = 40\n'
                               'allow_networks = ["127.0.0.1:8080"]\n'
                               'host_map = { "docs.test" = "127.0.0.1:8080" }\n' + DOCS)
    (docs,) = settings.crawl_definitions
    assert docs == CrawlDefinition(
        name="docs", seeds=("http://docs.test/",), allowed_domains=("docs.test",),
        allowed_networks=("127.0.0.1:8080",), host_map=(("docs.test", "127.0.0.1:8080"),),
        max_depth=5, page_budget=40)
    assert docs.cadence is None and docs.conditional
    assert docs.per_host_concurrency is None and docs.min_delay_seconds is None
    assert settings.crawl_definition("docs") == docs
    with pytest.raises(KeyError):
        settings.crawl_definition("nope")


def test_a_definition_keeps_its_own_values(tmp_path: Path) -> None:
    settings = _load(tmp_path, '[crawl]\nallow_networks = ["10.0.0.0/8"]\n'
                     '[[crawls]]\nname = "two-sites"\n'
                     'seeds = ["https://a.test/start", "http://b.test:8081/"]\n'
                     'allowed_networks = []\nhost_map = { "*.test" = "[::1]:8081" }\n'
                     'allowed_domains = ["*.test"]\nmax_depth = 0\npage_budget = 7\n'
                     'max_pages = 100\nper_host_concurrency = 2\nmin_delay_seconds = 0.5\n'
                     'cadence = "0 3 * * 1"\nconditional = false\n' + DOCS)
    two, docs = settings.crawl_definitions
    assert two == CrawlDefinition(
        name="two-sites", seeds=("https://a.test/start", "http://b.test:8081/"),
        allowed_domains=("*.test",), allowed_networks=(), host_map=(("*.test", "[::1]:8081"),),
        max_depth=0, page_budget=7, max_pages=100, per_host_concurrency=2,
        min_delay_seconds=0.5, cadence="0 3 * * 1", conditional=False)
    assert docs.allowed_networks == ("10.0.0.0/8",)


def test_legacy_private_addresses_open_loopback_to_definitions(tmp_path: Path) -> None:
    settings = _load(tmp_path, "[crawl]\nallow_private_addresses = true\n" + DOCS)
    assert settings.crawl_definitions[0].allowed_networks == ("127.0.0.0/8", "::1")


def test_no_crawls_table_means_no_definitions(tmp_path: Path) -> None:
    assert load_settings(tmp_path, environ={}).crawl_definitions == ()


@pytest.mark.parametrize(("table", "expected"), [
    ('name = "bad name"\nseeds = ["http://a.test/"]\n',
     "`crawls.'bad name'.name`: 'bad name' must be 1-40 characters"),
    ('name = "' + "x" * 41 + '"\nseeds = ["http://a.test/"]\n', "must be 1-40 characters"),
    ('name = ""\nseeds = ["http://a.test/"]\n', "`crawls.#1.name`"),
    ('seeds = ["http://a.test/"]\n', "`crawls.#1.name`: Field required"),
    ('name = "docs"\n', "`crawls.'docs'.seeds`: Field required"),
    ('name = "docs"\nseeds = []\n', "`crawls.'docs'.seeds`: List should have at least 1 item"),
    ('name = "docs"\nseeds = ["ftp://a.test/"]\n',
     "`crawls.'docs'.seeds`: 'ftp://a.test/' is not an http:// or https:// URL with a host"),
    ('name = "docs"\nseeds = ["a.test/index.html"]\n', "is not an http:// or https://"),
    ('name = "docs"\nseeds = ["http:///path"]\n', "with a host"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nallowed_networks = ["localhost"]\n',
     "`crawls.'docs'.allowed_networks`: 'localhost' is not an IP address or network"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nallowed_networks = ["127.0.0.1:99999"]\n',
     "`crawls.'docs'.allowed_networks`: '127.0.0.1:99999': ports are 1 to 65535"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nhost_map = { "a.test" = "example.org" }\n',
     "`crawls.'docs'.host_map`: host_map target 'example.org' is not an IP address"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nhost_map = { "a.test" = "127.0.0.1:x" }\n',
     "'x' is not a port"),
    ('name = "docs"\nseeds = ["http://a.test/"]\ncadence = "weekly"\n',
     "`crawls.'docs'.cadence`: 'weekly' has 1 field(s), a cron string has 5"),
    ('name = "docs"\nseeds = ["http://a.test/"]\ncadence = "0 25 * * *"\n',
     "`crawls.'docs'.cadence`: '0 25 * * *': hour '25': 25 is outside 0-23"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nmax_depth = -1\n',
     "`crawls.'docs'.max_depth`: Input should be greater than or equal to 0"),
    ('name = "docs"\nseeds = ["http://a.test/"]\npage_budget = 0\n', "`crawls.'docs'.page_budget`"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nper_host_concurrency = 0\n',
     "`crawls.'docs'.per_host_concurrency`"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nmin_delay_seconds = -1\n',
     "`crawls.'docs'.min_delay_seconds`"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nseed = "http://b.test/"\n',
     "unknown setting `crawls.'docs'.seed`"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nbrowser = "sometimes"\n',
     "`crawls.'docs'.browser`: Input should be 'never', 'auto' or 'always'"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nbrowser_by_domain = { "a.test" = "yes" }\n',
     "`crawls.'docs'.browser_by_domain"),
    ('name = "docs"\nseeds = ["http://a.test/"]\nbrowser_by_domain = { "a b" = "auto" }\n',
     "`crawls.'docs'.browser_by_domain`: 'a b' is not a host name or glob"),
])
def test_a_bad_definition_names_itself_and_the_key(tmp_path: Path, table: str,
                                                    expected: str) -> None:
    (tmp_path / "archive.toml").write_text("[[crawls]]\n" + table)
    with pytest.raises(SettingsError) as info:
        load_settings(tmp_path, environ={})
    message = str(info.value)
    assert expected in message
    assert "archive.toml" in message and "\n" not in message


def test_two_definitions_may_not_share_a_name(tmp_path: Path) -> None:
    (tmp_path / "archive.toml").write_text(DOCS + DOCS.replace("docs.test", "other.test"))
    with pytest.raises(SettingsError, match="two \\[\\[crawls\\]\\] tables are named docs"):
        load_settings(tmp_path, environ={})


def test_names_differing_only_in_dash_and_underscore_are_refused(tmp_path: Path) -> None:
    (tmp_path / "archive.toml").write_text(DOCS.replace('"docs"', '"a-b"')
                                           + DOCS.replace('"docs"', '"a_b"'))
    with pytest.raises(SettingsError, match="'a-b' and 'a_b' differ only in"):
        load_settings(tmp_path, environ={})


def test_the_snapshot_is_json_and_reads_back(tmp_path: Path) -> None:
    settings = _load(tmp_path, '[[crawls]]\nname = "d"\nseeds = ["http://a.test/"]\n'
                               'host_map = { "b.test" = "127.0.0.1:1", "a.test" = "127.0.0.1:2" }\n'
                               'cadence = "@daily"\nmin_delay_seconds = 0.25\n')
    definition = settings.crawl_definitions[0]
    stored = json.loads(json.dumps(definition.as_dict()))
    assert stored["host_map"] == {"a.test": "127.0.0.1:2", "b.test": "127.0.0.1:1"}
    assert stored["seeds"] == ["http://a.test/"]
    assert CrawlDefinition.from_dict(stored) == definition


def test_the_browser_keys_go_into_the_snapshot(tmp_path: Path) -> None:
    settings = _load(tmp_path, DOCS + 'browser = "auto"\n'
                     'browser_by_domain = { "app.docs.test" = "always", "*.cdn.test" = "never" }\n')
    (docs,) = settings.crawl_definitions
    assert docs.browser == "auto"
    assert docs.browser_by_domain == (("*.cdn.test", "never"), ("app.docs.test", "always"))
    stored = json.loads(json.dumps(docs.as_dict()))
    assert stored["browser_by_domain"] == {"app.docs.test": "always", "*.cdn.test": "never"}
    assert CrawlDefinition.from_dict(stored) == docs
    # A snapshot queued before browser capture existed reads back as never.
    older = {k: v for k, v in stored.items() if not k.startswith("browser")}
    assert CrawlDefinition.from_dict(older).browser == "never"


@pytest.mark.parametrize(("data", "expected"), [
    ({"name": "d", "seeds": ["http://a.test/"], "colour": 1}, "unknown key(s) colour"),
    ({"name": "d"}, "missing seeds"),
    ({"name": "d", "seeds": []}, "crawl definition 'd': seeds: at least one seed"),
    ({"name": "d", "seeds": ["mailto:x@a.test"]}, "crawl definition 'd': seeds: 'mailto:"),
    ({"name": "d d", "seeds": ["http://a.test/"]}, "name: 'd d' must be"),
    ({"name": "d", "seeds": ["http://a.test/"], "cadence": "@never"}, "cadence: '@never'"),
    ({"name": "d", "seeds": ["http://a.test/"], "max_pages": -1}, "max_pages: must be at least 0"),
    ({"name": "d", "seeds": ["http://a.test/"], "browser": "on"},
     "crawl definition 'd': browser: 'on' is not one of never, auto, always"),
    ({"name": "d", "seeds": ["http://a.test/"], "browser_by_domain": {"a.test": "maybe"}},
     "browser_by_domain: 'maybe' is not one of never, auto, always"),
])
def test_a_bad_snapshot_is_refused_with_the_reason(data: dict[str, object], expected: str) -> None:
    with pytest.raises(ValueError) as info:
        CrawlDefinition.from_dict(data)
    assert expected in str(info.value)
