"""A streaming HTML rewriter: the URLs a page names point into the archive, every other
byte is kept, and a banner is inserted where the body begins.

It follows the HTML tokenizer where that decides what is a tag: comments (`<!-->` and
`--!>` too), bogus comments, raw text (`<script>` with its escaped states, `<style>`,
`<xmp>`, `<iframe>`, `<noembed>`, `<noframes>`, `<noscript>`), RCDATA (`<title>`,
`<textarea>`), `<plaintext>`, attributes quoted or not, and SVG and MathML content as the
tree builder enters and leaves it (CDATA there; raw text only in its HTML integration
points). `<noscript>` is raw text, as in a browser that runs scripts.

Rewritten: the URL
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

from archive_pipelines.replay import html_syntax as syntax
from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.html_tags import attribute_value, rewrite_start_tag
from archive_pipelines.replay.rewrite_css import CssTextRewriter

DEFAULT_MAX_PENDING = 1 << 20

_DATA, _COMMENT, _BOGUS, _CDATA, _SCRIPT, _STYLE, _RAW, _PLAINTEXT, _PASS, _OVERLONG = range(10)
_SCRIPT_DATA, _SCRIPT_ESCAPED, _SCRIPT_DOUBLE = range(3)
_POINT = "integration point"  # where HTML is parsed again inside SVG or MathML


class HtmlRewriter:
    """Rewrites one HTML page as it streams: `.feed(chunk)` then `.close()`, each returning
    the bytes ready so far (their concatenation is the whole rewritten page).

    Args:
        urls: the page's archive URLs.
        banner: HTML inserted where the body begins (non-ASCII is written as character
            references); None for no banner.
        xhtml: the page is XHTML (`application/xhtml+xml`): `<x/>` closes any element and
            `<![CDATA[` opens CDATA everywhere, as the XML parser reads them.
        max_pending: the longest tag or markup held across chunk boundaries, in bytes.
    """

    def __init__(self, urls: ArchiveUrls, *, banner: str | None, xhtml: bool = False,
                 max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self._urls = urls
        self._xhtml = xhtml
        self._banner = (banner.encode("ascii", "xmlcharrefreplace").decode("ascii")
                        if banner is not None else None)
        self._max_pending = max_pending
        self._buffer = ""
        self._state = _DATA
        self._started = False
        self._raw_end: re.Pattern[str] | None = None  # the end tag of the raw text we are in
        self._script = _SCRIPT_DATA
        self._css: CssTextRewriter | None = None
        # open <svg> / <math> elements and integration points: (name, namespace or _POINT)
        self._namespaces: list[tuple[str, str]] = []
        self._html_in_point = 0  # HTML elements open in the innermost integration point
        self._templates: list[int] = []  # open <template>s: the depth of _namespaces at each
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
                if self._banner is None and not self._namespaces:  # (there, tags are counted)
                    plain = syntax.PLAIN_RUN.match(text, position)
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
                match = syntax.COMMENT_END.search(text, position)
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
            for prefix in syntax.MARKUP_PREFIXES:
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
            if head == "<![CDATA[" and (self._xhtml or self._cdata_allowed()):
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
        if self._banner is not None and not self._templates:
            match = syntax.NOT_SPACE.search(chunk)
            if match is not None:
                out.append(chunk[:match.start()])
                out.append(self._banner)
                self._banner = None
                chunk = chunk[match.start():]
        out.append(chunk)

    def _tag(self, text: str, lt: int, out: list[str], *, final: bool) -> int:
        """A start or end tag at `lt`: rewritten and passed on; waits while it is cut."""
        match = syntax.TAG.match(text, lt)
        assert match is not None
        if not match.group("end"):
            if final:
                out.append(text[lt:])  # a tag cut by the end of the page: a browser drops it
                return len(text)
            if len(text) - lt > self._max_pending:
                out.append(text[lt:])
                self._resume = syntax.resume_prefix(text[lt:])
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
        if self._banner is not None and not self._templates:
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
        elif name in syntax.HEAD_TAGS:
            out.append(self._rewrite_tag(name, tag))
        else:
            out.append(self._banner)
            self._banner = None
            out.append(self._rewrite_tag(name, tag))

    def _in_foreign(self) -> bool:
        """Whether the parser is in SVG or MathML content (not in an integration point)."""
        return bool(self._namespaces) and self._namespaces[-1][1] != _POINT

    def _cdata_allowed(self) -> bool:
        """Whether `<![CDATA[` opens CDATA: the current element is SVG or MathML (an
        integration point too, until an HTML element opens in it)."""
        return bool(self._namespaces) and (self._namespaces[-1][1] != _POINT
                                           or self._html_in_point == 0)

    def _after_start_tag(self, name: str, tag: str) -> None:
        """The tokenizer state the start tag `name` leaves."""
        closed = tag.endswith("/>")
        if closed and self._xhtml:
            return  # `<script src="a.js"/>` is whole in XML: no raw text follows
        if self._in_foreign():
            if name not in syntax.BREAKOUT:
                namespace = self._namespaces[-1][1]
                if closed:
                    return
                if name in syntax.INTEGRATION_POINTS[namespace]:
                    self._namespaces.append((name, _POINT))
                    self._html_in_point = 0
                elif name in syntax.FOREIGN:  # an <svg> in MathML is MathML, and so on
                    self._namespaces.append((name, namespace))
                return
            self._leave_foreign()
        if self._namespaces and not closed and name not in syntax.VOID:
            self._html_in_point += 1
        if name in syntax.FOREIGN:
            if not closed:
                self._namespaces.append((name, name))
        elif name == "script":
            self._state, self._script = _SCRIPT, _SCRIPT_DATA
            self._raw_end = None
        elif name == "style":
            self._state = _STYLE
            self._raw_end = syntax.end_tag_pattern(name)
            self._css = CssTextRewriter(self._urls, max_pending=self._max_pending)
        elif name in syntax.RAWTEXT:
            self._state = _RAW
            self._raw_end = syntax.end_tag_pattern(name)
        elif name == "plaintext":
            self._state = _PLAINTEXT
        elif name == "template":
            self._templates.append(len(self._namespaces))

    def _rewrite_tag(self, name: str, tag: str) -> str:
        """A whole start tag with its URLs rewritten; the first `<base href>` sets the base
        of the URLs after it."""
        urls = self._urls
        if name == "base" and not self._base_seen:
            href = attribute_value(name, tag, "href")
            if href is not None:
                self._base_seen = True
                self._urls = urls.with_base(href)
        return rewrite_start_tag(name, tag, urls, inline_document=rewrite_html_text)

    def _leave_foreign(self) -> None:
        """An HTML tag in SVG or MathML content ends it (back to HTML or an integration point)."""
        while self._in_foreign():
            self._namespaces.pop()

    def _end_tag(self, name: str) -> None:
        """The nesting an end tag closes (what the tree builder does, as far as it matters)."""
        stack = self._namespaces
        if name == "template" and self._templates:
            del stack[self._templates.pop():]  # whatever opened inside the template ends
        elif name in ("p", "br") and self._in_foreign():
            self._leave_foreign()
        elif stack and stack[-1][1] == _POINT and self._html_in_point:
            self._html_in_point -= 1  # an HTML element in the integration point (its own
            # end tag is ignored while one is open: the tree builder stops at it)
        else:
            for depth in range(len(stack) - 1, -1, -1):  # the nearest open one of that name
                if stack[depth][0] == name:
                    del stack[depth:]
                    self._html_in_point = 0
                    return
                if stack[depth][1] == _POINT:
                    return

    def _script_text(self, text: str, position: int, out: list[str], *, final: bool) -> int:
        """Script data up to its `</script>` (the tokenizer's escaped states followed)."""
        end = len(text)
        start = position
        while True:
            match = syntax.SCRIPT_TOKEN.search(text, position)
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
        match = syntax.TAG.match(resumed)
        assert match is not None
        if match.group("end") or final:
            stop = position + match.end() - len(self._resume)
            out.append(text[position:stop])
            self._resume = ""
            self._state = _DATA
            return stop
        out.append(text[position:])
        self._resume = syntax.resume_prefix(resumed)
        return len(text)




def rewrite_html_text(text: str, urls: ArchiveUrls) -> str:
    """A whole document already read as text (an `<iframe srcdoc>`), rewritten; no banner."""
    rewriter = HtmlRewriter(urls, banner=None)
    rewriter._started = True  # no byte order mark inside an attribute
    rewriter._buffer = text
    return rewriter._run(final=True)
