"""The SURT form of a URL: the sort key of a CDXJ index (pywb, cdxj-indexer, the Wayback Machine).

`surt(url)` gives the key the `surt` package's default `surt.surt(url)` gives, which is what
cdxj-indexer writes as a CDXJ line's first field. That package is AGPL-3.0, so this is our own
implementation of the same rules (the Internet Archive's "Google" then "IA" canonicalization of
archive-commons, then the SURT rewrite of the host), checked against the package URL by URL in
tests/warc/test_surt.py:

- surrounding whitespace dropped, tabs and line breaks removed; no scheme means `http://`;
  `http://https://x` counts as `https://x`;
- the fragment and the userinfo dropped; the host percent-unescaped, IDNA-encoded if not
  ASCII, lowercased, runs of dots collapsed, a leading `www.` / `www<digits>.` dropped;
  numeric IPv4 forms (`3232235777`, `0300.0250.1.1`, `192.168.257`) written dotted-quad;
- the default port (80 for http, 443 for https) dropped; the scheme not written;
- the path percent-unescaped, `.` and `..` segments and repeated slashes resolved,
  re-escaped, lowercased, a trailing slash dropped; ASP.NET session ids dropped;
- the query re-escaped, lowercased, its arguments sorted, session ids (jsessionid,
  phpsessid, sid, ASPSESSIONID, cfid/cftoken) dropped, an empty query dropped;
- the host written reversed with commas and closed by `)`: `com,example)/path?a=1&b=2`.

A URL without a host (`urn:isbn:123`, `mailto:x@y`) keeps its scheme: `urn:isbn:123`.
A `metadata://host/path` target URI keys like any URL with a host: `host)/path`.

It never raises. A URL the package cannot key (a port that is not a number from 0 to 65535,
nothing left once whitespace is removed, text that is not encodable as UTF-8, a numeric host
longer than Python converts to an int) keys as itself, as cdxj-indexer's `get_url_key` does when
`surt.surt` fails.

One deliberate difference: the package resolves dotted-digit hosts through the system
resolver (`socket.gethostbyname_ex`); we never resolve. For IPv4 literals in any form
`inet_aton` accepts, the answer is the same; a dotted-digit host that is not one (`999.1.2.3`)
stays as written here, and there too wherever the resolver does not know that name.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from urllib.parse import SplitResultBytes, quote_from_bytes, unquote_to_bytes

# Everything printable in ASCII but `%` and `#` (and space) stays as it is when re-escaping.
_SAFE = b"!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ESCAPED = re.compile(rb"[^!-~]|[%#]")  # what `_escape` encodes: all but printable ASCII, % and #
_HAS_SCHEME = re.compile(rb"^[a-zA-Z][a-zA-Z0-9+\-.]*:")
_REPEATED_HTTP = re.compile(rb"^(?:https?://)*(https?://)")
_REMOVED_WHITESPACE = re.compile(rb"[\t\n\r]")
# RFC 3986 appendix B, with the scheme restricted to scheme characters.
_PARTS = re.compile(rb"^(?:([a-zA-Z][a-zA-Z0-9+.-]*):)?(?:(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?)?(?:#(.*))?$")
_WWW = re.compile(rb"www\d*\.")
_DECIMAL_IPV4 = re.compile(rb"^[1-9][0-9]*(?:\.[0-9]+){0,3}$")
_OCTAL_IPV4 = re.compile(rb"^0[0-7]*(?:\.[0-7]+){0,3}$")
_ASPX_SESSION = (
    re.compile(rb"^(.*/)\((?:[a-z]\([0-9a-z]{24}\))+\)/([^?]+\.aspx.*)$", re.IGNORECASE),
    re.compile(rb"^(.*/)\([0-9a-z]{24}\)/([^?]+\.aspx.*)$", re.IGNORECASE),
)
_QUERY_SESSION = tuple(
    re.compile(rb"^(.*)(?:" + pattern + rb")(?:&(.*))?$", re.IGNORECASE)
    for pattern in (
        rb"jsessionid=[0-9a-zA-Z]{32}",
        rb"phpsessid=[0-9a-zA-Z]{32}",
        rb"sid=[0-9a-zA-Z]{32}",
        rb"ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24}",
        rb"cfid=[^&]+&cftoken=[^&]+",
    )
)
_DEFAULT_PORTS = {b"http": 80, b"https": 443}
# The longest key the catalog indexes (`page_fetch.urlkey`): PostgreSQL refuses B-tree entries
# past ~2.7 KB and URLs reach 8 KB.
URLKEY_MAX_BYTES = 1000
URLKEY_KEPT_BYTES = URLKEY_MAX_BYTES - 65  # then "#" and the whole key's sha256 (64 hex)


def surt(url: str) -> str:
    """The SURT key of `url` as a CDXJ index writes it (see the module docstring)."""
    if not url:
        return "-"
    try:
        raw = url.encode("utf-8")
    except UnicodeEncodeError:
        return url
    if raw.startswith(b"filedesc"):
        return url
    try:
        return _surt_of(raw).decode("ascii")
    except ValueError:  # an unparseable port, an over-long numeric host (UnicodeError included)
        return url


@functools.lru_cache(maxsize=32_768)  # a crawl's assets repeat on every page that uses them
def urlkey(url: str) -> str:
    """The key the catalog files a capture of `url` under (`page_fetch.urlkey`): its SURT key,
    or for a key longer than URLKEY_MAX_BYTES (in UTF-8) its first bytes then `#` and the
    sha256 of the whole key, so that exact lookups stay exact and prefixes up to that length
    still match."""
    key = surt(url)
    raw = key.encode("utf-8", "surrogatepass")
    if len(raw) <= URLKEY_MAX_BYTES:
        return key
    return f"{_kept(raw)}#{hashlib.sha256(raw).hexdigest()}"


def stored_key_prefix(prefix: str) -> str:
    """What every stored `urlkey` of a key starting with `prefix` starts with: `prefix`, or
    its first URLKEY_KEPT_BYTES bytes when longer (those keys may have been cut)."""
    raw = prefix.encode("utf-8", "surrogatepass")
    return prefix if len(raw) <= URLKEY_KEPT_BYTES else _kept(raw)


def _kept(raw: bytes) -> str:
    return raw[:URLKEY_KEPT_BYTES].decode("utf-8", "ignore")  # never half a character


# A URL every rule above leaves as it is but for lowercasing, `www.`, a default port, a
# trailing slash and the order of its query: keyed without parsing it in general (`_plain_key`).
_PLAIN = re.compile(rb"(https?)://([a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*)(?::([0-9]{1,5}))?"
                    rb"(/[a-zA-Z0-9/_.~!$&'*+,;=:@-]*)?(?:\?([a-zA-Z0-9/_.~!$&'*+,;=:@?-]*))?")
_NAME_CHARACTER = re.compile(rb"[a-zA-Z-]")  # a host with one is a name, not an IPv4 form
# What every `_QUERY_SESSION` pattern needs in a lowercased query to match.
_SESSION_HINT = re.compile(rb"sid=|sessionid=|aspsessionid|cfid=")


def _plain_key(raw: bytes) -> bytes | None:
    """The key of a plain http(s) URL (see `_PLAIN`), the same as `_surt_of` gives; None for
    any other, which `_surt_of` keys. tests/warc/test_surt.py compares the two."""
    match = _PLAIN.fullmatch(raw)
    if match is None:
        return None
    scheme, host, port_text, path, query = match.groups()
    if not _NAME_CHARACTER.search(host):
        return None  # digits and dots: maybe an IPv4 address in another form
    if path is not None and (b"//" in path or b"/./" in path or b"/../" in path
                             or path.endswith((b"/.", b"/.."))):
        return None
    port = int(port_text) if port_text is not None else None
    if port is not None and port > 65535:
        return None
    host = host.lower()
    www = _WWW.match(host)
    if www:
        host = host[www.end():]
    if not port or port == _DEFAULT_PORTS[scheme]:
        port = None
    path = (path or b"/").lower()
    if len(path) > 1 and path.endswith(b"/"):
        path = path[:-1]
    canonical: bytes | None = None
    if query:
        lowered = query.lower()
        if _SESSION_HINT.search(lowered):
            return None
        if len(lowered) > 1:
            lowered = b"&".join(sorted(lowered.split(b"&"),
                                       key=lambda argument: tuple(argument.split(b"=", 1))))
        canonical = lowered or None
    return _written(scheme, host=host, port=port, path=path, query=canonical)


def _surt_of(raw: bytes) -> bytes:
    plain = _plain_key(raw)
    if plain is not None:
        return plain
    return _general_key(raw)


def _general_key(raw: bytes) -> bytes:
    text = _REMOVED_WHITESPACE.sub(b"", raw.strip())
    if not text:
        raise ValueError("no URL left once whitespace is removed")
    if not _HAS_SCHEME.match(text):
        text = b"http://" + text
    text = _REPEATED_HTTP.sub(rb"\1", text, count=1)  # http://https://x is https://x
    match = _PARTS.match(text)
    assert match is not None  # every string without a line break matches
    scheme, netloc, path, query = match.group(1) or b"", match.group(2) or b"", match.group(3), match.group(4)
    # SplitResultBytes reads the host and port out of the authority as urllib does.
    authority = SplitResultBytes(scheme, netloc.rstrip(b":"), b"", b"", b"")
    port = authority.port or None
    host = authority.hostname or None
    if scheme.startswith(b"http") and host is None and path:
        # http:////www.example.com/ : the host is the first path segment.
        host, _, rest = path.lstrip(b"/").partition(b"/")
        path = b"/" + rest
    host = _canonical_host(host) if host else host
    path_text = _unescape(path) if path else None
    if host:
        path_text = _normalize_path(path_text)
    path = _escape(path_text) if path_text is not None else None
    if host:
        host = host.lower()
        www = _WWW.match(host)
        if www and scheme != b"dns":
            host = host[www.end():]
    if port is not None and port == _DEFAULT_PORTS.get(scheme.lower(), 0):
        port = None
    if path:
        path = _strip_path_session(path.lower())
        if len(path) > 1 and path.endswith(b"/"):
            path = path[:-1]
    query = _canonical_query(query) if query else None
    return _written(scheme, host=host, port=port, path=path, query=query)


@functools.lru_cache(maxsize=16_384)  # a crawl's hosts repeat: keyed once each
def _canonical_host(host: bytes) -> bytes:
    host = _unescape(host)
    if not host.isascii():
        with contextlib.suppress(ValueError):  # not IDNA-encodable: kept, percent-escaped below
            host = host.decode("utf-8", "ignore").encode("idna")
    host = host.replace(b"..", b".").strip(b".")
    dotted = _ipv4_dotted(host)
    return dotted if dotted is not None else _escape(host.lower())


def _ipv4_dotted(host: bytes) -> bytes | None:
    """The dotted-quad form of a numeric IPv4 host, None for a name."""
    if host.isdigit():
        # Masked to 32 bits as the Wayback's key maker does (int() refuses > 4300 digits).
        return _dotted(int(host) & 0xFFFFFFFF)
    if _DECIMAL_IPV4.match(host) or _OCTAL_IPV4.match(host):
        address = _inet_aton(host)
        return None if address is None else _dotted(address)
    return None


def _inet_aton(host: bytes) -> int | None:
    """The address C's `inet_aton` reads from 1 to 4 dotted parts (0-prefixed parts octal)."""
    parts = host.split(b".")
    values = []
    for part in parts:
        if len(part.lstrip(b"0")) > 12:  # beyond 32 bits whatever its base
            return None
        if len(part) > 1 and part.startswith(b"0"):
            if not all(48 <= c <= 55 for c in part):
                return None
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *leading, last = values
    if any(value > 0xFF for value in leading) or last >= 1 << (8 * (4 - len(leading))):
        return None
    address = 0
    for value in leading:
        address = (address << 8) | value
    return (address << (8 * (4 - len(leading)))) | last


