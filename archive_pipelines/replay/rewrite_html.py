"""A streaming HTML rewriter: the URLs a page names point into the archive, every other
byte is kept, and a banner is inserted where the body begins.

It follows the HTML tokenizer where that decides what is a tag: comments (`<!-->` and
`--!>` too), bogus comments, CDATA in SVG and MathML, raw text (`<script>` with its escaped
states, `<style>`, `<xmp>`, `<iframe>`, `<noembed>`, `<noframes>`, `<noscript>`), RCDATA
(`<title>`, `<textarea>`), `<plaintext>`, attributes quoted or not. Rewritten: the URL
attributes of `html_attributes.URL_ATTRIBUTES`, `srcset`, `background`, `style` attributes
and `<style>` bodies (as CSS), `<meta http-equiv=refresh>`, `<base href>` (which also
becomes the base of the URLs after it), `<iframe srcdoc>`. Two more changes keep the page
working from the archive: `integrity` on `<link>` and `<script>` is renamed `_integrity` (a
rewritten stylesheet no longer matches its hash), and a `<meta http-equiv>` Content Security
Policy becomes `x-archive-orig-content-security-policy` (its hosts would refuse the
archive's URLs; the replay server sends its own policy).

Chunks may split anything: a tag cut by a boundary is held until whole, up to
`max_pending` characters; a longer tag is passed on unrewritten. Bytes are read as latin-1,
so any ASCII-compatible charset round-trips byte for byte; a UTF-16 page (its byte order
mark) is passed through untouched.

The banner goes right after `<body ...>`, or where the body begins without one (the
first element that cannot be in the head, or text), or at the end; a frameset gets none.
"""

from __future__ import annotations

import re

from archive_pipelines.replay import html_attributes as attrs
from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.rewrite_css import CssTextRewriter, rewrite_css_text
from archive_pipelines.replay.srcset import rewrite_srcset

DEFAULT_MAX_PENDING = 1 << 20

# A tag from `<` or `</`: its name, its attributes, and `>` when it is whole (the attribute
# grammar is the tokenizer's, possessive so that no backtracking re-reads a quote).
_TAG = re.compile(
    r"""</?(?P<name>[A-Za-z][^\t\n\f\r />]*+)
        (?P<attrs>(?:[\t\n\f\r /]++
           |[^\t\n\f\r />][^\t\n\f\r />=]*+
            (?:[\t\n\f\r ]*+=[\t\n\f\r ]*+
               (?:"[^"]*+"?+|'[^']*+'?+|[^\t\n\f\r >"'][^\t\n\f\r >]*+)?+)?+)*+)
        (?P<end>>?)""",
    re.VERBOSE)
# One part of a tag's attributes, as _TAG reads them (a quoted value may be cut).
_TAG_PART = re.compile(
    r"""(?P<separator>[\t\n\f\r /]++)
      |[^\t\n\f\r />][^\t\n\f\r />=]*+
       (?:(?P<equals>[\t\n\f\r ]*+=[\t\n\f\r ]*+)
          (?:(?P<dq>"[^"]*+"?+)|(?P<sq>'[^']*+'?+)|(?P<uq>[^\t\n\f\r >"'][^\t\n\f\r >]*+))?+)?+""",
    re.VERBOSE)
_COMMENT_END = re.compile(r"--!?>")
_SCRIPT_TOKEN = re.compile(r"<!--|-->|<(/?)script[\t\n\f\r />]", re.IGNORECASE)
_NOT_SPACE = re.compile(r"[^\t\n\f\r ]")
_ATTR_HINT = re.compile(r"style|background", re.IGNORECASE)
# What comes before the URL of a refresh: `5; url=` (the `url=` may be left out).
_REFRESH_HEAD = re.compile(
    r"[\t\n\f\r ]*+[0-9.]*+[\t\n\f\r ]*+[;,]?+[\t\n\f\r ]*+(?:url[\t\n\f\r ]*+=[\t\n\f\r ]*+)?+",
    re.IGNORECASE)
