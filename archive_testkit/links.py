"""Relative links in archived HTML: which ones a browser opening the files from disk can follow.

A browser resolves `../css/site.css` on a `file://` URL textually: `..` removes the previous
path segment of the URL, whatever that segment is on disk. After adoption a snapshot folder
can be a tree of symlinks into a content store, where following a symlink first and then `..`
would land somewhere else; these helpers therefore normalise paths with `os.path.normpath`
and only then ask the filesystem whether the target exists.

Only a/link/img/script/iframe/source `href`/`src` values count. A link is relative when it
has no scheme (`https:`, `mailto:`, `data:`, `javascript:`, ...) and does not start with `//`,
`/` (root-relative: on `file://` it names the filesystem root, never the archive) or `#`.
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

_TAGS = frozenset({"a", "link", "img", "script", "iframe", "source"})
_ATTRS = frozenset({"href", "src"})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _TAGS:
            return
        for name, value in attrs:
            if name in _ATTRS and value is not None:
                self.values.append(value)

    handle_startendtag = handle_starttag


def relative_link(value: str) -> str | None:
    """The path part of `value` when it is a relative link (query, fragment dropped, unquoted)."""
    value = value.strip()
    if not value or value.startswith(("#", "/")) or _SCHEME.match(value):
        return None
    for mark in ("#", "?"):
        value = value.split(mark, 1)[0]
    if not value:
        return None  # only a query: the page itself
    return unquote(value)


def relative_links(html_path: Path) -> list[str]:
    """The relative href/src values of a/link/img/script/iframe/source in `html_path`, in order."""
    parser = _LinkParser()
    parser.feed(Path(html_path).read_bytes().decode("utf-8", errors="replace"))
    parser.close()
    out = []
    for value in parser.values:
        link = relative_link(value)
        if link is not None:
            out.append(link)
    return out


def _target(folder: str, html_rel: str, link: str) -> str:
    return os.path.normpath(os.path.join(folder, os.path.dirname(html_rel), link))


def link_resolves(folder: Path, html_rel: str, link: str) -> bool:
    """True when `link` in `folder/html_rel` names something that exists (textual `..`).

    A link ending in `/` must name a directory.
    """
    target = _target(str(folder), html_rel, link)
    if link.endswith("/"):
        return os.path.isdir(target)
    return os.path.exists(target)


def stays_inside(html_rel: str, link: str) -> bool:
    """True when `link` from `html_rel` (relative to a folder) normalises to a path inside it."""
    joined = os.path.normpath(os.path.join(os.path.dirname(html_rel), link))
    if os.path.isabs(joined):
        return False
    return joined != ".." and not joined.startswith(".." + os.sep)


def html_files(folder: Path) -> list[str]:
    """Every `*.html` below `folder` (relative, `/`-separated), through symlinked dirs and files.

    Two symlinks to one directory are both walked (each is a distinct place for a browser);
    a directory that is its own ancestor (a symlink cycle) is not entered again.
    """
    out: list[str] = []

    def visit(path: str, rel: str, ancestors: frozenset[str]) -> None:
        real = os.path.realpath(path)
        if real in ancestors:
            return
        ancestors = ancestors | {real}
        try:
            with os.scandir(path) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=True):
                visit(entry.path, f"{rel}{entry.name}/", ancestors)
            elif entry.name.lower().endswith(".html") and entry.is_file(follow_symlinks=True):
                out.append(f"{rel}{entry.name}")

    visit(str(folder), "", frozenset())
    return sorted(out)


def all_links(folder: Path) -> set[tuple[str, str]]:
    """(html path relative to `folder`, relative link) for every relative link of every page."""
    folder = Path(folder)
    return {(rel, link) for rel in html_files(folder) for link in relative_links(folder / rel)}


def resolving_links(folder: Path) -> set[tuple[str, str]]:
    """The (html path relative to `folder`, link) pairs whose target exists, for all pages below."""
    folder = Path(folder)
    return {(rel, link) for rel, link in all_links(folder) if link_resolves(folder, rel, link)}
