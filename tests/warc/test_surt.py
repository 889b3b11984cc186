"""Our SURT against the `surt` package (AGPL, test-time only), URL by URL.

The package is the reference: cdxj-indexer and pywb key their CDXJ lines with `surt.surt(url)`,
falling back to the URL itself when it raises (cdxj-indexer's `get_url_key`). Deliberate
difference (see archive_pipelines/warc/surt.py): the package asks the system resolver about
dotted-digit hosts; here the comparison runs it against a resolver that knows only IPv4
literals (C's `inet_aton`, through `socket.inet_aton`), which is what a resolver answers for
them; the real resolver is checked on literals separately.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator

import pytest
import surt as reference_surt

from archive_pipelines.surt import surt

SCHEMES = ["http://", "https://", "HTTP://", "Https://", "", "ftp://", "ws://", "metadata://",
           "http://https://", "dns://", "http:////"]
USERINFO = ["", "", "", "user@", "user:pass@", "User:P%40ss@", "@"]
HOSTS = [
    "example.com", "www.example.com", "WWW.Example.COM", "www2.example.co.uk", "www.www.x.org",
    "sub.www.example.org", "wwwx.example.net", "bücher.de", "BÜCHER.de", "例え.jp", "münchen.DE",
    "xn--bcher-kva.de", "[2001:db8::1]", "[::1]", "[2001:DB8:0:0:8:800:200C:417A]", "192.168.1.1",
    "3232235777", "0300.0250.0.1", "10.010.1.1", "127.1", "10.1.258", "0", "017700000001",
    "..a..b..", "a...b", "%77ww.example.com", "exa%6Dple.com", "exa%256Dple.com", "host_name.com",
    "a" * 70 + ".com", "ex%20ample.com", "tr\u00e4iling.", "example.com.", "localhost",
    "xn--nxasmq6b.com", "ex!ample.com", "caf%C3%A9.fr", "\u0434\u043e\u043c.\u0440\u0444",
    "www123.example.com", "www.", "",
]
PORTS = ["", "", "", ":80", ":443", ":8080", ":0", ":", ":65535", ":99999", ":abc", ":080"]
PATHS = [
    "", "/", "/a/b/", "/A/B", "/a/./b/../c", "//double//slash/", "/%7Euser/", "/%2525",
    "/caf%C3%A9", "/café", "/a b", "/a%20b", "/(S(abcdefghijklmnopqrstuvwx))/page.aspx",
    "/x/(abcdefghijklmnopqrstuvwx)/Default.aspx?x=1", "/../x", "/index.html", "/a/b/..",
    "/%2e%2e/up", "/a%2Fb", "/%E4%BD%A0%E5%A5%BD", "/a;b=c", "/~user/file.PDF", "/a%00b",
    "/%", "/%zz", "/a|b", "/a\\b", "/\u00e9t\u00e9/", "/.", "/..",
]
QUERIES = [
    "", "", "?", "?b=2&a=1", "?A=1&a=2", "?z&a=1&z=", "?q=%E4%BD%A0", "?q=a%26b",
    "?q=hello world", "?%3D=1", "?a=1&&b=2", "?=x", "?jsessionid=0123456789ABCDEF0123456789abcdef&x=1",
    "?x=1&PHPSESSID=0123456789abcdef0123456789abcdef", "?sid=0123456789abcdef0123456789ABCDEF",
    "?ASPSESSIONIDABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVWX&p=2", "?cfid=123&cftoken=abc&q=1",
    "?utm_source=x&id=5", "?a=%2525", "?Ä=ö", "?a=1#in-query",
]
FRAGMENTS = ["", "", "", "#", "#frag", "#a?b=1", "#/route/x"]
WRAPPERS = [("", ""), ("", ""), ("", ""), ("  ", " "), ("\t", "\n"), ("", "\r\n")]

REAL_WORLD = [
    "https://www.bbc.co.uk/news/world-europe-12345678",
    "https://en.wikipedia.org/wiki/Main_Page",
    "https://en.wikipedia.org/wiki/C%2B%2B",
    "https://www.google.com/search?q=web+archive&hl=en&oq=web",
    "https://github.com/webrecorder/pywb/blob/main/README.rst#installation",
    "http://archive.org/web/",
    "https://web.archive.org/web/20200101000000*/example.com",
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
    "https://twitter.com/i/web/status/1234567890",
    "https://www.amazon.co.jp/dp/B000000000/ref=sr_1_1?keywords=%E6%9C%AC",
    "http://example.com:8080/path/to/page.php?id=10&lang=fr",
    "https://news.ycombinator.com/item?id=1",
    "https://docs.python.org/3/library/urllib.parse.html#urllib.parse.urlsplit",
    "mailto:someone@example.com",
    "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
    "urn:sha256:ABCDEF",
    "metadata://example.com/page",
    "dns:example.com",
    "data:text/plain;base64,SGVsbG8=",
    "about:blank",
    "javascript:void(0)",
    "file:///etc/hosts",
    "filedesc://crawl.arc.gz",
    "example.com/no/scheme",
    "www.example.com",
    "localhost:8080/x",
    "//protocol-relative.example.com/a",
    "/relative/path",
    "?only=query",
    "#only-fragment",
    "http://",
    "https://",
    "http:",
    "http://user@/path",
    "http:///",
    "http://www.example.com/aspx/(S(abcdefghijklmnopqrstuvwx))/page.aspx",
    "HTTP://WWW.EXAMPLE.COM/INDEX.HTML?B=2&A=1",
    "https://xn--80ak6aa92e.com/",
    "http://[fe80::1%25eth0]/",
    "http://[::ffff:192.0.2.1]:80/",
    "http://%65xample.com/",
    "http://ex ample.com/",
    "http://a.b.c.d.e.f.g.h.example.com/",
]


def _known_only_to_inet_aton(name: str | bytes) -> tuple[str, list[str], list[str]]:
    """A resolver that knows IPv4 literals only (what every resolver answers for them)."""
    text = name.decode("ascii") if isinstance(name, bytes) else name
    try:
        address = socket.inet_ntoa(socket.inet_aton(text))
    except OSError as error:
        raise socket.gaierror(socket.EAI_NONAME, "unknown name") from error
    return text, [], [address]


def reference_key(url: str) -> str:
    """cdxj-indexer's `get_url_key`: `surt.surt(url)`, or the URL itself if that raises."""
    try:
        return reference_surt.surt(url)
    except Exception:
        return url


