"""URL canonicalization, domain keys, fingerprints and the frontier line's URL field.

One definition for the crawler (the frontier keys URLs by it) and the catalog's captures
(a URL's captures are found by the hash of its canonical form).

Userinfo (`user:password@`) is no part of the canonical form: a link carrying credentials
is the same page as one without, and the crawler neither sends nor stores them.

Every URL is canonicalized before it is hashed and before its domain key is derived, so
``HTTP://Example.COM:80/a?b=2&a=1#x`` and ``http://example.com/a?a=1&b=2`` are one URL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

MAX_URL_BYTES = 8192
_blake2b = hashlib.blake2b
DEFAULT_PORTS = {"http": 80, "https": 443}

# WHATWG strips leading and trailing C0 controls and spaces before parsing.
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))

# Already-simple URLs that w3lib would only lowercase / reorder: skip its ~25 us parse.
# tests/test_canonical_urls.py checks this path against w3lib.
_FAST = re.compile(
    r"(https?)://([a-z0-9.-]{1,253})(?::([1-9][0-9]{0,4}))?"
    r"(/[A-Za-z0-9._~/-]*)?(?:\?([A-Za-z0-9._~=&-]+))?",
    re.ASCII,
)
_HOST = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*", re.ASCII)
_IPV6 = re.compile(r"[0-9a-f:.]+", re.ASCII)
_SCHEME_HOST = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)", re.ASCII)
# Up to the end of a URL's userinfo, as urlsplit and browsers read it: the authority runs
# from `//` to the first `/`, `?` or `#`, and its last `@` ends the userinfo.
_USERINFO = re.compile(r"([\x00-\x20]*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)[^/?#]*@", re.ASCII)

# A URL _canonicalize_simple would leave as it is: lower case scheme and host (letters and
# digits, single dots and inner hyphens), no port, a path, maybe a query of `key=value`
# pairs (group 2 holds a second pair). The caller refuses `/.` and hosts over 63 bytes.
_CANONICAL = re.compile(
    r"https?://([a-z0-9]+(?:(?:-+|\.)[a-z0-9]+)*)/[A-Za-z0-9._~/-]*"
    r"(?:\?[A-Za-z0-9._~-]+=[A-Za-z0-9._~-]*(&[A-Za-z0-9._~-]+=[A-Za-z0-9._~-]*)*)?",
    re.ASCII,
)

# A host whose every label is a number (decimal, 0-octal or 0x-hex): an IPv4 address to a
# browser (WHATWG URL's IPv4 parser), however spelled (`2130706433`, `0x7f.1`, `0177.0.0.1`).
# Such hosts take the full parse, which writes them as the dotted quad the socket reaches.
_NUMERIC_HOST = re.compile(r"(?:(?:0x[0-9a-f]*|[0-9]+)\.)*(?:0x[0-9a-f]*|[0-9]+)", re.ASCII)
_NUMBER_END = frozenset("0123456789abcdefx")  # a label ending otherwise is no number

# Characters that would break a `url|depth|priority|added_ts\n` line, or that no URL should carry.
_LINE_UNSAFE = re.compile(r"[|\x00-\x20\x7f]")


class InvalidURL(ValueError):
    """The URL cannot enter the frontier (bad scheme, no host, too long, unparsable)."""


def canonicalize(url: str) -> str:
    """The canonical form of an absolute http(s) URL; raises InvalidURL with the reason."""
    return canonical_url_and_domain(url)[0]


def domain_key(url: str) -> str:
    """The URL's domain key: punycode lowercase host, plus the port when it is not the default."""
    return canonical_url_and_domain(url)[1]


def url_fingerprint(url: str) -> bytes:
    """16-byte blake2b of the canonical URL."""
    return canonical_url_and_domain(url)[2]


def fingerprint_canonical(canonical_url: str) -> bytes:
    """16-byte blake2b of an already canonical URL."""
    return hashlib.blake2b(canonical_url.encode(), digest_size=16).digest()


def canonical_url_and_domain(url: str) -> tuple[str, str, bytes]:
    """(canonical URL, domain key, fingerprint) in one parse; raises InvalidURL."""
    parsed = _parse(url)
    if isinstance(parsed, str):
        raise InvalidURL(parsed)
    return parsed


def try_canonical_url_and_domain(url: str) -> tuple[str, str, bytes] | None:
    """canonical_url_and_domain, or None for an invalid URL (the crawler's hot path)."""
    parsed = _parse(url)
    return None if isinstance(parsed, str) else parsed


