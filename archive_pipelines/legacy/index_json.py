"""Reading a legacy `archive/<timestamp>/index.json` defensively, and writing a merged one back."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from archive_pipelines.legacy.archive_result import LegacyResult, Warn, is_extractor_name, parse_result
from archive_pipelines.legacy.fields import (
    check_url,
    coerce_timestamp,
    looks_like_timestamp,
    optional_str,
    parse_datetime,
    shown,
    split_tags,
    unique_sorted,
)
from archive_pipelines.legacy.versions import detect_version

INDEX_FILENAME = "index.json"
MAX_INDEX_BYTES = 32 * 1024 * 1024

_BOOKMARKED_KEYS = ("bookmarked_at", "timestamp", "bookmarked_date", "added")
_CREATED_KEYS = ("created_at", "added", "bookmarked_at", "timestamp", "bookmarked_date")
_UPDATED_KEYS = ("downloaded_at", "updated", "modified_at", "updated_at", "updated_date")


@dataclass(frozen=True)
class InvalidFolder:
    """A snapshot folder that cannot be adopted, with a short `reason` code and a detail line.

    Reasons: missing_index, not_a_file, too_large, unreadable, not_json, not_object,
    bad_url, bad_timestamp.
    """

    folder: Path
    reason: str
    detail: str


@dataclass(frozen=True)
class LegacyIndex:
    """A validated index.json. Dates are UTC-aware; `raw` is the parsed original."""

    folder: Path
    url: str
    timestamp: str
    title: str | None
    tags: tuple[str, ...]
    bookmarked: datetime | None
    created: datetime | None
    updated: datetime | None
    snapshot_id: str | None
    abid: str | None
    crawl_id: str | None
    fs_version: str
    results: Mapping[str, tuple[LegacyResult, ...]]
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


def load_index(folder: Path, *, max_bytes: int = MAX_INDEX_BYTES) -> LegacyIndex | InvalidFolder:
    """Parse `folder/index.json`; never raises for bad content, never follows a symlink."""
    data = _read_json(folder, max_bytes)
    if isinstance(data, InvalidFolder):
        return data
    if not isinstance(data, dict):
        return InvalidFolder(folder, "not_object", f"index.json holds a {type(data).__name__}")
    return _build(folder, data)


def read_index_url(folder: Path) -> str | None:
    """The url a folder's index.json names, or None (absent, unreadable, not valid)."""
    loaded = load_index(folder)
    return loaded.url if isinstance(loaded, LegacyIndex) else None


