"""Rebuild view links from the catalog (optionally cleaning first, optionally some views)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from archive_pipelines.captures.views import ViewCapture, capture_links
from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import Counts, MetadataValue
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.file_workers import FileLink
from archive_pipelines.storage.linking import ensure_links
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.snapshot_places import iter_snapshot_files
from archive_pipelines.views import ViewSet, view_dir


@dataclass
class RebuildReport(Counts):
    """Snapshots and files whose links were made, and the links by what was done to them."""

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

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {"snapshots": self.snapshots, "files": self.files, "links": self.links,
                "links_created": self.links_created, "links_ok": self.links_ok,
                "links_fixed": self.links_fixed, "link_conflicts": self.link_conflicts,
                "links_removed": self.links_removed}

    def log_lines(self) -> list[str]:
        """What a run log says: the links made for how many snapshots, by what was done."""
        line = (f"{self.links:,} view links for {self.files:,} files of {self.snapshots:,} "
                f"snapshot(s): {self.links_created:,} created, {self.links_fixed:,} fixed, "
                f"{self.links_ok:,} already right")
        if self.link_conflicts:
            line += f", {self.link_conflicts:,} conflict(s) left as they were"
        if self.links_removed:
            line += f"; {self.links_removed:,} removed first (clean)"
        return [line]
    def as_day_metadata(self) -> dict[str, MetadataValue]:
        """A one-day rebuild's figures: the day's (`day_`: every link of the day's snapshots
        was checked; those right now, those left in conflict) and what this run changed."""
        return {"day_snapshots": self.snapshots, "day_files": self.files,
                "day_links": self.links, "day_link_conflicts": self.link_conflicts,
                "run_links_created": self.links_created, "run_links_fixed": self.links_fixed,
                "run_links_already_right": self.links_ok}


def rebuild_views(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                  only: tuple[str, ...] | None = None, clean: bool = False,
                  created_between: tuple[datetime, datetime] | None = None,
                  progress: Callable[[int], object] | None = None) -> RebuildReport:
    """Create-if-wrong every link of the views (`only` those of them); `clean` removes all their links first.
    `progress` is called with the number of links done.

    `created_between` (start, end) confines it to the snapshots created then (a day).
    `clean` only applies to a full rebuild (no `created_between`): removing one day's links
    would need the catalog to say which links are that day's, which is what we rebuild.
    """
    chosen = only or views.enabled
    report = RebuildReport()
    farm = views.farm
    if clean and created_between is None:
        for view in chosen:
            links = [link for link, _target in farm.iter_links(view)]
            removed = work.map_io(lambda link: farm.remove_link(link, prune=False), links)
            report.links_removed += sum(removed)
            farm.remove_empty_dirs(view)
    # Only the file view has a link per file; a chosen view other than it gets each
    # snapshot's folder link (`views.file_view`).
    home = views.file_view
    files_too = home in chosen
    pending: list[tuple[str, str]] = []
    folders: list[tuple[str, str]] = []
    shas: set[str] = set()
    with catalog.reading() as tx:
        for place, files, own_links in iter_snapshot_files(tx, created_between):
            if home is None:
                break
            report.snapshots += 1
            report.files += len(files)
            folders.extend(link for link in views.folder_links(place)
                           if link[0].partition("/")[0] in chosen)
            if files_too:
                folder = view_dir(home, place)
                for _extractor, rel, sha in files:
                    shas.add(sha)
                    pending.append((f"{folder}/{rel}", sha))
                for rel, target in own_links:  # symlinks and empty folders it had
                    report.links_created += farm.ensure_entry(f"{folder}/{rel}", target) == "created"
            if len(pending) + len(folders) >= LINKS_PER_ROUND:
                _link_round(primary, views, work, shas=shas, links=pending, folders=folders, report=report,
                            progress=progress)
                pending, folders, shas = [], [], set()
    if pending or folders:
        _link_round(primary, views, work, shas=shas, links=pending, folders=folders, report=report,
                    progress=progress)
    if views.crawl and created_between is None:  # crawled pages (`captures.views`)
        with catalog.reading() as tx:
            rows = tx.captures.view_captures()
        page_links, folder_links = capture_links(views.crawl, (ViewCapture(*row) for row in rows))
        pages = [(link, sha, ext) for link, (sha, ext) in page_links.items()
                 if link.partition("/")[0] in chosen]
        linked_folders = [(link, target) for link, target in folder_links.items()
                          if link.partition("/")[0] in chosen]
        _link_round(primary, views, work, shas={sha for _link, sha, _ext in pages}, links=pages,
                    folders=linked_folders, report=report, progress=progress)
    return report


LINKS_PER_ROUND = 4096


def _link_round(primary: PrimaryStore, views: ViewSet, work: FileWork, *, shas: set[str],
                links: Sequence[FileLink],
                folders: list[tuple[str, str]], report: RebuildReport,
                progress: Callable[[int], object] | None) -> None:
    outcomes = ensure_links(primary, views, work, links=links, aliases=shas, folder_links=folders)
    report.links_created += outcomes["created"]
    report.links_ok += outcomes["ok"]
    report.links_fixed += outcomes["fixed"]
    report.link_conflicts += outcomes["conflict"]
    if progress:
        progress(len(links) + len(folders))