_RAWTEXT = frozenset({"xmp", "iframe", "noembed", "noframes", "noscript", "title", "textarea"})
_FOREIGN = frozenset({"svg", "math"})
# Start tags that may come before the body without starting it.
_HEAD_TAGS = frozenset({"html", "head", "title", "meta", "link", "style", "script", "base",
                        "noscript", "template", "basefont", "bgsound", "noframes"})
_MARKUP_PREFIXES = ("<!--", "<![CDATA[")

# Start tags the rewriter must look at: URL attributes, raw text, foreign content, templates,
# where the body begins.
_NOTABLE_TAGS = sorted({*attrs.URL_ATTRIBUTES, *_RAWTEXT, *_FOREIGN, "meta", "script", "style",
                        "plaintext", "template", "body", "frameset"}, key=lambda n: (-len(n), n))
_SPACE = r"[\t\n\f\r ]"
_DELIMITER = r"[\t\n\f\r />]"
# Text, and tags nothing needs to be done to, in one match: start tags of other elements
# whose attribute names hold no `style` or `background`, end tags but those of svg, math
# and template (depth counted). A tag cut by the buffer's end is left to the slow path.
_PLAIN_NAME = r"(?:(?!style|background)[^\t\n\f\r />=])"
_PLAIN_ATTRIBUTES = (
    r"(?:[\t\n\f\r /]++|(?!style|background)[^\t\n\f\r />]" + _PLAIN_NAME + r"*+"
    r"(?:" + _SPACE + r"*+=" + _SPACE + r"*+"
    r"(?:\"[^\"]*+\"|'[^']*+'|[^\t\n\f\r >\"'][^\t\n\f\r >]*+)?+)?+)*+")
_PLAIN_RUN = re.compile(
    r"(?:[^<]++"
    r"|<(?!(?:" + "|".join(_NOTABLE_TAGS) + ")" + _DELIMITER + r")[A-Za-z][^\t\n\f\r />]*+"
    + _PLAIN_ATTRIBUTES + ">"
    r"|</(?!(?:svg|math|template)" + _DELIMITER + r")[A-Za-z][^\t\n\f\r />]*+"
    + _PLAIN_ATTRIBUTES.replace("(?!style|background)", "").replace(_PLAIN_NAME, "[^\t\n\f\r />=]")
    + ">)*+",
    re.IGNORECASE)

# The attributes looked at, by element: its URL attributes and those of every element.
_ANY_ELEMENT = frozenset({"style", "background"})
_NOTICED = {element: _ANY_ELEMENT | set(rules) for element, rules in attrs.URL_ATTRIBUTES.items()}
for _element, _names in (("link", {"integrity", "imagesrcset", "srcset"}),
                         ("script", {"integrity"}), ("img", {"srcset"}), ("source", {"srcset"}),
                         ("meta", {"content", "http-equiv"}), ("iframe", {"srcdoc"})):
    _NOTICED[_element] = _NOTICED.get(_element, _ANY_ELEMENT) | _names
_READS_OTHERS = frozenset({"link", "meta"})  # rel / as / http-equiv decide what a URL is
_QUOTES = {"dq": '"', "sq": "'", "uq": ""}
_POLICIES = frozenset({"content-security-policy", "content-security-policy-report-only"})

_DATA, _COMMENT, _BOGUS, _CDATA, _SCRIPT, _STYLE, _RAW, _PLAINTEXT, _PASS, _OVERLONG = range(10)
_SCRIPT_DATA, _SCRIPT_ESCAPED, _SCRIPT_DOUBLE = range(3)


