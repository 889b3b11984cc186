"""Rebuild view links from the catalog (optionally cleaning first, optionally some views)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Select

from archive_pipelines.catalog.places import iter_snapshot_files
from archive_pipelines.storage.context import Storage
from archive_pipelines.views import view_path


@dataclass
class RebuildReport:
    snapshots: int = 0
    files: int = 0
    links_created: int = 0
    links_ok: int = 0
    links_fixed: int = 0
    link_conflicts: int = 0
    links_removed: int = 0

    @property
    def links(self) -> int:
        return self.links_created + self.links_ok + self.links_fixed


def rebuild_views(storage: Storage, *, views: tuple[str, ...] | None = None, clean: bool = False,
                  snapshot_query: Select | None = None,
                  progress: Callable[[int], None] | None = None) -> RebuildReport:
    """Create-if-wrong every link of the chosen views; `clean` removes all their links first.

    `clean` only applies to a full rebuild (no `snapshot_query`): removing one day's links
    would need the catalog to say which links are that day's, which is what we rebuild.
    """
    chosen = views or storage.views
    report = RebuildReport()
    farm = storage.farm
    if clean and snapshot_query is None:
        for view in chosen:
            for link, _target in farm.iter_links(view):
                if farm.remove_link(link, prune=False):
                    report.links_removed += 1
            farm.remove_empty_dirs(view)
    aliased: set[str] = set()
    with storage.read_session() as session:
        for place, files in iter_snapshot_files(session, snapshot_query):
            report.snapshots += 1
            for extractor, rel, sha in files:
                report.files += 1
                if sha not in aliased:
                    farm.ensure_alias(sha, storage.primary.local_path(sha))
                    aliased.add(sha)
                for view in chosen:
                    outcome = farm.ensure_link(view_path(view, place, extractor, rel), sha)
                    if outcome == "created":
                        report.links_created += 1
                    elif outcome == "ok":
                        report.links_ok += 1
                    elif outcome == "fixed":
                        report.links_fixed += 1
                    else:
                        report.link_conflicts += 1
            if progress:
                progress(len(files))
    return report
