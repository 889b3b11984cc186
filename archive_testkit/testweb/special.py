"""Bodies of the awkward pages: robots.txt flavours, bad encoding, malformed HTML."""

from __future__ import annotations

import functools

from archive_testkit.testweb.config import TestWebConfig, host_name
from archive_testkit.testweb.hosts import HostTraits, RobotsKind
from archive_testkit.testweb.seeding import stable_rng


def robots_txt(config: TestWebConfig, traits: HostTraits) -> bytes | None:
    """The host's robots.txt, or None when it has none (404)."""
    if traits.robots is RobotsKind.NONE:
        return None
    if traits.robots is RobotsKind.GARBAGE:
        rng = stable_rng(config.seed, "garbage-robots", traits.host)
        return rng.randbytes(2048) + b"\x00\xff\xfeUser-agent: \x00*\nDisallow"
    delay = config.crawl_delay_s
    lines = [
        f"# robots.txt for {traits.host}",
        "User-agent: BadBot",
        "Disallow: /",
        "",
        "User-agent: *",
        "Disallow: /private/",
    ]
    if traits.robots is RobotsKind.CRAWL_DELAY:
        lines.append(f"Crawl-delay: {int(delay) if delay == int(delay) else delay}")
    text = ("\n".join(lines) + "\n").encode()
    if traits.robots is RobotsKind.HUGE:
        return text + _robots_filler(config.huge_robots_bytes - len(text))
    return text


@functools.lru_cache(maxsize=2)
def _robots_filler(size: int) -> bytes:
    line_count = max(0, size) // 32 + 1
    filler = "".join(f"Disallow: /archive/{n:011d}/\n" for n in range(line_count)).encode()
    return filler[: max(0, size)]


def invalid_encoding_page(traits: HostTraits) -> bytes:
    """HTML that claims UTF-8 (header and meta) but is Latin-1, so it is not valid UTF-8."""
    text = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        "<title>Caf\xe9 cr\xe8me</title></head>\n"
        f"<body><h1>D\xe9j\xe0 vu \xe0 {traits.host}</h1>\n"
        "<p>Fa\xe7ade, na\xefve, se\xf1or, \xa9 2024 \xbd price \xd7 2.</p>\n"
        '<p><a href="/s1/p1.html">premi\xe8re page</a> <a href="/">accueil</a></p>\n'
        "</body></html>\n"
    )
    return text.encode("latin-1")


def malformed_page(traits: HostTraits) -> bytes:
    """Broken HTML: unclosed and misnested tags, stray bytes, a truncated attribute."""
    return (
        b"<html><head><title>Broken <b>title</title>\n<body><div><p>Unclosed paragraph"
        b"<table><tr><td>cell<td>cell 2<p>para in table</table>\n"
        b"<a href=/s2/p2.html>unquoted href</a> <a href='/s3/p3.html'>single quoted"
        b"<a href=\"/s4/p4.html\" <b>missing bracket</b>\n"
        b"<div <<<>>> \x00\x01\x02\xff\xfe garbage bytes </span></span></div></div></div>\n"
        b"<!-- unterminated comment <a href=\"/s5/p5.html\">hidden</a>\n"
        b"<script>document.write('<a href=\"/s6/p6.html\">');</script\n"
        b"<p>after the broken script <a href=\"/s7/p7.html\">last link</a>\n"
        + f"<p>on {traits.host}".encode()
    )


def idn_page(config: TestWebConfig) -> bytes:
    """The page served for the internationalised host, linking back into the test web."""
    home = host_name(config, 0)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>B\u00fccher</title></head>\n'
        f'<body><h1>B\u00fccher</h1><p><a href="http://{home}/">zur\u00fcck</a></p></body></html>\n'
    ).encode()
