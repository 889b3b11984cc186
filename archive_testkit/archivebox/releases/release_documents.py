"""The exact index.json shape each ArchiveBox release writes, for generated test collections.

Fingerprints (what `detect_version` keys on): 0.4-0.5 `updated`, no `snapshot_id`;
0.6-0.7 add `snapshot_id`, `tags_str`, `icons`; 0.8.2 adds `snapshot_abid`; 0.8.3 has
`downloaded_at` instead of `updated`; 0.9-dev writes an `archive_results` list and `fs_version`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from archive_pipelines.legacy.versions import V0_4, V0_6, V0_8, V0_8_3, V0_9

# Release a generator can imitate -> the fs_version `detect_version` must report for it.
RELEASE_VERSIONS: Mapping[str, str] = {
    "0.4": V0_4,
    "0.5": V0_4,
    "0.6": V0_6,
    "0.7": V0_6,
    "0.8": V0_8,
    "0.8.2": V0_8,
    "0.8.3": V0_8_3,
    "0.9": V0_9,
}


@dataclass(frozen=True)
class ResultSpec:
    """One extractor run to record in the index."""

    extractor: str
    cmd: tuple[str, ...]
    cmd_version: str
    output: str
    status: str = "succeeded"
    offset_seconds: float = 0.0  # start time after the bookmark


@dataclass(frozen=True)
class SnapshotSpec:
    """Everything a generated snapshot's index.json says."""

    url: str
    timestamp: str
    title: str
    tags: tuple[str, ...]
    release: str
    snapshot_id: str
    abid: str
    crawl_id: str
    results: Sequence[ResultSpec] = field(default_factory=tuple)

    @cached_property
    def bookmarked(self) -> datetime:
        return datetime.fromtimestamp(float(".".join(self.timestamp.split(".")[:2])), UTC)


def index_document(spec: SnapshotSpec) -> dict[str, Any]:
    """The index.json object `spec.release` would write."""
    if spec.release not in RELEASE_VERSIONS:
        raise ValueError(f"no index.json shape for release {spec.release!r}")
    if spec.release == "0.9":
        return _dev_document(spec)
    return _link_document(spec)


def _stamp(value: datetime, release: str) -> str:
    # 0.4-0.5 wrote naive local ISO times (UTC here); later releases write aware ones.
    if release in ("0.4", "0.5"):
        return value.replace(tzinfo=None).isoformat()
    return value.isoformat()


def _minute(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def result_times(spec: SnapshotSpec, result: ResultSpec) -> tuple[datetime, datetime]:
    """When a generated result started and ended (UTC)."""
    start = spec.bookmarked + timedelta(seconds=60 + result.offset_seconds)
    return start, start + timedelta(seconds=2.5)


def _result(spec: SnapshotSpec, result: ResultSpec) -> dict[str, Any]:
    start, end = result_times(spec, result)
    return {
        "schema": "ArchiveResult",
        "cmd": list(result.cmd),
        "pwd": f"/data/archive/{spec.timestamp}",
        "cmd_version": result.cmd_version,
        "output": result.output,
        "status": result.status,
        "start_ts": _stamp(start, spec.release),
        "end_ts": _stamp(end, spec.release),
        "index_texts": None,
    }


def _link_document(spec: SnapshotSpec) -> dict[str, Any]:
    parts = urlsplit(spec.url)
    base_url = spec.url.split("://", 1)[1]
    history: dict[str, list[dict[str, Any]]] = {}
    for result in spec.results:
        history.setdefault(result.extractor, []).append(_result(spec, result))
    last = spec.bookmarked + timedelta(seconds=120)
    tags = ",".join(spec.tags) or None
    outputs = {r.extractor: r.output for r in spec.results if r.status == "succeeded"}
    doc: dict[str, Any] = {
        "schema": "Link",
        "url": spec.url,
        "timestamp": spec.timestamp,
        "title": spec.title,
        "tags": tags,
        "sources": [f"/data/sources/{int(spec.bookmarked.timestamp())}-import.txt"],
        "history": history,
    }
    if spec.release == "0.8.3":
        doc["downloaded_at"] = last.isoformat()
    else:
        doc["updated"] = _stamp(last, spec.release)
    if spec.release not in ("0.4", "0.5"):
        doc["snapshot_id"] = spec.snapshot_id
    if spec.release in ("0.8", "0.8.2", "0.8.3"):
        doc["snapshot_abid"] = spec.abid
    doc.update(
        {
            "base_url": base_url,
            "domain": parts.netloc,
            "basename": parts.path.rstrip("/").rsplit("/", 1)[-1],
            "extension": "",
            "path": parts.path,
            "scheme": parts.scheme,
            "bookmarked_date": _minute(spec.bookmarked),
            "updated_date": _minute(last),
            "oldest_archive_date": _minute(spec.bookmarked),
            "newest_archive_date": _minute(last),
            "is_static": False,
            "is_archived": True,
            "num_outputs": len(outputs),
            "num_failures": sum(1 for r in spec.results if r.status == "failed"),
            "latest": outputs,
            "hash": spec.snapshot_id.replace("-", "")[:20],
            "archive_path": f"archive/{spec.timestamp}",
            "link_dir": f"/data/archive/{spec.timestamp}",
            "canonical": _canonical(spec, base_url, outputs),
        }
    )
    if spec.release not in ("0.4", "0.5"):
        doc["tags_str"] = tags or ""
        doc["icons"] = None
    return doc


def _canonical(spec: SnapshotSpec, base_url: str, outputs: Mapping[str, str]) -> dict[str, str]:
    return {
        "index_path": "index.html",
        "favicon_path": "favicon.ico",
        "google_favicon_path": f"https://www.google.com/s2/favicons?domain={urlsplit(spec.url).netloc}",
        "wget_path": outputs.get("wget", ""),
        "warc_path": "warc/",
        "singlefile_path": "singlefile.html",
        "readability_path": "readability/content.html",
        "mercury_path": "mercury/content.html",
        "htmltotext_path": "htmltotext.txt",
        "pdf_path": "output.pdf",
        "screenshot_path": "screenshot.png",
        "dom_path": "output.html",
        "archive_org_path": f"https://web.archive.org/web/{base_url}",
        "git_path": "git/",
        "media_path": "media/",
        "headers_path": "headers.json",
    }


def _dev_document(spec: SnapshotSpec) -> dict[str, Any]:
    results = [{"extractor": r.extractor, **_result(spec, r)} for r in spec.results]
    for entry in results:
        del entry["schema"], entry["index_texts"]
    return {
        "id": spec.snapshot_id,
        "url": spec.url,
        "timestamp": spec.timestamp,
        "title": spec.title,
        "tags": ",".join(spec.tags),
        "crawl_id": spec.crawl_id,
        "fs_version": "0.9.0",
        "bookmarked_at": spec.bookmarked.isoformat(),
        "created_at": spec.bookmarked.isoformat(),
        "downloaded_at": (spec.bookmarked + timedelta(seconds=120)).isoformat(),
        "archive_results": results,
    }
