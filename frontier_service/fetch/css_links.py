"""URLs a stylesheet loads: `url(...)`, `@import`, and the strings of `image-set(...)`.

A scanner, not a full CSS parser: it jumps from one character that matters to the next
(quotes, comment starts, parentheses, `@`; braces and semicolons only where they matter),
so a stylesheet of megabytes costs few Python steps. Comments and strings are skipped
whole, so a `url(` inside either is not one; a stack of open functions says whether a
string is a URL (directly inside `url(`, `src(` or an `image-set(`); a `url()` inside an
`@font-face` block is a font, the first URL of an `@import` a stylesheet, everything else
an image. Escapes are decoded as CSS does; `data:` URLs are skipped (their bytes are
already in the stylesheet).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from frontier_service.frontier.frontier_record import ResourceType

_TOKENS = r"""
    (?P<comment>/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*(?:"|(?=\n)|\Z)|'(?:[^'\\\n]|\\.)*(?:'|(?=\n)|\Z))
  | (?P<open_paren>\()
  | (?P<close_paren>\))
  | (?P<at>@(?:import|font-face)(?![\w-]))
  | (?P<other>\\.|[/@\\])
"""
_FLAGS = re.IGNORECASE | re.DOTALL | re.VERBOSE | re.ASCII
# Outside functions, at-rules and font faces braces and semicolons do not matter: skipped.
_LEAN = re.compile(r"""[^"'/()@\\]*+(?:""" + _TOKENS + ")", _FLAGS)
_FULL = re.compile(r"""[^"'/()@\\{};]*+(?:""" + _TOKENS
                   + r"| (?P<open>\{) | (?P<close>\}) | (?P<semicolon>;))", _FLAGS)
_WS = "[ \t\n\r\f]"
_BARE_URL = re.compile(  # the rest of an unquoted url(...)
    _WS + r"*+(?P<bare>(?:[^ \t\n\r\f\"'()\\]|(?>\\[0-9A-Fa-f]{1,6}" + _WS + r"?)|\\[^\n])*+)"
    + _WS + r"*\)", re.DOTALL)
_QUOTE_NEXT = re.compile(_WS + "*+[\"']")
_BAD_URL_REMNANT = re.compile(r"(?:[^)\\]|\\.)*+\)?", re.DOTALL)
_ESCAPE = re.compile(r"\\(?:([0-9A-Fa-f]{1,6})[ \t\n\f]?|\r\n|(\n|\r|\f)|(.))", re.DOTALL)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_URL_FUNCTIONS = frozenset({"url", "src"})
_IMAGE_SETS = frozenset({"image-set", "-webkit-image-set"})


def css_references(text: str) -> Iterator[tuple[str, ResourceType]]:
    """Each URL the stylesheet `text` names, unresolved, with what it is loaded as, in order."""
    functions: list[str] = []  # the functions open around the scanner ("" for a bare paren)
    font_face = 0  # brace depth inside the @font-face block we are in (0: none)
    pending_at = ""  # an @import / @font-face whose URL or block has not come yet
    # (then "@import;": the rest of the @import rule, whose conditions name no resource)
    position, end = 0, len(text)
    while position < end:
        pattern = _FULL if functions or pending_at or font_face else _LEAN
        match = pattern.match(text, position)
        if match is None:
            return
        position = match.end()
        group = match.lastgroup
        raw: str | None = None
        if group == "string":
            if pending_at != "@import;":
                raw = _string_url(match.group("string"), at_end=position == end,
                                  inside=functions[-1] if functions else "",
                                  importing=pending_at == "@import" and not functions)
        elif group == "open_paren":
            name = _name_before(text, match.start("open_paren"), match.start())
            if name != "url":
                functions.append(name)
                continue
            bare = _BARE_URL.match(text, position)
            if bare is not None:
                position = bare.end()
                if pending_at != "@import;":
                    raw = _unescape(bare.group("bare"))
            elif _QUOTE_NEXT.match(text, position) is not None:
                functions.append(name)  # url("..."): the string comes next
            else:  # a bad URL: skipped up to its closing parenthesis, as CSS does
                remnant = _BAD_URL_REMNANT.match(text, position)
                position = remnant.end() if remnant is not None else end
        elif group == "close_paren":
            if functions:
                functions.pop()
        elif group == "at":
            pending_at = match.group("at").lower()
        elif group == "open" or group == "close":
            functions.clear()  # a block ends whatever function was left open
            if group == "open":
                font_face = font_face + 1 if font_face or pending_at == "@font-face" else 0
            else:
                font_face = max(0, font_face - 1)
            pending_at = ""
        elif group == "semicolon":
            pending_at = ""
        if raw is None:
            continue
        if pending_at == "@import" and (not functions or functions == ["url"]):
            kind, pending_at = ResourceType.STYLESHEET, "@import;"
        else:
            kind = ResourceType.FONT if font_face else ResourceType.IMAGE
        url = raw.strip(" \t\n\r\f")
        if url and url[:5].lower() != "data:":
            yield url, kind


def _name_before(text: str, paren: int, floor: int) -> str:
    """The function name just before the parenthesis at `paren` ("" for a bare one)."""
    start = paren
    while start > floor and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:paren].lower()


def _string_url(token: str, *, at_end: bool, inside: str, importing: bool) -> str | None:
    """The URL a string holds, escapes decoded; None for a string that is no URL (not
    directly in url(), src() or image-set(), nor an @import's) or that a newline cut."""
    if not (importing or inside in _URL_FUNCTIONS or inside in _IMAGE_SETS):
        return None
    body = _string_body(token, at_end=at_end)
    return None if body is None else _unescape(body)


def _string_body(token: str, *, at_end: bool) -> str | None:
    """A string token without its quotes; None for one a newline cut (CSS drops it; one the
    stylesheet's end cuts is closed there)."""
    body = token[1:]
    if body.endswith(token[0]) and not _escaped_end(body):
        return body[:-1]
    return body if at_end else None


def _escaped_end(body: str) -> bool:
    """Whether the closing quote is itself escaped (an odd run of backslashes before it)."""
    run = len(body) - 1 - len(body[:-1].rstrip("\\"))
    return run % 2 == 1


def _unescape(value: str) -> str:
    """CSS escapes decoded: `\\26 ` and `\\000026` are `&`, `\\)` is `)`, an escaped newline
    (inside a string) is nothing; a code point that is not one is U+FFFD."""
    if "\\" not in value:
        return value
    return _ESCAPE.sub(_escape_char, value)


def _escape_char(match: re.Match[str]) -> str:
    hex_digits, newline, char = match.groups()
    if hex_digits is not None:
        code = int(hex_digits, 16)
        return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
    if newline is not None or match.group() == "\\\r\n":
        return ""
    return char or ""
