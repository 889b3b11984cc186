"""The hostile site's HTML and CSS bodies (links are root-relative unless they must not be)."""

from __future__ import annotations

import functools

from archive_testkit.hostile.bombs import ENCODINGS

# Userinfo forms a crawler must strip before queueing (user:password, user only, empty).
CREDENTIAL_USERINFO = ("user:pw", "admin:s3cret%40x", "token", ":onlypass")


def html(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
            f"<body><h1>{title}</h1>\n{body}\n</body></html>\n").encode()


def index_page() -> bytes:
    links = ["/bombs/", "/trickle/10", "/reset/100000", "/huge-headers/64", "/many-headers/500",
             "/redirect/20", "/redirect-loop/a", "/links/50000", "/credentials/",
             "/calendar/2024/01/", "/css/"]
    return html("hostile site", "\n".join(f'<p><a href="{link}">{link}</a></p>' for link in links))


def bombs_page(per_kind: int) -> bytes:
    """Links to `per_kind` bombs of every kind (distinct URLs, the same body)."""
    items = [f'<p><a href="/bomb/{kind.replace(", ", "+")}/{n}">{kind} bomb {n}</a></p>'
             for n in range(per_kind) for kind in ENCODINGS]
    return html("bombs", "\n".join(items))


@functools.cache
def links_page(count: int) -> bytes:
    """`count` distinct same-host links, to small pages that link nowhere."""
    items = "\n".join(f'<li><a href="/page/{n}">page {n}</a></li>' for n in range(count))
    return html(f"{count} links", f"<ul>\n{items}\n</ul>")


def leaf_page(name: str) -> bytes:
    return html(f"page {name}", "<p>Nothing to follow here.</p>")


def credentials_page(host: str) -> bytes:
    """Links whose URLs carry userinfo: absolute to this host, and protocol-relative."""
    items = []
    for number, userinfo in enumerate(CREDENTIAL_USERINFO):
        items.append(f'<p><a href="http://{userinfo}@{host}/page/secret-{number}">absolute</a></p>')
        items.append(f'<p><a href="//{userinfo}@{host}/page/relative-{number}">relative</a></p>')
    items.append(f'<p><img src="http://user:pw@{host}/page/image.png"></p>')
    return html("credentials in links", "\n".join(items))


def calendar_page(year: int, month: int) -> bytes:
    """A trap: every month links the next and the previous one, without end."""
    before = (year - 1, 12) if month == 1 else (year, month - 1)
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    days = "".join(f'<a href="/calendar/{year}/{month:02d}/{day:02d}/">{day}</a> '
                   for day in range(1, 29))
    return html(f"{year}-{month:02d}",
                f'<p><a href="/calendar/{before[0]}/{before[1]:02d}/">previous</a> '
                f'<a href="/calendar/{after[0]}/{after[1]:02d}/">next</a></p>\n<p>{days}</p>')


def css_page(kb: int) -> bytes:
    return html("huge stylesheet", f'<link rel="stylesheet" href="/css/huge-{kb}.css">'
                                   "<p>Styled by a very large stylesheet.</p>")


@functools.cache
def huge_css(kb: int) -> bytes:
    """About `kb` KiB of CSS: rules with url() (images, fonts) and @import lines."""
    parts = ['@import url("/css/imported.css");\n', "@import '/css/imported-2.css' screen;\n",
             '@font-face { font-family: "Hostile"; src: url(/fonts/hostile.woff2) '
             'format("woff2"), url("/fonts/hostile.woff") format("woff"); }\n']
    size = sum(len(part) for part in parts)
    n = 0
    while size < kb * 1024:
        rule = (f".c{n} {{ background: url('/img/bg-{n % 500}.png') no-repeat; "
                f"margin: {n % 7}px; color: #{n % 4096:03x}; }}\n")
        parts.append(rule)
        size += len(rule)
        n += 1
    return "".join(parts).encode()
