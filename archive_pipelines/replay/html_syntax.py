"""What the HTML tokenizer reads as a tag, a comment's end, a script's end: the patterns the
streaming rewriter scans with.

Every pattern is possessive (`*+`, `?+`): the tokenizer never goes back, so neither may
the scanner, and no input makes a match slow.
"""

from __future__ import annotations

import re

from archive_pipelines.replay.html_attributes import NOTICED

_DELIMITER = r"[\t\n\f\r />]"  # what ends a tag name

# A tag from `<` or `</`: its name, its attributes, and `>` when it is whole.
TAG = re.compile(
    r"""</?(?P<name>[A-Za-z][^\t\n\f\r />]*+)
        (?P<attrs>(?:[\t\n\f\r /]++
           |[^\t\n\f\r />][^\t\n\f\r />=]*+
            (?:[\t\n\f\r ]*+=[\t\n\f\r ]*+
               (?:"[^"]*+"?+|'[^']*+'?+|[^\t\n\f\r >"'][^\t\n\f\r >]*+)?+)?+)*+)
        (?P<end>>?)""",
    re.VERBOSE)
# One part of a tag's attributes, as TAG reads them (a quoted value may be cut).
TAG_PART = re.compile(
    r"""(?P<separator>[\t\n\f\r /]++)
      |[^\t\n\f\r />][^\t\n\f\r />=]*+
       (?:(?P<equals>[\t\n\f\r ]*+=[\t\n\f\r ]*+)
          (?:(?P<dq>"[^"]*+"?+)|(?P<sq>'[^']*+'?+)|(?P<uq>[^\t\n\f\r >"'][^\t\n\f\r >]*+))?+)?+""",
    re.VERBOSE)
COMMENT_END = re.compile(r"--!?>")
SCRIPT_TOKEN = re.compile(r"<!--|-->|<(/?)script[\t\n\f\r />]", re.IGNORECASE)
NOT_SPACE = re.compile(r"[^\t\n\f\r ]")

RAWTEXT = frozenset({"xmp", "iframe", "noembed", "noframes", "noscript", "title", "textarea"})
FOREIGN = frozenset({"svg", "math"})
# Inside these, SVG and MathML content holds HTML again (raw text, CDATA as a bogus comment).
INTEGRATION_POINTS = {"svg": frozenset({"foreignobject", "desc", "title"}),
                      "math": frozenset({"mi", "mo", "mn", "ms", "mtext"})}
# HTML start tags that end SVG and MathML content where they appear in it.
BREAKOUT = frozenset({
    "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em",
    "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing",
    "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong",
    "strike", "sub", "sup", "table", "tt", "u", "ul", "var"})
# Start tags that may come before the body without starting it.
HEAD_TAGS = frozenset({"html", "head", "title", "meta", "link", "style", "script", "base",
                       "noscript", "template", "basefont", "bgsound", "noframes"})
MARKUP_PREFIXES = ("<!--", "<![CDATA[")
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "source", "track", "wbr"})

# Start tags the rewriter must look at: URL attributes, raw text, foreign content, templates,
# where the body begins.
_COUNTED = sorted({*FOREIGN, *INTEGRATION_POINTS["svg"], *INTEGRATION_POINTS["math"],
                   "template"})
_NOTABLE_TAGS = sorted({*NOTICED, *RAWTEXT, *_COUNTED, "script", "style", "plaintext", "body",
                        "frameset"})
_PLAIN_NAME = r"(?:(?!style|background)[^\t\n\f\r />=])"

_Trie = dict[str, "_Trie"]


def _one_of(words: list[str]) -> str:
    """A pattern matching any of `words`, their common starts shared (`a(?:rea|udio)?`):
    tried at every tag, a trie is a third faster than a plain alternation."""
    tree: _Trie = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: _Trie) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        group = "(?:" + "|".join(branches) + ")"
        if "" in node:
            return group + "?"
        return branches[0] if len(branches) == 1 else group

    return "(?:" + pattern(tree) + ")"


# (a quote opens a value to its closing quote or the buffer's end: never an attribute name)
_VALUE = r"""(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:"[^"]*+"?+|'[^']*+'?+|[^\t\n\f\r >"'][^\t\n\f\r >]*+)?+)?+"""
_PLAIN_ATTRIBUTES = (r"(?:[\t\n\f\r /]++|(?!style|background)[^\t\n\f\r />]" + _PLAIN_NAME
                     + "*+" + _VALUE + ")*+")
_END_ATTRIBUTES = r"(?:[\t\n\f\r /]++|[^\t\n\f\r />][^\t\n\f\r />=]*+" + _VALUE + ")*+"
# Text, and the tags nothing is done to, in one match: start tags of other elements whose
# attribute names hold no `style` or `background`, end tags but those of elements whose
# nesting is followed (svg, math, their integration points, template). Used outside SVG
# and MathML only. A tag cut by the buffer's end is not matched.
PLAIN_RUN = re.compile(
    r"(?:[^<]++"
    r"|<(?!" + _one_of(_NOTABLE_TAGS) + _DELIMITER + r")[A-Za-z][^\t\n\f\r />]*+"
    + _PLAIN_ATTRIBUTES + ">"
    r"|</(?!" + _one_of(_COUNTED) + _DELIMITER + r")[A-Za-z][^\t\n\f\r />]*+"
    + _END_ATTRIBUTES + ">)*+",
    re.IGNORECASE)


def end_tag_pattern(name: str) -> re.Pattern[str]:
    """What ends the raw text of element `name`: `</name` then a space, `/` or `>`."""
    return re.compile(f"</{name}{_DELIMITER}", re.IGNORECASE)


def resume_prefix(partial: str) -> str:
    """A short tag start that leaves the tokenizer where the cut `partial` tag left it
    (what an overlong tag passed on in pieces is scanned on from)."""
    opening = "</x" if partial.startswith("</") else "<x"
    match = TAG.match(partial)
    assert match is not None
    items = list(TAG_PART.finditer(partial, match.start("attrs"), match.end("attrs")))
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
