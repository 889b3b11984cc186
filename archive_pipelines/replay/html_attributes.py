"""Which attributes of which HTML elements hold URLs, and how their values are read and written.

Values are read as the HTML tokenizer reads attribute values: character references decoded
(`&amp;` is `&`; a legacy reference without `;` followed by `=` or an alphanumeric is kept,
so `?a=1&copy=2` stays). A reference to a non-ASCII character is kept as written, behind a
private marker, so that writing the value back reproduces its bytes in any charset.
"""

from __future__ import annotations

import re
from html.entities import html5

# element -> attribute -> modifier (pywb's choices; see archive_urls for what they mean)
URL_ATTRIBUTES: dict[str, dict[str, str]] = {
    "a": {"href": "", "xlink:href": ""},
    "area": {"href": ""},
    "audio": {"src": "oe_"},
    "base": {"href": ""},
    "blockquote": {"cite": ""},
    "button": {"formaction": ""},
    "del": {"cite": ""},
    "embed": {"src": "oe_"},
    "form": {"action": ""},
    "frame": {"src": "fr_"},
    "iframe": {"src": "if_"},
    "image": {"href": "im_", "xlink:href": "im_", "src": "im_"},
    "img": {"src": "im_", "srcset": "im_", "longdesc": ""},
    "input": {"src": "im_", "formaction": ""},
    "ins": {"cite": ""},
    "link": {"href": "oe_"},
    "object": {"data": "oe_", "codebase": "oe_"},
    "q": {"cite": ""},
    "script": {"src": "js_", "xlink:href": "js_"},
    "source": {"src": "oe_", "srcset": "im_"},
    "track": {"src": "oe_"},
    "use": {"href": "", "xlink:href": ""},
    "video": {"src": "oe_", "poster": "im_"},
}
SRCSET_ATTRIBUTES = frozenset({"srcset", "imagesrcset"})
# <link rel=...> -> the modifier of its href; `as=` of a preload says the same
LINK_RELS = {"stylesheet": "cs_", "icon": "im_", "shortcut": "im_", "apple-touch-icon": "im_",
             "apple-touch-icon-precomposed": "im_", "mask-icon": "im_", "image_src": "im_",
             "manifest": "oe_"}
PRELOAD_AS = {"style": "cs_", "script": "js_", "image": "im_", "font": "oe_"}

# One attribute of a complete tag: its name and its value (double-, single- or unquoted).
ATTRIBUTE = re.compile(
    r"""[\t\n\f\r /]*+(?P<name>[^\t\n\f\r />][^\t\n\f\r />=]*+)
        (?:[\t\n\f\r ]*+=[\t\n\f\r ]*+
           (?:"(?P<dq>[^"]*+)"|'(?P<sq>[^']*+)'|(?P<uq>[^\t\n\f\r >"'][^\t\n\f\r >]*+))?)?+""",
    re.VERBOSE)
MARKER = "\ue000"  # stands for the `&` of a reference kept as written (never in latin-1 text)
_REFERENCE = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]*;?)")
_NEEDS_QUOTES = re.compile(r"[\t\n\f\r \"'=<>`]")
_INVALID_CODEPOINTS = {0x0D, 0x80, 0x81, 0x8D, 0x8F, 0x90, 0x9D, *range(0xD800, 0xE000)}


def decode_value(raw: str) -> str:
    """An attribute value as the page means it (references decoded or marked)."""
    if "&" not in raw:
        return raw
    if "&" not in raw.replace("&amp;", ""):  # the usual case: `&amp;` alone
        return raw.replace("&amp;", "&")
    return _REFERENCE.sub(_decode_reference, raw)


def _decode_reference(match: re.Match[str]) -> str:
    body = match.group(1)
    if body[0] == "#":
        digits = body[1:].rstrip(";")
        code = int(digits[1:], 16) if digits[:1] in "xX" and digits[:1] else int(digits)
        if code < 0x80 and code not in _INVALID_CODEPOINTS and code != 0:
            return chr(code)
        return MARKER + body
    if body[-1] == ";" and body in html5:
        char = html5[body]
        return char if char.isascii() else MARKER + body
    # a legacy reference without `;`: its longest known prefix, unless `=` or alnum follows
    for length in range(min(len(body), 32), 1, -1):
        prefix = body[:length]
        if prefix in html5:
            following = body[length:length + 1]
            if following and (following == "=" or following.isalnum()):
                return match.group()
            # what follows the end of the match can be `=` too
            after = match.string[match.end():match.end() + 1]
            if length == len(body) and after == "=":
                return match.group()
            char = html5[prefix]
            replaced = char if char.isascii() else MARKER + prefix
            return replaced + body[length:]
    return match.group()


def encode_value(value: str, *, quote: str) -> str:
    """A decoded value written back inside `quote` ("" for none): `&` and the quote escaped,
    marked references restored."""
    if "&" in value:
        value = value.replace("&", "&amp;")
    if quote and quote in value:
        value = value.replace(quote, "&quot;" if quote == '"' else "&#39;")
    if MARKER in value:
        value = value.replace(MARKER, "&")
    return value


def needs_quotes(value: str) -> bool:
    """Whether a value written without quotes would end early or change meaning."""
    return not value or _NEEDS_QUOTES.search(value) is not None


# The attributes the rewriter looks at, by element: its URL attributes, those that decide
# what its URL is, and those of every element (ANY_ELEMENT).
ANY_ELEMENT = frozenset({"style", "background"})
NOTICED: dict[str, frozenset[str]] = {
    element: ANY_ELEMENT | set(rules) for element, rules in URL_ATTRIBUTES.items()}
for _element, _names in (("link", {"integrity", "imagesrcset", "srcset"}),
                         ("script", {"integrity"}), ("img", {"srcset"}), ("source", {"srcset"}),
                         ("meta", {"content", "http-equiv"}), ("iframe", {"srcdoc"})):
    NOTICED[_element] = NOTICED.get(_element, ANY_ELEMENT) | _names
