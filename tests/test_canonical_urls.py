"""Canonicalization, domain keys, fingerprints and the line encoding of the URL field."""

from __future__ import annotations

import random

import pytest
from w3lib.url import canonicalize_url

from archive_pipelines import canonical_urls as urls
from archive_pipelines.canonical_urls import (
    InvalidURL,
    canonicalize,
    decode_line_field,
    domain_key,
    encode_line_field,
    has_userinfo,
    url_fingerprint,
    without_userinfo,
)
from frontier_service.frontier.frontier_record import FrontierRecord, format_line, parse_line


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "canonical"), [
    ("HTTP://Example.COM/a/b", "http://example.com/a/b"),
    ("https://EXAMPLE.com/Path/Keeps/Case", "https://example.com/Path/Keeps/Case"),
    ("http://example.com:80/x", "http://example.com/x"),
    ("https://example.com:443/x", "https://example.com/x"),
    ("http://example.com:443/x", "http://example.com:443/x"),
    ("https://example.com:8443/x", "https://example.com:8443/x"),
    ("http://example.com/a#section", "http://example.com/a"),
    ("http://example.com/a?b=2&a=1", "http://example.com/a?a=1&b=2"),
    ("http://example.com/a?z&a=1", "http://example.com/a?a=1&z="),
    ("http://example.com", "http://example.com/"),
    ("http://example.com?q=1", "http://example.com/?q=1"),
    ("https://bücher.de/ä?x=1", "https://xn--bcher-kva.de/%C3%A4?x=1"),
    ("https://BÜCHER.de/", "https://xn--bcher-kva.de/"),
    ("http://example.com/a|b", "http://example.com/a%7Cb"),
    ("http://example.com/a%7Cb", "http://example.com/a%7Cb"),
    ("http://example.com/a?x=1|2", "http://example.com/a?x=1%7C2"),
    ("http://example.com/a\nb\r\tc", "http://example.com/abc"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("  http://example.com/x  ", "http://example.com/x"),
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com./x", "http://example.com/x"),
    ("http://user:pw@Example.com:80/", "http://example.com/"),
    ("http://[::1]:80/x", "http://[::1]/x"),
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
])
def test_canonicalize(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical
    assert canonicalize(canonical) == canonical


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "reason"), [
    ("javascript:alert(1)", "unsupported scheme 'javascript'"),
    ("mailto:someone@example.com", "unsupported scheme 'mailto'"),
    ("ftp://example.com/file", "unsupported scheme 'ftp'"),
    ("data:text/plain,hi", "unsupported scheme 'data'"),
    ("/relative/path", "no scheme"),
    ("../up", "no scheme"),
    ("//example.com/protocol-relative", "no scheme"),
    ("", "no scheme"),
    ("http:///no-host", "no host"),
    ("http:example.com/x", "no host"),
    ("http://exa|mple.com/", "invalid host"),
    ("http://a..b/", "invalid host"),
    ("http://example.com:99999/", "out of range"),
    ("http://[::1/", "unparsable"),
    ("http://example.com/" + "a" * 10_000, "longer than 8192 bytes"),
    ("http://example.com/" + "é" * 3_000, "longer than 8192 bytes once canonical"),
])
def test_invalid_urls_are_rejected_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(InvalidURL, match=reason):
        canonicalize(raw)


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "canonical"), [
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0x7f000001/", "http://127.0.0.1/"),
    ("http://0X7F000001/x", "http://127.0.0.1/x"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://0x7f.0.0x0.01/", "http://127.0.0.1/"),
    ("http://169.254.43518/", "http://169.254.169.254/"),
    ("http://0xa9fea9fe/latest/meta-data/", "http://169.254.169.254/latest/meta-data/"),
    ("http://10.1/", "http://10.0.0.1/"),
    ("http://0/", "http://0.0.0.0/"),
    ("http://0x/", "http://0.0.0.0/"),
    ("http://4294967295/", "http://255.255.255.255/"),
    ("http://127.0.0.1./", "http://127.0.0.1/"),
    ("http://2130706433:8080/a?b=2&a=1", "http://127.0.0.1:8080/a?a=1&b=2"),
    ("http://user@0x7f.1:80/", "http://127.0.0.1/"),
    # IDNA maps full-width digits to ASCII first.
    ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "http://127.0.0.1/"),
    # A name with a number in it stays a name.
    ("http://foo.123/", "http://foo.123/"),
    ("http://1e3/", "http://1e3/"),
    ("http://0x7g/", "http://0x7g/"),
    ("http://www.example.de/", "http://www.example.de/"),
])
def test_numeric_hosts_become_the_dotted_quad_a_browser_reaches(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical
    assert canonicalize(canonical) == canonical
    assert urls._parse_uncached(raw) == urls._parse_rewriting(raw)


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "reason"), [
    ("http://1.2.3.4.5/", "more than four parts"),
    ("http://256.1.1.1/", "out of range"),
    ("http://1.2.3.256/", "out of range"),
    ("http://1.2.65536/", "out of range"),
    ("http://4294967296/", "out of range"),
    ("http://09.1.1.1/", "'09' is no number"),
])
def test_numbers_that_make_no_ipv4_address_are_invalid(raw: str, reason: str) -> None:
    with pytest.raises(InvalidURL, match=f"invalid IPv4 host .*{reason}"):
        canonicalize(raw)


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "stripped"), [
    ("http://user:pw@example.com/a", "http://example.com/a"),
    ("HTTP://User:PW@Example.com:8080/a?b#c", "HTTP://Example.com:8080/a?b#c"),
    ("http://user@example.com/", "http://example.com/"),
    ("http://:pw@example.com/", "http://example.com/"),
    ("http://@example.com/", "http://example.com/"),
    ("http://a@b:c@example.com/x@y", "http://example.com/x@y"),  # the last @ ends userinfo
    ("  http://u:p@example.com/", "  http://example.com/"),
    ("http://u\tser:p@example.com/", "http://example.com/"),
    ("//u:p@example.com/a", "//example.com/a"),
    ("ftp://u:p@example.com/", "ftp://example.com/"),
    ("http://u:p@[bad/", "http://[bad/"),  # no valid URL, still cleaned
])
def test_userinfo_is_found_and_taken_out(raw: str, stripped: str) -> None:
    assert has_userinfo(raw)
    assert without_userinfo(raw) == stripped
    assert not has_userinfo(stripped)