def _read_json(folder: Path, max_bytes: int) -> object:
    path = folder / INDEX_FILENAME
    try:
        info = path.lstat()
    except FileNotFoundError:
        return InvalidFolder(folder, "missing_index", "no index.json")
    except OSError as exc:
        return InvalidFolder(folder, "unreadable", f"index.json: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        return InvalidFolder(folder, "not_a_file", "index.json is not a regular file")
    # O_NOFOLLOW/O_NONBLOCK: a file swapped for a symlink or FIFO since lstat fails or returns.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return InvalidFolder(folder, "unreadable", f"index.json: {exc.strerror or exc}")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return InvalidFolder(folder, "not_a_file", "index.json is not a regular file")
        content = handle.read(max_bytes + 1)
    if len(content) > max_bytes:
        return InvalidFolder(folder, "too_large", f"index.json is larger than {max_bytes} bytes")
    try:
        return json.loads(content)
    except (ValueError, RecursionError) as exc:
        return InvalidFolder(folder, "not_json", f"index.json: {str(exc)[:200]}")


def _build(folder: Path, data: dict[str, Any]) -> LegacyIndex | InvalidFolder:
    warnings: list[str] = []
    warn = warnings.append
    url, problem = check_url(data.get("url"))
    if url is None:
        return InvalidFolder(folder, "bad_url", problem or "bad url")
    timestamp = coerce_timestamp(data.get("timestamp"))
    if timestamp is None:
        if not looks_like_timestamp(folder.name):
            return InvalidFolder(folder, "bad_timestamp", "no usable timestamp in index.json or folder name")
        warn(f"timestamp {shown(data.get('timestamp'))} unusable; taken from the folder name")
        timestamp = folder.name
    # Dates read the timestamp without ArchiveBox's `.N` de-duplication suffix.
    dates = {**data, "timestamp": ".".join(timestamp.split(".")[:2])}
    title = data.get("title")
    if title is not None and not isinstance(title, str):
        warn(f"title is {type(title).__name__}, not a string; dropped")
        title = None
    return LegacyIndex(
        folder=folder,
        url=url,
        timestamp=timestamp,
        title=(title.strip() or None) if isinstance(title, str) else None,
        tags=_tags(data, warn),
        bookmarked=_first_date(dates, _BOOKMARKED_KEYS, warn),
        created=_first_date(dates, _CREATED_KEYS, warn),
        updated=_first_date(dates, _UPDATED_KEYS, warn),
        snapshot_id=optional_str(data.get("snapshot_id")) or optional_str(data.get("id")),
        abid=optional_str(data.get("snapshot_abid")) or optional_str(data.get("abid")),
        crawl_id=optional_str(data.get("crawl_id")),
        fs_version=detect_version(data),
        results=_results(data, warn),
        warnings=tuple(warnings),
        raw=data,
    )


def _tags(data: Mapping[str, Any], warn: Warn) -> tuple[str, ...]:
    found: list[str] = []
    for key in ("tags", "tags_str"):
        tags = split_tags(data.get(key))
        if tags is None:
            warn(f"{key} is {type(data.get(key)).__name__}, not text or a list; dropped")
        else:
            found.extend(tags)
    return unique_sorted(found)


def _first_date(data: Mapping[str, Any], keys: Iterable[str], warn: Warn) -> datetime | None:
    for key in keys:
        value = data.get(key)
        if value in (None, ""):
            continue
        parsed = parse_datetime(value)
        if parsed is not None:
            return parsed
        warn(f"{key} {shown(value)} is not a date; ignored")
    return None


def _results(data: Mapping[str, Any], warn: Warn) -> dict[str, tuple[LegacyResult, ...]]:
    found: dict[str, list[LegacyResult]] = {}

    def add(extractor: object, entry: object, where: str) -> None:
        if not is_extractor_name(extractor):
            warn(f"{where}: extractor name {shown(extractor)} is not usable; skipped")
            return
        assert isinstance(extractor, str)
        result = parse_result(entry, extractor=extractor, where=where, warn=warn)
        if result is not None:
            found.setdefault(extractor, []).append(result)

    history = data.get("history")
    if isinstance(history, dict):
        for extractor, entries in history.items():
            if not isinstance(entries, list):
                warn(f"history.{extractor!s:.64} is {type(entries).__name__}, not a list; skipped")
                continue
            for position, entry in enumerate(entries):
                add(extractor, entry, f"history.{extractor!s:.64}[{position}]")
    elif history is not None:
        warn(f"history is {type(history).__name__}, not an object; ignored")

    archive_results = data.get("archive_results")
    if isinstance(archive_results, list):
        for position, entry in enumerate(archive_results):
            where = f"archive_results[{position}]"
            if not isinstance(entry, dict):
                warn(f"{where}: result is {type(entry).__name__}, not an object; skipped")
                continue
            add(entry.get("extractor", entry.get("plugin")), entry, where)
    elif archive_results is not None:
        warn(f"archive_results is {type(archive_results).__name__}, not a list; ignored")
    return {extractor: tuple(results) for extractor, results in found.items()}


def dump_index(
    index: LegacyIndex,
    *,
    title: str | None,
    tags: Sequence[str],
    results: Mapping[str, Sequence[LegacyResult]],
    fs_version: str | None = None,
) -> bytes:
    """index.json bytes for merged values, keeping the original's unknown keys and shapes.

    Results go back into whichever container the original used (`history` dict and/or
    `archive_results` list; `history` when it had neither). Tags keep their original form
    (list or comma text). `fs_version` is written only when given. ASCII-escaped with a
    4-space indent, as ArchiveBox writes it.
    """
    out: dict[str, Any] = dict(index.raw)
    out["url"] = index.url
    out["timestamp"] = index.timestamp
    out["title"] = title
    tag_list = list(unique_sorted(tags))
    if isinstance(out.get("tags"), list):
        out["tags"] = tag_list
    else:
        out["tags"] = ",".join(tag_list) if tag_list or out.get("tags") is not None else None
    if "tags_str" in out:
        out["tags_str"] = ",".join(tag_list)
    uses_list = isinstance(out.get("archive_results"), list)
    if isinstance(out.get("history"), dict) or not uses_list:
        out["history"] = {name: [r.to_dict() for r in items] for name, items in results.items()}
    if uses_list:
        out["archive_results"] = [
            {**result.to_dict(), "extractor": name} for name, items in results.items() for result in items
        ]
    if fs_version is not None:
        out["fs_version"] = fs_version
    return (json.dumps(out, indent=4, ensure_ascii=True) + "\n").encode("ascii")
