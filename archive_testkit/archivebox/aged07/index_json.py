"""A snapshot's index.json as 0.7 writes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

from archive_testkit.archivebox.aged07.model import (
    DATA_DIR,
    FAVICON_PROVIDER,
    LATEST_METHODS,
    METHODS_06,
    METHODS_07,
    PlannedResult,
    SnapshotPlan,
)
from archive_testkit.archivebox.formats import django_minute, hashurl, url_extension, without_scheme


def _history_entry(result: PlannedResult) -> dict[str, Any]:
    return {
        "cmd": result.cmd,
        "cmd_version": result.cmd_version,
        "end_ts": result.end.isoformat(),
        "index_texts": result.index_texts,
        "output": result.json_output,
        "pwd": result.pwd,
        "schema": "ArchiveResult",
        "start_ts": result.start.isoformat(),
        "status": result.status,
    }


def _canonical(plan: SnapshotPlan, wget_path: str | None) -> dict[str, Any]:
    domain = urlparse(plan.url).netloc
    canonical: dict[str, Any] = {
        "index_path": "index.html",
        "favicon_path": "favicon.ico",
        "google_favicon_path": FAVICON_PROVIDER.format(domain),
        "wget_path": wget_path,
        "warc_path": "warc/",
        "singlefile_path": "singlefile.html",
        "readability_path": "readability/content.html",
        "mercury_path": "mercury/content.html",
        "htmltotext_path": "htmltotext.txt",
        "pdf_path": "output.pdf",
        "screenshot_path": "screenshot.png",
        "dom_path": "output.html",
        "archive_org_path": f"https://web.archive.org/web/{without_scheme(plan.url)}",
        "git_path": "git/",
        "media_path": "media/",
        "headers_path": "headers.json",
    }
    if plan.static:
        canonical.update(
            {
                "title": urlparse(plan.url).path.rsplit("/", 1)[-1],
                "wget_path": wget_path,
                "pdf_path": wget_path,
                "screenshot_path": wget_path,
                "dom_path": wget_path,
                "singlefile_path": wget_path,
                "readability_path": wget_path,
                "mercury_path": wget_path,
                "htmltotext_path": wget_path,
            }
        )
    return canonical


def _is_archived(plan: SnapshotPlan) -> bool:
    domain = urlparse(plan.url).netloc
    outputs = (domain, "output.pdf", "screenshot.png", "output.html", "media", "singlefile.html")
    names = set(plan.files) | set(plan.empty_dirs)
    return any(name == out or name.startswith(out + "/") for name in names for out in outputs)


def index_document(plan: SnapshotPlan) -> dict[str, Any]:
    parsed = urlparse(plan.url)
    # archive_link() adds an empty list for every extractor of the release that wrote the file.
    methods = METHODS_07 if plan.release == "0.7" else METHODS_06
    history: dict[str, list[dict[str, Any]]] = {method: [] for method in methods}
    for result in plan.results:
        history.setdefault(result.extractor, []).append(_history_entry(result))
    wget_path = plan.main_rel if "wget" in plan.present else None
    latest: dict[str, str | None] = {}
    for method in LATEST_METHODS:
        outputs = [r.json_output for r in reversed(plan.results) if r.extractor == method and r.json_output]
        latest[method] = outputs[0] if outputs else None
    starts = [result.start for result in plan.results]
    updated = plan.json_updated
    basename = parsed.path.rsplit("/", 1)[-1]
    document: dict[str, Any] = {
        "schema": "Link",
        "url": plan.url,
        "title": plan.title or None,
        "timestamp": plan.timestamp,
        "updated": updated.isoformat() if updated else None,
        "tags": plan.tags_json or None,
        "sources": [plan.source],
        "history": history,
        "snapshot_id": str(plan.snapshot_uuid),
        "link_dir": f"{DATA_DIR}/archive/{plan.timestamp}",
        "archive_path": f"archive/{plan.timestamp}",
        "hash": hashurl(plan.url),
        "base_url": without_scheme(plan.url),
        "scheme": parsed.scheme,
        "domain": parsed.netloc,
        "path": parsed.path,
        "basename": basename,
        "extension": url_extension(plan.url),
        "is_static": plan.static,
        "tags_str": (plan.tags_json or "").strip(","),
        "icons": None,
        "bookmarked_date": django_minute(datetime.fromtimestamp(float(plan.timestamp), UTC)),
        "updated_date": django_minute(updated) if updated else None,
        "oldest_archive_date": min(starts).isoformat() if starts else None,
        "newest_archive_date": max(starts).isoformat() if starts else None,
        "is_archived": _is_archived(plan),
        "num_outputs": sum(1 for result in plan.results if result.status == "succeeded"),
        "num_failures": sum(1 for result in plan.results if result.status == "failed"),
        "latest": latest,
        "canonical": _canonical(plan, wget_path),
    }
    if plan.release != "0.7":  # 0.6 had no htmltotext extractor
        document["canonical"].pop("htmltotext_path", None)
    return document