def try_canonical_many(urls: Iterable[str]) -> list[tuple[str, str, bytes] | None]:
    """try_canonical_url_and_domain for a batch of URLs, bypassing the cache.

    For bulk adds of mostly distinct URLs: there a cache miss's insert and eviction cost
    more (~3 us) than the parse itself saves. Same results, invalid URLs as None.
    """
    canonical, parse = _already_canonical, _parse_rewriting
    found: tuple[str, str, bytes] | str | None
    out: list[tuple[str, str, bytes] | None] = []
    for url in urls:
        found = canonical(url)
        if found is None:
            found = parse(url)
            if isinstance(found, str):
                found = None
        out.append(found)
    return out


def _parse_uncached(url: str) -> tuple[str, str, bytes] | str:
    """The parse, or the reason the URL is invalid."""
    found = _already_canonical(url)
    return _parse_rewriting(url) if found is None else found


def _already_canonical(url: str) -> tuple[str, str, bytes] | None:
    """The parse of a URL that is canonical but for its query's order, or None.

    Most links are (lower case host, no port, a path, `key=value` pairs): then one regex
    match replaces the parse. Takes a subset of the URLs _canonicalize_simple takes, with
    the same result (tests/test_canonical_urls.py checks both against each other and w3lib).
    """
    m = _CANONICAL.fullmatch(url)
    if m is None or "/." in url or len(url) > MAX_URL_BYTES:
        return None
    host = m.group(1)
    if len(host) > 63:  # might hold a label over 63 bytes: let the full parse judge
        return None
    if host[-1] in _NUMBER_END and _NUMERIC_HOST.fullmatch(host):
        return None
    if m.group(2) is not None:  # two or more pairs: w3lib sorts them
        cut = url.index("?") + 1
        url = url[:cut] + _sorted_pairs(url[cut:])
    return url, host, _blake2b(url.encode(), digest_size=16).digest()


def _parse_rewriting(url: str) -> tuple[str, str, bytes] | str:
    """The general parse, or the reason the URL is invalid."""
    try:
        if url and (url[0] <= " " or url[-1] <= " "):
            url = url.strip(_C0_AND_SPACE)
        if len(url) > MAX_URL_BYTES:
            raise InvalidURL(f"URL is longer than {MAX_URL_BYTES} bytes")
        fast = _canonicalize_simple(url)
        canonical, domain = fast if fast is not None else _canonicalize_general(url)
    except InvalidURL as exc:
        return str(exc)
    return canonical, domain, _blake2b(canonical.encode(), digest_size=16).digest()


# Cached, as pages repeat their links.
_parse = lru_cache(maxsize=1 << 16)(_parse_uncached)


def _canonicalize_simple(url: str) -> tuple[str, str] | None:
    """Canonical form of a URL with a plain ASCII host, path and query; None if not that simple."""
    cut = url.find("#")
    head = url if cut < 0 else url[:cut]
    m = _FAST.fullmatch(head)
    if m is None:
        match = _SCHEME_HOST.match(head)
        if match is None or match.group(0).islower():
            return None
        m = _FAST.fullmatch(match.group(0).lower() + head[match.end():])
        if m is None:
            return None
    scheme, host, port, path, query = m.groups()
    if not _plain_host(host) or (path is not None and "/." in path):
        return None
    netloc = host
    if port is not None:
        number = int(port)
        if number > 65535:
            raise InvalidURL(f"port {number} is out of range")
        if number != DEFAULT_PORTS[scheme]:
            netloc = f"{host}:{port}"
    path = path or "/"
    if query is None:
        return f"{scheme}://{netloc}{path}", netloc
    query = _sorted_query(query)
    if query is None:
        return None
    return f"{scheme}://{netloc}{path}?{query}", netloc


def _plain_host(host: str) -> bool:
    """Labels of 1-63 letters, digits and inner hyphens (what IDNA leaves unchanged), not all numbers."""
    if host[0] in ".-" or host[-1] in ".-" or ".." in host or ".-" in host or "-." in host:
        return False
    if host[-1] in _NUMBER_END and _NUMERIC_HOST.fullmatch(host):
        return False
    return len(host) <= 63 or all(len(label) <= 63 for label in host.split("."))


def _sorted_query(query: str) -> str | None:
    """w3lib's query: (key, value) pairs sorted, a bare key written `key=`; None if unusual."""
    if "&" not in query:
        key, equals, value = query.partition("=")
        if not key or "=" in value:
            return None
        return query if equals else query + "="
    pairs = [piece.partition("=") for piece in query.split("&")]
    for key, _, value in pairs:
        if not key or "=" in value:
            return None
    pairs.sort()  # partition triples sort exactly like w3lib's (key, value) pairs
    return "&".join([key + "=" + value for key, _, value in pairs])


