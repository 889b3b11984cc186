"""One start tag with its URL attributes rewritten; every other byte of it kept.

What a URL is depends on its element and attribute (`html_attributes.URL_ATTRIBUTES`), and
for `<link>` on its `rel` and `as`. `srcset` candidates, `style` (CSS), meta refresh and
`<iframe srcdoc>` (a document of its own) are rewritten in their own syntax. A value that
was unquoted and now needs quotes gets them; `&` and the quote are written as references.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from archive_pipelines.replay import html_attributes as attrs
from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.rewrite_css import rewrite_css_text
from archive_pipelines.replay.srcset import rewrite_srcset

# A document inside an attribute (srcdoc), rewritten: (its text, the URLs) -> its new text.
InlineDocument = Callable[[str, ArchiveUrls], str]

_HINT = re.compile(r"style|background", re.IGNORECASE)
# What comes before the URL of a refresh: `5; url=` (the `url=` may be left out).
# (no number, no refresh: browsers ignore `content="next.html"`)
_REFRESH_HEAD = re.compile(
    r"[\t\n\f\r ]*+[0-9.]++[\t\n\f\r ]*+[;,]?+[\t\n\f\r ]*+(?:url[\t\n\f\r ]*+=[\t\n\f\r ]*+)?+",
    re.IGNORECASE)
_READS_OTHERS = frozenset({"link", "meta"})  # rel / as / http-equiv decide what a URL is
_QUOTES = {"dq": '"', "sq": "'", "uq": ""}
_POLICIES = frozenset({"content-security-policy", "content-security-policy-report-only"})


def rewrite_start_tag(name: str, tag: str, urls: ArchiveUrls, *,
                      inline_document: InlineDocument) -> str:
    """The whole start tag `tag` of element `name` (lower case) with its URLs rewritten."""
    if name not in attrs.NOTICED and _HINT.search(tag) is None:
        return tag
    noticed = attrs.NOTICED.get(name, attrs.ANY_ELEMENT)
    found: list[tuple[str, re.Match[str]]] = []
    values: dict[str, re.Match[str]] = {}  # by name, the first of a name (as browsers read)
    every = name in _READS_OTHERS
    for attribute in attrs.ATTRIBUTE.finditer(tag, 1 + len(name)):
        key = attribute.group("name").lower()
        if key in noticed:
            found.append((key, attribute))
        if every or key in noticed:
            values.setdefault(key, attribute)
    pieces: list[str] = []
    last = 0
    for key, attribute in found:
        replacement = _attribute(name, key, attribute, values=values, urls=urls,
                                 inline_document=inline_document)
        if replacement is None:
            continue
        value_start, value_end, new_text = replacement
        pieces.append(tag[last:value_start])
        pieces.append(new_text)
        last = value_end
    if not pieces:
        return tag
    pieces.append(tag[last:])
    return "".join(pieces)


def attribute_value(name: str, tag: str, key: str) -> str | None:
    """The value of the first attribute `key` of a whole start tag; None without one."""
    for attribute in attrs.ATTRIBUTE.finditer(tag, 1 + len(name)):
        if attribute.group("name").lower() == key:
            return attrs.decode_value(_raw_value(attribute))
    return None


def _attribute(element: str, key: str, attribute: re.Match[str], *,
               values: dict[str, re.Match[str]], urls: ArchiveUrls,
               inline_document: InlineDocument) -> tuple[int, int, str] | None:
    """(start, end, new text) of the part of the tag to replace, or None."""
    if key == "integrity" and element in ("link", "script"):
        # a rewritten stylesheet no longer matches its hash: the browser would refuse it
        return attribute.start("name"), attribute.end("name"), "_integrity"
    group = attribute.lastgroup
    if group == "name" or group is None:
        return None  # no value
    value = attrs.decode_value(attribute.group(group))
    rules = attrs.URL_ATTRIBUTES.get(element, {})
    if key in rules:
        modifier = _link_modifier(values) if element == "link" and key == "href" else rules[key]
        if key in attrs.SRCSET_ATTRIBUTES:
            new_value = rewrite_srcset(value, urls, modifier=modifier)
        else:
            new_value = urls.rewrite(value, modifier=modifier)
    elif key in attrs.SRCSET_ATTRIBUTES and element in ("img", "source", "link"):
        new_value = rewrite_srcset(value, urls, modifier="im_")
    elif key == "background":
        new_value = urls.rewrite(value, modifier="im_")
    elif key == "style":
        new_value = rewrite_css_text(value, urls) if _may_have_url(value) else value
    elif key == "content" and element == "meta" and _is_refresh(values):
        new_value = _rewrite_refresh(value, urls)
    elif key == "http-equiv" and element == "meta":
        policy = value.strip().lower()
        if policy not in _POLICIES:
            return None
        new_value = "x-archive-orig-" + policy  # its hosts would refuse the archive's URLs
    elif key == "srcdoc" and element == "iframe":
        new_value = inline_document(value, urls)
    else:
        return None
    if new_value == value:
        return None
    start, end = attribute.start(group), attribute.end(group)
    quote = _QUOTES[group]
    if not quote and attrs.needs_quotes(new_value):  # quoted now, or it would end early
        return start, end, '"' + attrs.encode_value(new_value, quote='"') + '"'
    return start, end, attrs.encode_value(new_value, quote=quote)


def _raw_value(attribute: re.Match[str]) -> str:
    group = attribute.lastgroup
    return "" if group == "name" or group is None else attribute.group(group)


def _link_modifier(values: dict[str, re.Match[str]]) -> str:
    rel = attrs.decode_value(_raw_value(values["rel"])).lower().split() if "rel" in values else []
    for token in rel:
        if token in attrs.LINK_RELS:
            return attrs.LINK_RELS[token]
    if "preload" in rel or "modulepreload" in rel:
        kind = attrs.decode_value(_raw_value(values["as"])).lower() if "as" in values else ""
        return attrs.PRELOAD_AS.get(kind, "js_" if "modulepreload" in rel else "oe_")
    return "oe_"


def _is_refresh(values: dict[str, re.Match[str]]) -> bool:
    if "http-equiv" not in values:
        return False
    return attrs.decode_value(_raw_value(values["http-equiv"])).strip().lower() == "refresh"


def _rewrite_refresh(value: str, urls: ArchiveUrls) -> str:
    """`5; url=next.html` with its URL rewritten (quotes and spacing kept)."""
    head = _REFRESH_HEAD.match(value)
    if head is None:
        return value
    start = head.end()
    stop = len(value.rstrip("\t\n\f\r "))
    quote = value[start:start + 1]
    if quote in ("'", '"'):
        start += 1
        if stop > start and value[stop - 1] == quote:
            stop -= 1
    if stop <= start:
        return value
    return value[:start] + urls.rewrite(value[start:stop]) + value[stop:]


def _may_have_url(css: str) -> bool:
    lower = css.lower()
    return "url" in lower or "image-set" in lower or "\\" in lower
