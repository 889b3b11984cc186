"""The image candidates of a `srcset` attribute, by the HTML standard's parsing algorithm.

"Parse a srcset attribute" (HTML, 4.8.4.3.10): candidates are separated by commas, but a
URL keeps its commas (`a.png?x=1,2`) unless they end it; descriptors (`2x`, `480w`,
`100h`) follow it, with parentheses protecting commas. A candidate whose descriptors are
invalid is dropped, as a browser drops it. An archive keeps every candidate, not the one
a browser would choose.
"""

from __future__ import annotations

import re

_WHITESPACE = " \t\n\r\f"
_SEPARATORS = _WHITESPACE + ","
_NON_NEGATIVE_INTEGER = re.compile(r"[0-9]+", re.ASCII)
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def srcset_urls(value: str) -> list[str]:
    """The URLs of the valid candidates, in order (unresolved, as written)."""
    urls: list[str] = []
    position, end = 0, len(value)
    while True:
        while position < end and value[position] in _SEPARATORS:  # the splitting loop
            position += 1
        if position >= end:
            return urls
        start = position
        while position < end and value[position] not in _WHITESPACE:
            position += 1
        url = value[start:position]
        descriptors: list[str] = []
        if url.endswith(","):
            url = url.rstrip(",")  # commas ending the URL separate, and no descriptors follow
        else:
            position = _tokenize_descriptors(value, position, descriptors)
        if url and _valid_descriptors(descriptors):
            urls.append(url)


def _tokenize_descriptors(value: str, position: int, descriptors: list[str]) -> int:
    """The descriptor tokenizer: appends the descriptors, returns the position after them."""
    end = len(value)
    while position < end and value[position] in _WHITESPACE:
        position += 1
    current: list[str] = []
    state = "in descriptor"
    while True:
        char = value[position] if position < end else ""
        if state == "in descriptor":
            if char and char in _WHITESPACE:
                if current:
                    descriptors.append("".join(current))
                    current = []
                state = "after descriptor"
            elif char == ",":
                if current:
                    descriptors.append("".join(current))
                return position + 1
            elif char == "(":
                current.append(char)
                state = "in parens"
            elif not char:
                if current:
                    descriptors.append("".join(current))
                return position
            else:
                current.append(char)
        elif state == "in parens":
            if char == ")":
                current.append(char)
                state = "in descriptor"
            elif not char:
                descriptors.append("".join(current))
                return position
            else:
                current.append(char)
        else:  # after descriptor
            if not char:
                return position
            if char not in _WHITESPACE:
                state = "in descriptor"
                continue  # reconsume the character in the descriptor state
        position += 1


def _valid_descriptors(descriptors: list[str]) -> bool:
    """Whether a browser keeps the candidate: at most one of width or density, both
    positive; a height only beside a width."""
    width = density = height = False
    for descriptor in descriptors:
        number, last = descriptor[:-1], descriptor[-1:]
        if last == "w" and _NON_NEGATIVE_INTEGER.fullmatch(number):
            if width or density or int(number) == 0:
                return False
            width = True
        elif last == "x" and _FLOAT.fullmatch(number):
            if width or density or height or float(number) < 0:
                return False
            density = True
        elif last == "h" and _NON_NEGATIVE_INTEGER.fullmatch(number):
            if height or density or int(number) == 0:
                return False
            height = True
        else:
            return False
    return not (height and not width)