@pytest.mark.unit
@pytest.mark.parametrize("url", [
    "http://example.com/a@b", "http://example.com/?next=http://u:p@other.example/",
    "http://example.com#u:p@x", "mailto:someone@example.com", "relative/a@b", "",
])
def test_an_at_sign_outside_the_authority_is_no_userinfo(url: str) -> None:
    assert not has_userinfo(url)
    assert without_userinfo(url) == url


@pytest.mark.unit
@pytest.mark.parametrize("raw", [
    "http://user:pw@example.com/a", "http://user@Example.com:80/a", "http://u:p@example.com/a#x",
    "http://%75:%70@example.com/a", "http://u:p@127.0.0.1/a", "http://u:p@[::1]:8080/a",
])
def test_userinfo_is_no_part_of_the_canonical_form(raw: str) -> None:
    stripped = without_userinfo(raw)
    assert canonicalize(raw) == canonicalize(stripped)
    assert "@" not in canonicalize(raw)
    assert url_fingerprint(raw) == url_fingerprint(stripped)
    assert domain_key(raw) == domain_key(stripped)


@pytest.mark.unit
def test_invalid_url_is_a_value_error() -> None:
    assert issubclass(InvalidURL, ValueError)


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "domain"), [
    ("HTTP://WWW.Example.COM:80/x", "www.example.com"),
    ("https://example.com:443/", "example.com"),
    ("https://example.com:8443/", "example.com:8443"),
    ("http://münchen.de/", "xn--mnchen-3ya.de"),
    ("http://user@host.example/", "host.example"),
    ("http://[2001:DB8::1]:8080/", "[2001:db8::1]:8080"),
])
def test_domain_key(raw: str, domain: str) -> None:
    assert domain_key(raw) == domain