class HtmlRewriter:
    """Rewrites one HTML page as it streams: `.feed(chunk)` then `.close()`, each returning
    the bytes ready so far (their concatenation is the whole rewritten page).

    Args:
        urls: the page's archive URLs.
        banner: HTML inserted where the body begins (non-ASCII is written as character
            references); None for no banner.
        max_pending: the longest tag or markup held across chunk boundaries, in bytes.
    """

    def __init__(self, urls: ArchiveUrls, *, banner: str | None,
                 max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self._urls = urls
        self._banner = (banner.encode("ascii", "xmlcharrefreplace").decode("ascii")
                        if banner is not None else None)
        self._max_pending = max_pending
        self._buffer = ""
        self._state = _DATA
        self._started = False
        self._raw_end: re.Pattern[str] | None = None  # the end tag of the raw text we are in
        self._script = _SCRIPT_DATA
        self._css: CssTextRewriter | None = None
        self._foreign = 0  # depth of <svg> / <math>
        self._template = 0
        self._base_seen = False
        self._resume = ""  # the synthetic start of an overlong tag being passed through
        self._waiting_tag = False  # the buffer starts with a tag cut before its `>`
        self._first = b""  # the first bytes, until a byte order mark is ruled out

    def feed(self, data: bytes) -> bytes:
        """The rewritten bytes that are whole so far."""
        mark = b""
        if not self._started:
            self._first += data
            if len(self._first) < 3:
                return b""  # a byte order mark may still be coming
            mark, data = self._start()
        if self._state == _PASS:
            return mark + data
        if (self._waiting_tag and b">" not in data
                and len(self._buffer) + len(data) <= self._max_pending):
            self._buffer += data.decode("latin-1")  # still cut: not scanned again
            return mark
        self._buffer += data.decode("latin-1")
        return mark + self._run(final=False).encode("latin-1")

    def close(self) -> bytes:
        """The rest of the page, and the banner if the body never began."""
        mark = b""
        if not self._started:
            mark, data = self._start()
            if self._state == _PASS:
                return mark + data
            self._buffer += data.decode("latin-1")
        if self._state == _PASS:
            return b""
        out = self._run(final=True)
        if self._banner is not None:
            out += self._banner
            self._banner = None
        return mark + out.encode("latin-1")

    def _start(self) -> tuple[bytes, bytes]:
        """The first bytes as (byte order mark, the rest): a UTF-16 page passes through
        untouched; a UTF-8 mark is passed on first, as no text of the page."""
        self._started = True
        first, self._first = self._first, b""
        if first[:2] in (b"\xff\xfe", b"\xfe\xff"):
            self._state = _PASS
            return b"", first
        if first[:3] == b"\xef\xbb\xbf":
            return first[:3], first[3:]
        return b"", first

    def _run(self, *, final: bool) -> str:
        self._waiting_tag = False
        text = self._buffer
        end = len(text)
        out: list[str] = []
        position = 0
        while position < end:
            state = self._state
            if state == _DATA:
                if self._banner is None:
                    plain = _PLAIN_RUN.match(text, position)
                    assert plain is not None
                    if plain.end() > position:
                        out.append(text[position:plain.end()])
                        position = plain.end()
                        if position == end:
                            break
                position = self._data(text, position, out, final=final)
                if position < 0:
                    position = -position - 1
                    break
            elif state == _COMMENT:
                match = _COMMENT_END.search(text, position)
                if match is None:
                    stop = end if final else max(position, end - 3)
                    out.append(text[position:stop])
                    position = stop
                    break
                out.append(text[position:match.end()])
                position = match.end()
                self._state = _DATA
            elif state in (_BOGUS, _CDATA):
                closing = ">" if state == _BOGUS else "]]>"
                found = text.find(closing, position)
                if found < 0:
                    stop = end if final else max(position, end - len(closing) + 1)
                    out.append(text[position:stop])
                    position = stop
                    break
                out.append(text[position:found + len(closing)])
                position = found + len(closing)
                self._state = _DATA
            elif state == _SCRIPT:
                position = self._script_text(text, position, out, final=final)
                if self._state == _SCRIPT:
                    break
            elif state in (_STYLE, _RAW):
                assert self._raw_end is not None
                match = self._raw_end.search(text, position)
                stop = match.start() if match is not None else (
                    end if final else max(position, end - 16))
                if state == _STYLE:
                    assert self._css is not None
                    out.append(self._css.feed(text[position:stop]))
                    if match is not None or final:
                        out.append(self._css.close())
                        self._css = None
                else:
                    out.append(text[position:stop])
                position = stop
                if match is None:
                    break
                self._state = _DATA
            elif state == _PLAINTEXT:
                out.append(text[position:])
                position = end
            else:  # the rest of an overlong tag, passed through
                position = self._overlong(text, position, out, final=final)
                if self._state != _DATA:
                    break
        self._buffer = text[position:]
        if final and self._buffer:
            out.append(self._buffer)
            self._buffer = ""
        return "".join(out)

    def _data(self, text: str, position: int, out: list[str], *, final: bool) -> int:
        """Text up to and including the next tag or markup start; the position after it,
        or -(position + 1) to wait for more at `position`."""
        end = len(text)
        lt = text.find("<", position)
        stop = end if lt < 0 else lt
        if stop > position:
            self._text(text[position:stop], out)
        if lt < 0:
            return end
        if lt + 1 >= end:
            if final:
                self._text("<", out)
                return end
            return -(lt + 1)
        following = text[lt + 1]
        if following.isascii() and following.isalpha():
            return self._tag(text, lt, out, final=final)
        if following == "/":
            if lt + 2 >= end and not final:
                return -(lt + 1)
            after = text[lt + 2:lt + 3]
            if after.isascii() and after.isalpha():
                return self._tag(text, lt, out, final=final)
            if after == ">":
                out.append("</>")
                return lt + 3
            if not after:
                self._text("</", out)
                return end
            out.append("</")
            self._state = _BOGUS
            return lt + 2
        if following == "!":
            head = text[lt:lt + 9]
            for prefix in _MARKUP_PREFIXES:
                if prefix.startswith(head) and len(head) < len(prefix) and not final:
                    return -(lt + 1)  # could still become a comment or CDATA
            if head.startswith("<!--"):
                rest = text[lt + 4:lt + 6]
                if not final and rest in ("", "-"):
                    return -(lt + 1)  # `<!-->` and `<!--->` are whole comments
                out.append("<!--")
                if rest[:1] == ">":
                    out.append(">")
                    return lt + 5
                if rest == "->":
                    out.append("->")
                    return lt + 6
                self._state = _COMMENT
                return lt + 4
            if head == "<![CDATA[" and self._foreign:
                out.append(head)
                self._state = _CDATA
                return lt + 9
            out.append("<!")
            self._state = _BOGUS
            return lt + 2
        if following == "?":
            out.append("<?")
            self._state = _BOGUS
            return lt + 2
        self._text("<", out)
        return lt + 1

    def _text(self, chunk: str, out: list[str]) -> None:
        """Character data: where it is not all white space, the body has begun."""
        if self._banner is not None and not self._template:
            match = _NOT_SPACE.search(chunk)
            if match is not None:
                out.append(chunk[:match.start()])
                out.append(self._banner)
                self._banner = None
                chunk = chunk[match.start():]
        out.append(chunk)

    def _tag(self, text: str, lt: int, out: list[str], *, final: bool) -> int:
        """A start or end tag at `lt`: rewritten and passed on; waits while it is cut."""
        match = _TAG.match(text, lt)
        assert match is not None
        if not match.group("end"):
            if final:
                out.append(text[lt:])  # a tag cut by the end of the page: a browser drops it
                return len(text)
            if len(text) - lt > self._max_pending:
                out.append(text[lt:])
                self._resume = _resume_prefix(text[lt:])
                self._state = _OVERLONG
                return len(text)
            self._waiting_tag = True
            return -(lt + 1)
        name = match.group("name").lower()
        if text[lt + 1] == "/":
            self._end_tag(name)
            out.append(match.group())
            return match.end()
        tag = match.group()
        if self._banner is not None and not self._template:
            self._banner_before(name, tag, out)
        else:
            out.append(self._rewrite_tag(name, tag))
        self._after_start_tag(name, tag)
        return match.end()

    def _banner_before(self, name: str, tag: str, out: list[str]) -> None:
        assert self._banner is not None
        if name == "body":
            out.append(self._rewrite_tag(name, tag))
            out.append(self._banner)
            self._banner = None
        elif name == "frameset":
            self._banner = None
            out.append(tag)
        elif name in _HEAD_TAGS:
            out.append(self._rewrite_tag(name, tag))
        else:
            out.append(self._banner)
            self._banner = None
            out.append(self._rewrite_tag(name, tag))

    def _after_start_tag(self, name: str, tag: str) -> None:
        """The tokenizer state the start tag `name` leaves."""
        if self._foreign:
            if name in _FOREIGN and not tag.endswith("/>"):
                self._foreign += 1
            return
        if name in _FOREIGN:
            if not tag.endswith("/>"):
                self._foreign = 1
        elif name == "script":
            self._state, self._script = _SCRIPT, _SCRIPT_DATA
            self._raw_end = None
        elif name == "style":
            self._state = _STYLE
            self._raw_end = _end_tag_pattern(name)
            self._css = CssTextRewriter(self._urls, max_pending=self._max_pending)
        elif name in _RAWTEXT:
            self._state = _RAW
            self._raw_end = _end_tag_pattern(name)
        elif name == "plaintext":
            self._state = _PLAINTEXT
        elif name == "template":
            self._template += 1

    def _end_tag(self, name: str) -> None:
        if name in _FOREIGN and self._foreign:
            self._foreign -= 1
        elif name == "template" and self._template:
            self._template -= 1

    def _rewrite_tag(self, name: str, tag: str) -> str:
        """A whole start tag with its URL attributes rewritten."""
        if name not in _NOTICED and _ATTR_HINT.search(tag) is None:
            return tag
        noticed = _NOTICED.get(name, _ANY_ELEMENT)
        found: list[tuple[str, re.Match[str]]] = []
        values: dict[str, re.Match[str]] = {}  # by name, the first of a name (as browsers read)
        every = name in _READS_OTHERS
        for attribute in attrs.ATTRIBUTE.finditer(tag, 1 + len(name)):
            key = attribute.group("name").lower()
            if key in noticed:
                found.append((key, attribute))
            if every or key in noticed:
                values.setdefault(key, attribute)
        urls = self._urls
        if name == "base" and "href" in values and not self._base_seen:
            self._base_seen = True
            href = attrs.decode_value(_raw_value(values["href"]))
            self._urls = self._urls.with_base(href)
        pieces: list[str] = []
        last = 0
        for key, attribute in found:
            replacement = self._attribute(name, key, attribute, values, urls)
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

    def _attribute(self, element: str, key: str, attribute: re.Match[str],
                   values: dict[str, re.Match[str]],
                   urls: ArchiveUrls) -> tuple[int, int, str] | None:
        """(start, end, new text) of the part of the tag to replace, or None."""
        if key == "integrity" and element in ("link", "script"):
            return attribute.start("name"), attribute.end("name"), "_integrity"
        group = attribute.lastgroup
        if group == "name" or group is None:
            return None  # no value
        raw = attribute.group(group)
        quote = _QUOTES[group]
        value = attrs.decode_value(raw)
        rules = attrs.URL_ATTRIBUTES.get(element, {})
        if key in rules:
            modifier = rules[key]
            if element == "link" and key == "href":
                modifier = _link_modifier(values)
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
            new_value = "x-archive-orig-" + policy  # the page's own policy would refuse the archive
        elif key == "srcdoc" and element == "iframe":
            new_value = _rewrite_srcdoc(value, urls)
        else:
            return None
        if new_value == value:
            return None
        start, end = attribute.start(group), attribute.end(group)
        if not quote and attrs.needs_quotes(new_value):  # quoted now, or it would end early
            return start, end, '"' + attrs.encode_value(new_value, quote='"') + '"'
        return start, end, attrs.encode_value(new_value, quote=quote)

    def _script_text(self, text: str, position: int, out: list[str], *, final: bool) -> int:
        """Script data up to its `</script>` (the tokenizer's escaped states followed)."""
        end = len(text)
        start = position
        while True:
            match = _SCRIPT_TOKEN.search(text, position)
            if match is None:
                stop = end if final else max(position, end - 8)
                out.append(text[start:stop])
                if final:
                    self._state = _DATA
                return stop
            token = match.group()
            state = self._script
            if token == "<!--":
                if state == _SCRIPT_DATA:
                    self._script = _SCRIPT_ESCAPED
                position = match.start() + 2  # `<!-->` ends at once: its `-->` is seen next
            elif token == "-->":
                self._script = _SCRIPT_DATA
                position = match.end()
            elif match.group(1):  # </script
                if state == _SCRIPT_DOUBLE:
                    self._script = _SCRIPT_ESCAPED
                    position = match.end()
                else:
                    out.append(text[start:match.start()])
                    self._state = _DATA
                    return match.start()
            else:  # <script
                if state == _SCRIPT_ESCAPED:
                    self._script = _SCRIPT_DOUBLE
                position = match.end()

    def _overlong(self, text: str, position: int, out: list[str], *, final: bool) -> int:
        """The rest of a tag longer than `max_pending`, passed through as it comes."""
        resumed = self._resume + text[position:]
        match = _TAG.match(resumed)
        assert match is not None
        if match.group("end") or final:
            stop = position + match.end() - len(self._resume)
            out.append(text[position:stop])
            self._resume = ""
            self._state = _DATA
            return stop
        out.append(text[position:])
        self._resume = _resume_prefix(resumed)
        return len(text)


def _end_tag_pattern(name: str) -> re.Pattern[str]:
    return re.compile(f"</{name}[\t\n\f\r />]", re.IGNORECASE)


def _resume_prefix(partial: str) -> str:
    """A short tag start that leaves the tokenizer where the cut `partial` tag left it."""
    opening = "</x" if partial.startswith("</") else "<x"
    match = _TAG.match(partial)
    assert match is not None
    items = list(_TAG_PART.finditer(partial, match.start("attrs"), match.end("attrs")))
    if not items:
        return opening
    last = items[-1]
    if last.group("separator") is not None:
        previous = items[-2] if len(items) > 1 else None
        if (previous is not None and previous.group("equals") is None
                and "/" not in last.group()):
            return opening + " a "  # after an attribute name: `=` would give it a value
        return opening + " "
    if last.group("equals") is None:
        return opening + " a"
    for group in ("dq", "sq"):
        value = last.group(group)
        if value is not None:
            whole = len(value) > 1 and value.endswith(value[0])
            return f"{opening} a={value[0] * (2 if whole else 1)}"
    if last.group("uq") is not None:
        return opening + " a=v"
    return opening + " a="


def _value_group(attribute: re.Match[str]) -> str | None:
    for group in ("dq", "sq", "uq"):
        if attribute.group(group) is not None:
            return group
    return None


def _raw_value(attribute: re.Match[str]) -> str:
    group = _value_group(attribute)
    return "" if group is None else attribute.group(group)


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
    assert head is not None
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


def _rewrite_srcdoc(value: str, urls: ArchiveUrls) -> str:
    """An iframe's inline document, rewritten as a page of its own (no banner)."""
    rewriter = HtmlRewriter(urls, banner=None)
    data = value.encode("latin-1", "xmlcharrefreplace")
    return (rewriter.feed(data) + rewriter.close()).decode("latin-1")


def _may_have_url(css: str) -> bool:
    lower = css.lower()
    return "url" in lower or "image-set" in lower or "\\" in lower
