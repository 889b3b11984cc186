"""URLs a stylesheet loads: `url(...)`, `@import`, and the strings of `image-set(...)`.

A scanner, not a full CSS parser: it walks the tokens that can hold a URL (comments and
strings first, so a `url(` inside either is not one), keeps a stack of open functions (a
string is a URL only directly inside `url(`, `src(` or an `image-set(`) and the brace depth
(a `url()` inside an `@font-face` block is a font). Escapes are decoded as CSS does;
`data:` URLs are skipped (their bytes are already in the stylesheet).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from frontier_service.frontier.records import ResourceType

_TOKEN = re.compile(
    r"""
    (?P<comment>/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*(?:"|(?=\n)|\Z)|'(?:[^'\\\n]|\\.)*(?:'|(?=\n)|\Z))
  | (?<![\w\\-])url\([ \t\n\r\f]*
      (?P<bare>(?:[^ \t\n\r\f"'()\\]|(?>\\[0-9A-Fa-f]{1,6}[ \t\n\r\f]?)|\\[^\n])*+)
      [ \t\n\r\f]*\)
  | (?P<bad_url>(?<![\w\\-])url\([ \t\n\r\f]*+(?!["'])(?:[^)\\]|\\.)*\)?)
  | (?P<function>(?<![\w\\-])-?[A-Za-z_][\w-]*\()
  | (?P<open_paren>\()
  | (?P<close_paren>\))
  | (?P<at>@(?:import|font-face)(?![\w-]))
  | (?P<open>\{) | (?P<close>\}) | (?P<semicolon>;)
    """,
    re.IGNORECASE | re.DOTALL | re.VERBOSE | re.ASCII,
)
_ESCAPE = re.compile(r"\\(?:([0-9A-Fa-f]{1,6})[ \t\n\f]?|\r\n|(\n|\r|\f)|(.))", re.DOTALL)
_URL_FUNCTIONS = frozenset({"url", "src"})
_IMAGE_SETS = frozenset({"image-set", "-webkit-image-set"})


def css_references(text: str) -> Iterator[tuple[str, ResourceType]]:
    """Each URL the stylesheet `text` names, unresolved, with what it is loaded as, in order."""
    functions: list[str] = []  # the functions open around the scanner ("" for a bare paren)
    depth = 0
    font_face_depth = -1  # the brace depth inside the @font-face block we are in (-1: none)
    pending_at = ""  # an @import / @font-face whose URL or block has not come yet
    # (then "@import;": the rest of the @import rule, whose conditions name no resource)
    for match in _TOKEN.finditer(text):
        group = match.lastgroup
        if group == "string" or group == "bare":
            if pending_at == "@import;":
                continue
            importing = pending_at == "@import" and (not functions or functions == ["url"])
            raw = _url_text(match, text, inside=functions[-1] if functions else "",
                            importing=importing)
            if raw is None:
                continue
            if importing:
                kind, pending_at = ResourceType.STYLESHEET, "@import;"
            elif 0 <= font_face_depth <= depth:
                kind = ResourceType.FONT
            else:
                kind = ResourceType.IMAGE
            url = raw.strip(" \t\n\r\f")
            if url and url[:5].lower() != "data:":
                yield url, kind
        elif group == "function":
            functions.append(match.group()[:-1].lower())
        elif group == "open_paren":
            functions.append("")
        elif group == "close_paren":
            if functions:
                functions.pop()
        elif group == "at":
            pending_at = match.group().lower()
        elif group in ("open", "close"):
            depth = depth + 1 if group == "open" else max(0, depth - 1)
            if group == "open" and pending_at == "@font-face":
                font_face_depth = depth
            elif depth < font_face_depth:
                font_face_depth = -1
            pending_at = ""
            functions.clear()  # a block ends whatever function was left open
        elif group == "semicolon":
            pending_at = ""


def _url_text(match: re.Match[str], text: str, *, inside: str, importing: bool) -> str | None:
    """The URL an unquoted `url(...)` or a string holds, escapes decoded; None for a string
    that is no URL (not directly in url(), src() or image-set(), nor an @import's)."""
    if match.lastgroup == "bare":
        return _unescape(match.group("bare"))
    if not (importing or inside in _URL_FUNCTIONS or inside in _IMAGE_SETS):
        return None
    body = _string_body(match.group(), at_end=match.end() == len(text))
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