@pytest.mark.unit
def test_fingerprint_is_16_bytes_of_the_canonical_url() -> None:
    fingerprint = url_fingerprint("HTTP://Example.com:80/a?b=1&a=2#x")
    assert len(fingerprint) == 16
    assert fingerprint == url_fingerprint("http://example.com/a?a=2&b=1")
    assert fingerprint != url_fingerprint("http://example.com/a?a=2&b=2")


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "field"), [
    ("http://a.example/x|y", "http://a.example/x%7Cy"),
    ("http://a.example/x\ny", "http://a.example/x%0Ay"),
    ("http://a.example/x\r\ny", "http://a.example/x%0D%0Ay"),
    ("http://a.example/x y\x00\x7f", "http://a.example/x%20y%00%7F"),
    ("http://a.example/é\u200b", "http://a.example/é%E2%80%8B"),
    ("http://a.example/plain", "http://a.example/plain"),
])
def test_encode_line_field(raw: str, field: str) -> None:
    encoded = encode_line_field(raw)
    assert encoded == field
    assert "|" not in encoded and "\n" not in encoded and "\r" not in encoded
    assert decode_line_field(encoded) == encoded


@pytest.mark.unit
@pytest.mark.parametrize("raw", [
    "http://a.example/x|y", "http://a.example/x?q=a|b", "https://a.example/ok", "http://a.example/x y",
])
def test_line_round_trip_keeps_the_url(raw: str) -> None:
    line = format_line(raw, 3, 0.5, added_at=1_700_000_000)
    assert line.count("\n") == 1 and line.count("|") == 3
    record = parse_line(line.rstrip("\n").encode())
    assert record is not None
    assert (record.depth, record.priority, record.added_at) == (3, 0.5, 1_700_000_000)
    assert canonicalize(record.url) == canonicalize(raw)
    canonical = canonicalize(raw)
    exact = parse_line(format_line(canonical, 0, 1.0, added_at=1).rstrip("\n").encode())
    assert exact == FrontierRecord(canonical, 0, 1.0, 1)


@pytest.mark.unit
@pytest.mark.parametrize("line", [b"", b"no-separators", b"http://a/x|1|1.0", b"http://a/x|one|1|2",
                                  b"http://a/x|1|1|2|3|", b"\xff\xfe|1|1|1"])
def test_corrupt_lines_parse_to_none(line: bytes) -> None:
    assert parse_line(line) is None


@pytest.mark.unit
def test_decode_refuses_a_corrupt_field() -> None:
    with pytest.raises(ValueError):
        decode_line_field("http://a/x|y")


@pytest.mark.unit
def test_fast_path_agrees_with_w3lib() -> None:
    """Simple URLs skip w3lib; on random simple URLs both paths must give the same answer."""
    rnd = random.Random(5)

    def word(alphabet: str, low: int, high: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(low, high)))

    checked = 0
    for _ in range(5_000):
        host = ".".join(word("abcXYZ019-", 1, 6) for _ in range(rnd.randint(1, 3)))
        port = rnd.choice(["", ":80", ":443", ":8080"])
        path = rnd.choice(["", "/", "/" + word("aZ09._~/-", 0, 12)])
        query = "?" + "&".join(word("aZ09._~-=", 0, 4) for _ in range(rnd.randint(1, 3)))
        url = f"{rnd.choice(['http', 'HTTPS'])}://{host}{port}{path}{query if rnd.random() < 0.6 else ''}#f"
        fast = urls._canonicalize_simple(url)
        if fast is None:
            continue
        checked += 1
        assert fast == urls._canonicalize_general(url), url
        assert fast[0].split("#")[0].startswith(canonicalize_url(url).split("://")[0])
    assert checked > 2_000


