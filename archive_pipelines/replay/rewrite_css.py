"""A streaming CSS rewriter: `url(...)`, `@import "..."` and `image-set("...")` URLs point
into the archive; every other byte is kept.

A scanner, not a parser: it jumps to the next character that matters (a comment start,
a quote, `url(`, `image-set(`, `@import`, and `;{}` while an `@import` waits for its URL).
Comments and strings that are no URL are copied as they come, however long; a URL that is
cut by a chunk boundary is held until it is whole (up to `max_pending` characters, past
which it is passed on unrewritten: no such URL is replayable). `data:` URLs are left alone.

Bytes are read as latin-1 (one character per byte), so any ASCII-compatible charset (UTF-8,
latin-1, Shift_JIS's ASCII range ...) round-trips byte for byte.
"""

from __future__ import annotations

import re

from archive_pipelines.replay.archive_urls import ArchiveUrls

DEFAULT_MAX_PENDING = 1 << 20

_ALWAYS = r"""(?P<comment>/\*)
      | (?P<quote>["'])
      | (?<![\w\\-])(?P<func>url|(?:-webkit-)?image-set)\(
      | (?P<import>@import)(?![\w-])"""
# Parentheses matter inside image-set(), `;{}` while an @import waits or inside image-set().
_TOKEN = re.compile(_ALWAYS + r"| (?P<close>\)) | (?P<open>\() | (?P<stop>[;{}])",
                    re.IGNORECASE | re.VERBOSE | re.ASCII)
_LEAN_TOKEN = re.compile(_ALWAYS, re.IGNORECASE | re.VERBOSE | re.ASCII)
# What a chunk may end with that the next chunk could complete into a token.
_PARTIAL_TAIL = re.compile(r"(?:/|\\|@[A-Za-z-]{0,6}|[A-Za-z-]{1,18})\Z")
_WS = "\t\n\f\r "
_BARE_URL = re.compile(
    r"(?P<url>(?:[^\t\n\f\r \"'()\\]|\\[0-9A-Fa-f]{1,6}(?:\r\n|[\t\n\f\r ])?+|\\[^\n])*+)"
    r"[\t\n\f\r ]*+(?P<end>\)?)",
                       re.DOTALL)
_BAD_URL_REST = re.compile(r"(?:[^)\\]|\\.)*+(?P<end>\)?)", re.DOTALL)
_STRING_BODY = {
    '"': re.compile(r'(?:[^"\\\n]|\\.)*+(?P<end>["\n]?)', re.DOTALL),
    "'": re.compile(r"(?:[^'\\\n]|\\.)*+(?P<end>['\n]?)", re.DOTALL),
}
_ESCAPE = re.compile(r"\\(?:([0-9A-Fa-f]{1,6})[ \t\n\f]?|\r\n|(\n|\r|\f)|(.))", re.DOTALL)
_CLOSE_PAREN = re.compile(r"[\t\n\f\r ]*+\)?")
_ESCAPED = "\ue001"  # stands for the `\\` of a non-ASCII escape kept as one (never in latin-1 text)
_NEEDS_ESCAPE_BARE = re.compile(r"[\t\n\f\r \"'()\\]")

_NORMAL, _COMMENT, _STRING, _BAD_URL = range(4)