def _dotted(address: int) -> bytes:
    return b".".join(str((address >> shift) & 0xFF).encode() for shift in (24, 16, 8, 0))


def _normalize_path(path: bytes | None) -> bytes:
    """Resolve `.` and `..` and drop empty segments (a trailing slash is kept)."""
    if not path:
        return b"/"
    kept: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b".":
            continue
        if segment == b".." and kept:
            kept.pop()
        else:
            kept.append(segment)
    if not kept:
        return b"/"
    return b"/" + b"".join(segment + b"/" for segment in kept[:-1] if segment) + kept[-1]


def _strip_path_session(path: bytes) -> bytes:
    for pattern in _ASPX_SESSION:
        match = pattern.match(path)
        if match:
            path = match.group(1) + match.group(2)
    return path


def _canonical_query(query: bytes) -> bytes | None:
    query = _escape(_unescape(query))
    for pattern in _QUERY_SESSION:
        match = pattern.match(query)
        if match:
            query = match.group(1) + (match.group(2) or b"")
    query = query.lower()
    if len(query) > 1:
        arguments = query.split(b"&")
        arguments.sort(key=lambda argument: tuple(argument.split(b"=", 1)))
        query = b"&".join(arguments)
    return query or None


def _written(scheme: bytes, *, host: bytes | None, port: int | None, path: bytes | None,
             query: bytes | None) -> bytes:
    if not host:
        key = scheme + b":"
    else:
        key = b",".join(reversed(host.split(b".")))
        if port is not None:
            key += b":%d" % port
        key += b")"
    if path:
        key += path
    elif query is not None:
        key += b"/"
    if query is not None:
        key += b"?" + query
    return key


def _unescape(text: bytes) -> bytes:
    """Percent-decode until nothing changes (`%2541` -> `%41` -> `A`)."""
    if b"%" not in text:
        return text
    while True:
        decoded = unquote_to_bytes(text)
        if decoded == text:
            return text
        text = decoded


def _escape(text: bytes) -> bytes:
    """Percent-encode what is not printable ASCII, and `%`, `#` and space."""
    if not _ESCAPED.search(text):  # nothing to encode (most URLs): as quote would leave it
        return text
    return quote_from_bytes(text, safe=_SAFE).encode("ascii")