_TRICKY = [
    "https://a.example/", "http://a.example/x?b=1&a=2", "http://a.example/x?a=2&a=1",
    "http://a.example/x?a-b=1&a=2", "http://a.example/x?a=1&a-b=2", "http://a.example/x?a.=1&a=0",
    "http://a.example/x?a=&a", "http://a.example/x?=1", "http://a.example/x?a==1",
    "http://a.example/x?a=1&&b=2", "http://a.example/x?", "http://a.example/x?a=1#f",
    "http://a.example/x/./y", "http://a.example/x/../y", "http://a.example/.hidden",
    "http://a.example/x/.", "http://a.example//x", "http://a.example/~u/_x/-y.z",
    "http://A.example/", "HTTP://a.example/", "http://a.example:80/", "http://a.example:8080/",
    "http://a.example", "http://a.example?x=1", "http://a.example./", "http://.a.example/",
    "http://-a.example/", "http://a-.example/", "http://a..example/", "http://a.-b.example/",
    "http://a-.b.example/", "http://a--b.example/", "http://xn--bcher-kva.de/", "http://a_b.example/",
    "http://127.0.0.1/", "http://0/", "http://1.2.3.4.5/", "http://[::1]/", "http://127.1/",
    "http://0x7f000001/", "http://2130706433/x?b=1&a=2", "http://0177.0.0.1/", "http://1.0x2/",
    "http://" + "a" * 63 + ".example/", "http://" + "a" * 64 + ".example/",
    "http://" + ".".join(["abcdefghi"] * 25) + "/", "http://" + ".".join(["abcdefghi"] * 26) + "/",
    "http://a.example/%7E", "http://a.example/a b", "http://a.example/a|b", "http://a.example/é",
    "http://user@a.example/", "http://a.example/x?q=a/b", "http://a.example/x?q=a?b",
    " http://a.example/", "http://a.example/ ", "http://a.example/\t", "https://a.example/x;p",
    "http://a.example/" + "x" * 8200, "http://a.example/x?" + "&".join(f"k{i}=v" for i in range(30, 0, -1)),
]


@pytest.mark.unit
@pytest.mark.parametrize("url", _TRICKY)
def test_canonical_fast_path_matches_the_full_parse_on_tricky_urls(url: str) -> None:
    assert urls._parse_uncached(url) == urls._parse_rewriting(url)
    assert urls.try_canonical_many([url]) == [_via_full_parse(url)]


def test_canonical_fast_path_matches_the_full_parse_on_random_urls() -> None:
    """Random URLs near the fast path's edges: both paths give the same URL, domain and hash."""
    rnd = random.Random(11)

    def word(alphabet: str, low: int, high: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(low, high)))

    batch = []
    for _ in range(20_000):
        host = rnd.choice(".-") * (rnd.random() < 0.05) + ".".join(
            word("abcz019" + "-" * (rnd.random() < 0.3) + "A_." * (rnd.random() < 0.1), 1, 8)
            for _ in range(rnd.randint(1, 4)))
        if rnd.random() < 0.03:
            host = word("ab", 60, 70) + ".example"
        port = rnd.choice(["", "", "", ":80", ":443", ":8080"])
        path = rnd.choice(["", "/", "/" + word("aZ09._~/-", 0, 14), "/" + word("aZ09_~-", 0, 14),
                           "/" + word("aZ09./%é |", 0, 8)])
        pairs = [word("aZ09._~-", 0, 3) + rnd.choice(["=", "=", "", "=="]) + word("aZ0._~-", 0, 3)
                 for _ in range(rnd.randint(1, 4))]
        query = "?" + "&".join(pairs) if rnd.random() < 0.5 else ""
        fragment = "#f" if rnd.random() < 0.1 else ""
        scheme = rnd.choice(["http", "https", "https", "HTTPS"])
        batch.append(f"{scheme}://{host}{port}{path}{query}{fragment}")
    fast = 0
    for url in batch:
        assert urls._parse_uncached(url) == urls._parse_rewriting(url), url
        fast += urls._already_canonical(url) is not None
    assert urls.try_canonical_many(batch) == [_via_full_parse(url) for url in batch]
    assert fast > 1_000  # the fast path was exercised (~1,600 of these edge-heavy URLs)


def _via_full_parse(url: str) -> tuple[str, str, bytes] | None:
    found = urls._parse_rewriting(url)
    return None if isinstance(found, str) else found