@pytest.fixture
def literal_only_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostbyname_ex", _known_only_to_inet_aton)


def generated_corpus(count: int, seed: int = 28) -> Iterator[str]:
    chooser = random.Random(seed)
    for _ in range(count):
        before, after = chooser.choice(WRAPPERS)
        yield (before + chooser.choice(SCHEMES) + chooser.choice(USERINFO) + chooser.choice(HOSTS)
               + chooser.choice(PORTS) + chooser.choice(PATHS) + chooser.choice(QUERIES)
               + chooser.choice(FRAGMENTS) + after)


def _mismatches(urls: list[str]) -> list[tuple[str, str, str]]:
    return [(url, ours, theirs) for url in urls
            if (ours := surt(url)) != (theirs := reference_key(url))]


def test_a_generated_corpus_keys_as_the_surt_package_does(literal_only_resolver: None) -> None:
    corpus = list(generated_corpus(3000))
    assert len(set(corpus)) >= 2000
    assert _mismatches(corpus) == []


def test_real_world_looking_urls_key_as_the_surt_package_does(literal_only_resolver: None) -> None:
    assert _mismatches(REAL_WORLD) == []


def test_every_component_alone_keys_as_the_surt_package_does(literal_only_resolver: None) -> None:
    singles = ([f"http://{host}/" for host in HOSTS] + [f"http://example.com{port}/" for port in PORTS]
               + [f"http://example.com{path}" for path in PATHS]
               + [f"http://example.com/{query}" for query in QUERIES]
               + [f"{scheme}example.com/" for scheme in SCHEMES])
    assert _mismatches(singles) == []


def test_ipv4_literals_key_as_the_real_resolver_reads_them() -> None:
    """No monkeypatching: the package's own resolver call on literals (no network needed)."""
    literals = ["192.168.1.1", "3232235777", "0300.0250.0.1", "10.010.1.1", "127.1", "10.1.258",
                "017700000001", "1.2.3", "00000000000000000001.2.3.4"]
    assert _mismatches([f"http://{host}/x" for host in literals]) == []