def _sorted_pairs(query: str) -> str:
    """_sorted_query of `key=value` pairs with non-empty keys and one `=` each."""
    pairs = [piece.partition("=") for piece in query.split("&")]
    pairs.sort()
    return "&".join(["".join(pair) for pair in pairs])


def _canonicalize_general(url: str) -> tuple[str, str]:
    """w3lib's canonical form, plus the frontier's rules on scheme, host, port and `|`."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise InvalidURL(f"unparsable URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if not scheme:
        raise InvalidURL("not an absolute URL (no scheme)")
    if scheme not in DEFAULT_PORTS:
        raise InvalidURL(f"unsupported scheme {scheme!r} (only http and https)")
    try:
        canonical = canonicalize_url(url)
        parts = urlsplit(canonical)
        host = parts.hostname
        port = parts.port
    except (ValueError, UnicodeError) as exc:
        raise InvalidURL(f"unparsable URL: {exc}") from exc
    if not host:
        raise InvalidURL("URL has no host")
    if ":" in host:
        if _IPV6.fullmatch(host) is None:
            raise InvalidURL(f"invalid IPv6 host {host[:80]!r}")
        host = f"[{host}]"
    else:
        host = host.rstrip(".")
        if len(host) > 253 or _HOST.fullmatch(host) is None:
            raise InvalidURL(f"invalid host {host[:80]!r}")
        if host[-1] in _NUMBER_END and _NUMERIC_HOST.fullmatch(host):
            host = ipv4_from_numbers(host)
    domain = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    rebuilt = f"{scheme}://{domain}{parts.path or '/'}"  # userinfo dropped
    if parts.query:
        rebuilt += f"?{parts.query}"
    rebuilt = encode_line_field(rebuilt)
    if len(rebuilt) > MAX_URL_BYTES:
        raise InvalidURL(f"URL is longer than {MAX_URL_BYTES} bytes once canonical")
    return rebuilt, domain


def has_userinfo(url: str) -> bool:
    """Whether the URL carries userinfo (`user:password@`, `user@`, even an empty `@`)."""
    return "@" in url and _USERINFO.match(url) is not None


def without_userinfo(url: str) -> str:
    """`url` with its userinfo taken out, otherwise as it is (also a relative `//` one).

    Never raises: it also cleans strings that are no valid URL, such as a Location header.
    """
    found = _USERINFO.match(url) if "@" in url else None
    return url if found is None else found.group(1) + url[found.end():]


def ipv4_from_numbers(host: str) -> str:
    """The dotted quad of a host made of numbers, as WHATWG URL's IPv4 parser reads it.

    `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1` and `0x7f.1` are all 127.0.0.1: up to
    four parts, each decimal, 0-prefixed octal or 0x-prefixed hex; the last fills the bytes
    the others leave. InvalidURL if the numbers make no IPv4 address (`1.2.3.4.5`, `256.1.1.1`).
    """
    parts = host.split(".")
    if len(parts) > 4:
        raise InvalidURL(f"invalid IPv4 host {host[:80]!r}: more than four parts")
    numbers = []
    for part in parts:
        if part.startswith("0x"):
            digits, base = part[2:], 16
        elif len(part) > 1 and part.startswith("0"):
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        try:
            numbers.append(int(digits, base) if digits else 0)
        except ValueError:
            raise InvalidURL(f"invalid IPv4 host {host[:80]!r}: {part!r} is no number") from None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        raise InvalidURL(f"invalid IPv4 host {host[:80]!r}: a part is out of range")
    value = last + sum(n << (8 * (3 - i)) for i, n in enumerate(leading))
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def encode_line_field(url: str) -> str:
    """Percent-encode `|`, CR, LF, spaces, controls and non-printables so the URL fits one line."""
    if url.isascii():
        if _LINE_UNSAFE.search(url) is None:
            return url
    elif url.isprintable() and _LINE_UNSAFE.search(url) is None:
        return url
    return "".join(_encode_char(char) for char in url)


def _encode_char(char: str) -> str:
    if char == "|" or not char.isprintable() or char == " ":
        return "".join(f"%{byte:02X}" for byte in char.encode())
    return char


def decode_line_field(field: str) -> str:
    """The URL stored in a line's URL field.

    Percent-encoding is itself a valid spelling of the URL, so decoding is the identity:
    canonical URLs (all the frontier writes) come back exactly; a raw URL with `|` or spaces
    comes back with the same canonical form; a raw CR/LF, which canonicalization would drop,
    comes back as %0D/%0A. Raises ValueError on a corrupt field.
    """
    if not field or "|" in field or "\n" in field or "\r" in field:
        raise ValueError(f"not a frontier URL field: {field[:80]!r}")
    return field
