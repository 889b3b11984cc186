"""One extractor run as recorded by ArchiveBox (`ArchiveResult`), parsed from untrusted data."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from archive_pipelines.legacy.fields import (
    format_datetime,
    id_text,
    optional_str,
    parse_datetime,
    shown,
)

# Extractor names as ArchiveBox writes them (catalog metadata, safe as folder names too).
_EXTRACTOR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Extractors whose `output` is text (a title, a URL), not a path inside the snapshot folder.
NON_PATH_EXTRACTORS = frozenset({"title", "archive_org"})
SUCCEEDED = "succeeded"
_BEFORE_ALL = datetime.min.replace(tzinfo=UTC)

Warn = Callable[[str], None]


@dataclass(frozen=True)
class LegacyResult:
    """An ArchiveResult: the command, where it ran, what it wrote, and how it went.

    `raw` is the original dict (kept out of comparisons) so a write-back keeps unknown keys.
    """

    cmd: tuple[str, ...] = ()
    cmd_version: str | None = None
    pwd: str | None = None
    output: str | None = None
    status: str = "unknown"
    start_ts: datetime | None = None
    end_ts: datetime | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # ArchiveBox's own ids for the run, as it had them (kept, never compared).
    archivebox_id: str | None = field(default=None, compare=False)
    archivebox_uuid: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result in index.json's shape, over the original dict's unknown keys."""
        data = dict(self.raw)
        data.update(
            cmd=list(self.cmd),
            cmd_version=self.cmd_version,
            pwd=self.pwd,
            output=self.output,
            status=self.status,
            start_ts=format_datetime(self.start_ts),
            end_ts=format_datetime(self.end_ts),
        )
        return data


def is_extractor_name(value: object) -> bool:
    """True for names safe as a folder name (`wget`, `archive_org`, `singlefile`)."""
    return isinstance(value, str) and _EXTRACTOR_RE.fullmatch(value) is not None


def unsafe_output_reason(output: str, *, extractor: str, status: str) -> str | None:
    """Why `output` must not be kept as a path, or None if it is harmless.

    A NUL is never kept. A succeeded result of a file-writing extractor names a path inside
    the snapshot folder, so absolute paths and `..` components are refused; failed results
    and text extractors carry messages or URLs, which are only metadata.
    """
    if "\x00" in output:
        return "contains a NUL byte"
    if extractor in NON_PATH_EXTRACTORS or status != SUCCEEDED:
        return None
    if output.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[/\\]", output):
        return "is an absolute path"
    if ".." in re.split(r"[/\\]", output):
        return "leaves the snapshot folder (..)"
    return None


def parse_cmd(value: object) -> tuple[str, ...] | None:
    """The argv list from a JSON list or JSON text (sqlite stores it as text); None if invalid."""
    if value is None:
        return ()
    if isinstance(value, str):
        if not value.strip():
            return ()
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str))


def parse_result(data: object, *, extractor: str, where: str, warn: Warn) -> LegacyResult | None:
    """A `LegacyResult` from one dict of index.json or a database row; None (warned) if unusable.

    Wrong-typed fields become None/empty with a warning; the result itself is kept.
    """
    if not isinstance(data, Mapping):
        warn(f"{where}: result is {type(data).__name__}, not an object; skipped")
        return None
    status = data.get("status")
    status_text = status.strip().lower() if isinstance(status, str) else ""
    status_text = status_text or "unknown"
    cmd = parse_cmd(data.get("cmd"))
    if cmd is None:
        warn(f"{where}: cmd is not a list of strings; dropped")
        cmd = ()
    output: str | None = None
    raw_output = data.get("output")
    if isinstance(raw_output, str):
        reason = unsafe_output_reason(raw_output, extractor=extractor, status=status_text)
        if reason is None:
            output = raw_output
        else:
            warn(f"{where}: output {shown(raw_output)} {reason}; dropped, never followed")
    elif raw_output is not None:
        warn(f"{where}: output is {type(raw_output).__name__}, not a string; dropped")
    times = {}
    for key in ("start_ts", "end_ts"):
        value = data.get(key)
        times[key] = parse_datetime(value)
        if value not in (None, "") and times[key] is None:
            warn(f"{where}: {key} {shown(value)} is not a date; dropped")
    return LegacyResult(
        cmd=cmd,
        cmd_version=optional_str(data.get("cmd_version")),
        pwd=optional_str(data.get("pwd")),
        output=output,
        status=status_text,
        start_ts=times["start_ts"],
        end_ts=times["end_ts"],
        raw=dict(data),
        archivebox_id=_short_id(data.get("id"), 64),
        archivebox_uuid=_short_id(id_text(data.get("uuid")), 36),
    )


def _short_id(value: object, limit: int) -> str | None:
    text = id_text(value)
    return text if text is not None and len(text) <= limit else None


def sort_key(result: LegacyResult) -> datetime:
    """Chronological order, results without a start time first."""
    return result.start_ts or _BEFORE_ALL