def test_hostile_inputs_key_as_the_surt_package_does(literal_only_resolver: None) -> None:
    hostile = [
        "http://example.com/" + "a" * 100_000,
        "http://example.com/?" + "&".join(f"k{i}=v" for i in range(20_000)),
        "http://" + "a." * 50_000 + "com/",
        "http://" + "1" * 5000 + "/",  # a numeric host beyond int()'s digit limit
        "http://1." + "2" * 5000 + "/",
        "http://" + "%25" * 30_000 + "41.com/",
        "http://example.com/" + "%2525" * 20_000,
        "http://example.com/" + "../" * 30_000,
        "http://" + "ü" * 70 + ".de/",  # an IDNA label too long
        "http://\ud800.com/",  # a lone surrogate: not UTF-8
        "http://exa\x00mple.com/",
        "\x0b\x0c http://example.com/ \x0b",
        " ",
        "\t\n",
        "http://[::1/",
        "http://[zz]:80/",
        "http://example.com:-1/",
        "http://example.com:\uff11\uff12/",  # full-width digits
    ]
    assert _mismatches(hostile) == []


@pytest.mark.unit
@pytest.mark.parametrize(("url", "key"), [
    ("http://www.Example.com:80/a/../B/?b=2&a=1#x", "com,example)/b?a=1&b=2"),
    ("https://bücher.de/ä", "de,xn--bcher-kva)/%c3%a4"),
    ("http://[2001:db8::1]:8080/", "2001:db8::1:8080)/"),
    ("http://user:secret@www2.example.org/", "org,example)/"),
    ("urn:ISBN:0451450523", "urn:isbn:0451450523"),
    ("metadata://www.example.com/page", "com,example)/page"),
    ("https://example.com:443/", "com,example)/"),
    ("http://example.com:99999/", "http://example.com:99999/"),
    ("", "-"),
])
def test_known_keys(url: str, key: str) -> None:
    assert surt(url) == key


@pytest.mark.unit
def test_hostile_inputs_never_raise_and_stay_fast() -> None:
    started = time.monotonic()
    for url in ["http://example.com/" + "a" * 100_000, "http://" + "ü" * 100_000 + "/",
                "http://" + "9" * 100_000 + "/", "\ud800", "http://[" + ":" * 100_000 + "]/",
                "x" * 100_000, "http://example.com/?" + "a&" * 50_000]:
        assert isinstance(surt(url), str)
    assert time.monotonic() - started < 10


PLAIN_HOSTS = ["example.com", "EXAMPLE.com", "www.example.com", "WWW2.Example.COM", "www", "www.com",
               "a-b.example.org", "1.2.3.a", "x1.2", "-.com", "sub.www.example.com", "127.0.0.1",
               "0x7f.1", "10.1", "123"]
PLAIN_PORTS = ["", ":80", ":443", ":0", ":8080", ":00080", ":65535", ":65536", ":99999"]
PLAIN_PATHS = ["", "/", "/a", "/A/B/", "/a//b", "/./a", "/a/.", "/a/..", "/a/../b", "/a.b/c..d",
               "/~user/x_y-z.html", "/p;x=1/q:r@s", "/sid=1/", "/index.ASPX", "/a/b/c/"]
PLAIN_QUERIES = ["", "?", "?a=1", "?b=2&a=1", "?B=2&A=1&a=0", "?a&&b", "?a=1=2&a", "??x", "?x?y=1",
                 "?sid=" + "a" * 32, "?phpsessid=" + "b" * 32, "?jsessionid=" + "c" * 32,
                 "?cfid=1&cftoken=2", "?ASPSESSIONIDABCDEFGH=" + "d" * 24, "?q=/x:y@z"]


def test_plain_urls_take_a_short_way_to_the_same_key() -> None:
    """`_plain_key` (no general parse) gives what the general way gives, for every URL it
    accepts; URLs near its edges (ports, dot segments, IPv4 forms, session ids) included."""
    from archive_pipelines.surt import _general_key, _plain_key

    urls = [scheme + host + port + path + query for scheme in ("http://", "https://")
            for host in PLAIN_HOSTS for port in PLAIN_PORTS for path in PLAIN_PATHS
            for query in PLAIN_QUERIES]
    plain = [(url, key) for url in urls if (key := _plain_key(url.encode())) is not None]
    assert len(plain) > len(urls) // 5  # the short way is taken often, even among edge cases
    assert [(url, key) for url, key in plain if key != _general_key(url.encode())] == []


def test_plain_urls_key_as_the_surt_package_does(literal_only_resolver: None) -> None:
    chooser = random.Random(30)
    urls = [chooser.choice(("http://", "https://")) + chooser.choice(PLAIN_HOSTS)
            + chooser.choice(PLAIN_PORTS) + chooser.choice(PLAIN_PATHS) + chooser.choice(PLAIN_QUERIES)
            for _ in range(1500)]
    assert _mismatches(urls) == []