class CssTextRewriter:
    """The streaming CSS rewriter over text (bytes already read as latin-1).

    Args:
        urls: the archive URLs of the stylesheet (its own URL as the page URL).
        max_pending: the longest URL held across chunk boundaries, in characters.
    """

    def __init__(self, urls: ArchiveUrls, *, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self._urls = urls
        self._max_pending = max_pending
        self._buffer = ""
        self._previous = ""  # the last character passed on (what a `url(` follows)
        self._state = _NORMAL
        self._quote = ""  # the quote of the string being copied (_STRING)
        self._importing = False  # an @import waits for its URL
        self._image_set = 0  # parenthesis depth inside an image-set(), 0 outside

    def feed(self, text: str) -> str:
        """The rewritten text that is whole so far."""
        self._buffer += text
        return self._run(final=False)

    def close(self) -> str:
        """The rest, at the end of the stylesheet."""
        return self._run(final=True)

    def _run(self, *, final: bool) -> str:
        buffer = self._buffer
        context = self._previous
        text = context + buffer
        position = len(context)
        end = len(text)
        out: list[str] = []
        held = end
        while position < end:
            state = self._state
            if state == _COMMENT:
                close = text.find("*/", position)
                if close < 0:
                    keep = 0 if final or text[end - 1] != "*" else 1
                    out.append(text[position:end - keep])
                    position = end - keep
                    held = position
                    break
                out.append(text[position:close + 2])
                position = close + 2
                self._state = _NORMAL
                continue
            if state in (_STRING, _BAD_URL):
                if state == _STRING:
                    match = _STRING_BODY[self._quote].match(text, position)
                    assert match is not None
                    closed = bool(match.group("end"))
                else:
                    match = _BAD_URL_REST.match(text, position)
                    assert match is not None
                    closed = bool(match.group("end"))
                stop = match.end()
                if not closed and not final:  # (stopped at the end, or before a cut escape)
                    out.append(text[position:stop])
                    position = held = stop
                    break
                out.append(text[position:stop])
                position = stop
                self._state = _NORMAL
                continue
            pattern = _TOKEN if self._importing or self._image_set else _LEAN_TOKEN
            match = pattern.search(text, position)
            if match is None:
                tail = None if final else _PARTIAL_TAIL.search(text, max(position, end - 20))
                cut = tail.start() if tail is not None else end
                out.append(text[position:cut])
                position = held = cut
                break
            start = match.start()
            out.append(text[position:start])
            group = match.lastgroup
            if group == "comment":
                out.append("/*")
                position = match.end()
                self._state = _COMMENT
            elif group == "quote":
                result = self._string(text, start, final=final)
                if result is None:
                    position = held = start
                    break
                out.append(result[0])
                position = result[1]
            elif group == "func":
                name = match.group("func").lower()
                if name == "url":
                    result = self._url(text, start, match.end(), final=final)
                    if result is None:
                        position = held = start
                        break
                    out.append(result[0])
                    position = result[1]
                else:
                    out.append(match.group())
                    position = match.end()
                    self._image_set = 1
            elif group == "import":
                if match.end() == end and not final:  # `@imports` is no @import
                    position = held = start
                    break
                out.append(match.group())
                position = match.end()
                self._importing = True
            elif group == "open":
                out.append("(")
                position = match.end()
                if self._image_set:
                    self._image_set += 1
            elif group == "close":
                out.append(")")
                position = match.end()
                if self._image_set:
                    self._image_set -= 1
            else:  # ; { }
                out.append(match.group())
                position = match.end()
                self._importing = False
                self._image_set = 0
        else:
            held = end
        self._buffer = text[held:]
        self._previous = text[held - 1] if held > 0 else ""
        if final:
            out.append(self._buffer)
            self._buffer = ""
        return "".join(out)

    def _string(self, text: str, start: int, *, final: bool) -> tuple[str, int] | None:
        """A string token from its quote: (its output, where it ends); None to wait for more."""
        quote = text[start]
        match = _STRING_BODY[quote].match(text, start + 1)
        assert match is not None
        stop = match.end()
        closed = bool(match.group("end"))
        is_url = self._importing or self._image_set == 1
        if not closed and not final:  # cut at the end (maybe inside an escape)
            if not is_url or stop - start > self._max_pending or _is_data(text, start + 1):
                self._state, self._quote, self._importing = _STRING, quote, False  # copied as it comes
                return text[start:stop], stop
            return None
        raw = text[start:stop]
        if match.group("end") == "\n":
            self._importing = False  # a bad string: the rule is void
            return raw, stop
        if not is_url:
            return raw, stop
        body_end = stop - 1 if closed else stop
        modifier = "cs_" if self._importing else "im_"
        self._importing = False
        rewritten = self._rewrite(text[start + 1:body_end], quote=quote, modifier=modifier)
        return quote + rewritten + text[body_end:stop], stop

    def _url(self, text: str, start: int, after: int, *, final: bool) -> tuple[str, int] | None:
        """A `url(` token at `start` (its argument from `after`): (output, end); None to wait."""
        end = len(text)
        position = after
        while position < end and text[position] in _WS:
            position += 1
        if position == end and not final:
            return None if end - start <= self._max_pending else (text[start:end], end)
        modifier = "cs_" if self._importing else "im_"
        if position < end and text[position] in "\"'":
            quote = text[position]
            match = _STRING_BODY[quote].match(text, position + 1)
            assert match is not None
            stop = match.end()
            if not match.group("end") and not final:
                if stop - start > self._max_pending or _is_data(text, position + 1):
                    self._state, self._quote, self._importing = _STRING, quote, False
                    return text[start:stop], stop
                return None
            if match.group("end") == "\n":
                self._importing = False
                return text[start:stop], stop
            close = _CLOSE_PAREN.match(text, stop)
            assert close is not None
            if close.end() == end and not close.group().endswith(")") and not final:
                return None  # its `)` has not come yet
            self._importing = False
            body_end = stop - 1 if match.group("end") else stop
            rewritten = self._rewrite(text[position + 1:body_end], quote=quote, modifier=modifier)
            stop = close.end()
            return text[start:position + 1] + rewritten + text[body_end:stop], stop
        match = _BARE_URL.match(text, position)
        assert match is not None
        if not match.group("end"):
            stop = match.end()
            if stop == end - 1 and text[stop] == "\\" and not final:
                return None  # an escape cut by the chunk boundary
            if stop == end and not final:
                if stop - start > self._max_pending or _is_data(text, position):
                    self._state, self._importing = _BAD_URL, False
                    return text[start:stop], stop
                return None
            # a quote, parenthesis or bad escape inside: a bad URL, copied to its `)`
            rest = _BAD_URL_REST.match(text, stop)
            assert rest is not None
            if not rest.group("end") and rest.end() >= end - 1 and not final:
                if rest.end() - start > self._max_pending:
                    self._state, self._importing = _BAD_URL, False
                    return text[start:end], end
                return None
            self._importing = False
            return text[start:rest.end()], rest.end()
        self._importing = False
        raw_url = match.group("url")
        rewritten = self._rewrite(raw_url, quote="", modifier=modifier)
        return text[start:position] + rewritten + text[match.end("url"):match.end()], match.end()

    def _rewrite(self, raw: str, *, quote: str, modifier: str) -> str:
        """A URL as written in CSS (escapes and all), rewritten and written back."""
        value = _unescape(raw) if "\\" in raw else raw
        if value.lstrip(_WS)[:5].lower() == "data:":
            return raw
        rewritten = self._urls.rewrite(value, modifier=modifier)
        if rewritten == value:
            return raw
        return _escape(rewritten, quote=quote)


def rewrite_css_text(text: str, urls: ArchiveUrls) -> str:
    """A whole stylesheet (or a `style` attribute's value), rewritten."""
    rewriter = CssTextRewriter(urls)
    return rewriter.feed(text) + rewriter.close()


class CssRewriter:
    """A streaming CSS rewriter over bytes: `.feed(chunk)` and `.close()` return the output."""

    def __init__(self, urls: ArchiveUrls, *, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self._text = CssTextRewriter(urls, max_pending=max_pending)

    def feed(self, data: bytes) -> bytes:
        """The rewritten bytes that are whole so far."""
        return self._text.feed(data.decode("latin-1")).encode("latin-1")

    def close(self) -> bytes:
        """The rest, at the end of the stylesheet."""
        return self._text.close().encode("latin-1")


def _is_data(text: str, start: int) -> bool:
    return text[start:start + 5].lower() == "data:"


def _unescape(value: str) -> str:
    """CSS escapes decoded (`\\26 ` is `&`, `\\)` is `)`, an escaped newline is nothing)."""
    return _ESCAPE.sub(_escape_char, value)


def _escape_char(match: re.Match[str]) -> str:
    hex_digits, newline, char = match.groups()
    if hex_digits is not None:
        code = int(hex_digits, 16)
        if not (0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF):
            code = 0xFFFD
        # a non-ASCII character stays an escape (its bytes would depend on the charset)
        return chr(code) if code < 0x80 else f"{_ESCAPED}{code:06x}"
    if newline is not None or match.group() == "\\\r\n":
        return ""
    if char and not char.isascii():
        return char  # a raw byte of the stylesheet (read as latin-1): kept as it is
    return char or ""


def _escape(url: str, *, quote: str) -> str:
    """A URL written back into CSS: in a string of `quote`, or bare inside url() if none."""
    if quote:
        if "\\" in url or quote in url or "\n" in url:
            url = url.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\a ")
    elif _NEEDS_ESCAPE_BARE.search(url):
        url = _NEEDS_ESCAPE_BARE.sub(_escape_bare, url)
    return url.replace(_ESCAPED, "\\") if _ESCAPED in url else url


def _escape_bare(match: re.Match[str]) -> str:
    char = match.group()
    return "\\" + char if char in "\"'()\\ " else f"\\{ord(char):x} "
