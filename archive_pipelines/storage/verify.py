"""Verify storage against the catalog, and repair what is repairable.

Checks: snapshots an interrupted ingest left incomplete (a problem until `ingest --resume`
finishes them), blob files missing (or corrupt, with `deep`), the views' aliases of the blob
files missing or stale (each blob's plain alias, and the alias with an extension that a file
link points at: `views.aliases`), view links missing / pointing elsewhere / broken / blocked
by a real file, orphan links, orphan blobs (ref_count 0), untracked blob files, and ref_count
drift (a mark pass that counts references).

Links made before the aliases had extensions point at the plain alias: they are `wrong_links`,
and `--fix` points them at the alias with their name's extension, which it makes.
A referenced blob is never deleted.

An untracked blob file is a problem (an interrupted write, or a file put into the store by
hand: `gc --untracked` collects it after the grace), except a crawled body that crawl records
not yet ingested name, or such a segment's own copy (`crawl_pending`: tracked once
`ingest-crawl` runs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from archive_pipelines.blobstore import BlobStore, LocalBlobStore, sha256_file
from archive_pipelines.captures.pending import pending_body_hashes
from archive_pipelines.captures.segment_source import segment_source
from archive_pipelines.captures.views import ViewCapture, capture_links
from archive_pipelines.catalog import BlobRow, Catalog, SnapshotEntries, SnapshotFiles, utcnow
from archive_pipelines.counts import Counts, MetadataValue
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.snapshot_ingest import resume_command
from archive_pipelines.storage.snapshot_places import iter_snapshot_files
from archive_pipelines.storage.untracked import untracked_hashes
from archive_pipelines.views import LinkState, SnapshotPlace, ViewFarm, ViewSet, view_dir
from archive_pipelines.views.paths import alias_extension

KINDS = ("incomplete_snapshots",
         "missing_blob_files", "corrupt_blob_files", "missing_aliases", "missing_links", "wrong_links",
         "broken_links", "conflict_links", "orphan_links", "orphan_blobs",
         "untracked_blob_files", "crawl_pending", "refcount_drift")


# The problems of each kind a report names (all are counted); None: every one.
EXAMPLES = 10
# Kinds whose examples are links: paths under archive/.
LINK_KINDS = ("missing_links", "wrong_links", "broken_links", "conflict_links", "orphan_links")


@dataclass
class VerifyReport(Counts):
    """What verify found: `found` per kind, `examples` of each (the blob's sha256, the link's
    path under archive/, the snapshot), up to `example_limit` per kind (None: all)."""

    blobs_checked: int = 0  # referenced blobs (an unreferenced one is gc's)
    files_checked: int = 0
    links_checked: int = 0
    found: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    fixed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    examples: dict[str, list[str]] = field(default_factory=dict)
    example_limit: int | None = EXAMPLES
    views_checked: bool = True  # False on an S3 primary: it has no symlink views

    def note(self, kind: str, example: str) -> None:
        self.found[kind] += 1
        samples = self.examples.setdefault(kind, [])
        if self.example_limit is None or len(samples) < self.example_limit:
            samples.append(example)

    @property
    def problems(self) -> int:
        """Problems found and not fixed. Not problems: orphan blobs (gc's work) and crawled
        bodies whose records are not ingested yet (`crawl_pending`)."""
        return sum(self.found[k] - self.fixed[k] for k in KINDS
                   if k not in ("orphan_blobs", "crawl_pending"))

    def as_metadata(self) -> dict[str, MetadataValue]:
        """What was checked, what is left, each kind found, and each kind fixed (if any)."""
        return {"blobs_checked": self.blobs_checked, "links_checked": self.links_checked,
                "problems_left": self.problems,
                **{f"found_{k}": self.found[k] for k in KINDS},
                **{f"fixed_{k}": self.fixed[k] for k in KINDS if self.fixed[k]}}

    def log_lines(self) -> list[str]:
        """What a run log says: "healthy" only when no problem is left, else how many of
        each kind (with examples); then what was fixed and what is not a problem."""
        checked = (f"{self.blobs_checked:,} referenced blobs and {self.links_checked:,} view "
                   "links checked" if self.views_checked else
                   f"{self.blobs_checked:,} referenced blobs checked; no symlink views (S3 primary)")
        left = {k: self.found[k] - self.fixed[k] for k in KINDS
                if k not in ("orphan_blobs", "crawl_pending") and self.found[k] - self.fixed[k]}
        if not left:
            lines = [f"healthy: {checked}"]
        else:
            kinds = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in left.items())
            lines = [f"{self.problems:,} problem(s): {kinds} ({checked})"]
            lines += [f"  {k.replace('_', ' ')}, e.g. {', '.join(self.examples.get(k, [])[:3])}"
                      for k in left if self.examples.get(k)]
        fixed = {k: n for k, n in self.fixed.items() if n}
        if fixed:
            lines.append("fixed: " + ", ".join(f"{n:,} {k.replace('_', ' ')}"
                                               for k, n in fixed.items()))
        if self.found["orphan_blobs"]:
            lines.append(f"{self.found['orphan_blobs']:,} unreferenced blob(s): not a problem, "
                         "gc removes them after the grace period")
        if self.found["crawl_pending"]:
            lines.append(f"{self.found['crawl_pending']:,} crawled bod(ies) whose records are "
                         "not ingested yet: not a problem")
        return lines


def verify_storage(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *,
                   fix: bool = False, vacuum: bool = False, deep: bool = False, scan_store: bool = True,
                   data_dir: Path | None = None, examples: int | None = EXAMPLES,
                   replicas: Sequence[BlobStore] = (),
                   progress: Callable[[str, int], object] | None = None) -> VerifyReport:
    """Check everything; `fix` repairs links and ref counts; `vacuum` removes orphan links.
    `data_dir`: where the crawl's segments and journals are, whose bodies are `crawl_pending`
    rather than untracked (without it every untracked file is a problem). `examples`: how
    many problems of each kind to name (None: all). `replicas`: the stores `fix` restores
    an S3 primary's missing or corrupt blobs from (`storage.verify_bucket`)."""
    report = VerifyReport(example_limit=examples)
    _check_incomplete(catalog, report)
    _check_refcounts(catalog, report, fix=fix)
    if primary.root is None:  # an S3 primary: one listing of the bucket, and no views
        report.views_checked = False
        _check_bucket(catalog, primary, report, deep=deep, fix=fix, replicas=replicas,
                      scan_store=scan_store, data_dir=data_dir, progress=progress)
        with catalog.reading() as tx:
            report.found["orphan_blobs"] = tx.blobs.count_unreferenced()
        return report
    missing = _check_blob_files(catalog, primary, views, report=report, deep=deep, fix=fix, progress=progress)
    file_links = _FileLinks(views.farm, primary, report, fix=fix, missing_blobs=missing)
    _check_links(catalog, views, report, file_links=file_links, vacuum=vacuum, progress=progress)
    with catalog.reading() as tx:
        report.found["orphan_blobs"] = tx.blobs.count_unreferenced()
    if scan_store:
        _check_untracked(catalog, primary, report, data_dir=data_dir)
    return report


def _check_incomplete(catalog: Catalog, report: VerifyReport) -> None:
    """Snapshots an ingest is filling or an interrupted one left partial: a problem until
    their ingest finishes, which only it can do (its folder is the source)."""
    with catalog.reading() as tx:
        count = tx.snapshots.count_incomplete()
        shown = tx.snapshots.incomplete_snapshots(limit=report.example_limit)
    for state in shown:
        report.note("incomplete_snapshots", f"{state.snapshot_id} ({state.url} @ "
                    f"{state.timestamp}): resume with `{resume_command(state.snapshot_id)}`")
    report.found["incomplete_snapshots"] = count


def _check_refcounts(catalog: Catalog, report: VerifyReport, *, fix: bool) -> None:
    with catalog.transaction() as tx:
        drift = list(tx.blobs.count_references())
        for blob_id, sha, stored, actual in drift:
            report.note("refcount_drift", f"{sha}: ref_count {stored}, references {actual}")
            if fix:
                tx.blobs.set_ref_count(blob_id, actual, utcnow())
                report.fixed["refcount_drift"] += 1


def _restore_from_alias(primary: PrimaryStore, views: ViewSet, sha: str) -> bool:
    """A blob file lost or damaged while one of its aliases (a hard link) still holds good
    bytes; its other aliases are then made links of the restored file."""
    aliases = views.farm.aliases
    for ext in aliases.extensions(sha):
        alias = aliases.path(sha, ext)
        if os.path.isfile(alias) and sha256_file(Path(alias))[0] == sha:
            break
    else:
        return False
    final = _local_store(primary).local_path(sha)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.restore-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.link(alias, tmp)
    os.replace(tmp, final)
    aliases.refresh(sha, final)
    return True


def _local_store(primary: PrimaryStore) -> LocalBlobStore:
    """The local primary's store (the checks of files, aliases and links run on one)."""
    store = primary.store
    if not isinstance(store, LocalBlobStore):
        raise TypeError(f"store {store.name!r} is not a local folder")
    return store


def _iter_blobs(catalog: Catalog, batch: int = 2000) -> Iterator[BlobRow]:
    last = 0
    while True:
        with catalog.reading() as tx:
            rows = tx.blobs.blob_page(after=last, limit=batch)
        if not rows:
            return
        yield from rows
        last = rows[-1].id


def _check_blob_files(catalog: Catalog, primary: PrimaryStore, views: ViewSet,
                      *, report: VerifyReport, deep: bool, fix: bool,
                      progress: Callable[[str, int], object] | None) -> set[str]:
    """Referenced blobs whose primary file is missing or corrupt (returned)."""
    bad: set[str] = set()
    store, farm = _local_store(primary), views.farm
    for blob in _iter_blobs(catalog):
        blob_id, sha, size = blob.id, blob.sha256, blob.size
        if blob.ref_count == 0:
            continue  # gc may have collected it: not a problem
        report.blobs_checked += 1
        if deep:
            result = store.check(sha, expected_size=size)
            status = result.status
        else:
            status = "ok" if os.path.isfile(store.local_path(sha)) else "missing"
        if status == "ok" and not farm.aliases.is_ok(sha, store.local_path(sha)):
            # The views' short-name hard link is gone or stale (the blob file was replaced:
            # its aliases with an extension are stale too): links would dangle.
            report.note("missing_aliases", sha)
            if fix and "" in farm.aliases.refresh(sha, store.local_path(sha)):
                report.fixed["missing_aliases"] += 1
        if status != "ok":
            kind = "missing_blob_files" if status == "missing" else "corrupt_blob_files"
            report.note(kind, sha)
            if fix and _restore_from_alias(primary, views, sha):
                report.fixed[kind] += 1
                continue
            bad.add(sha)
            if fix:  # record the truth so replication can restore it from a good copy
                with catalog.transaction() as tx:
                    tx.copies.set_copy_status(blob_id=blob_id,
                                    store_id=primary.store_id,
                                    status="missing" if status == "missing" else "corrupted",
                                    mtime=utcnow())
        if progress and report.blobs_checked % 1000 == 0:
            progress("blobs", 1000)
    return bad


class _FileLinks:
    """Checks and repairs file links, and the aliases they point at."""

    def __init__(self, farm: ViewFarm, primary: PrimaryStore, report: VerifyReport, *,
                 fix: bool, missing_blobs: set[str]) -> None:
        self.farm, self.store, self.report = farm, _local_store(primary), report
        self.fix, self.missing_blobs = fix, missing_blobs
        self._noted: set[str] = set()  # aliases noted missing (several links share one)

    def state(self, link: str, sha: str, ext: str | None = None) -> LinkState:
        """The link's state (to the alias with `ext`, by default the link name's). A link
        broken because its alias is missing while the blob file is there is a missing alias
        (made by `fix`); one broken because the blob file is missing is counted as that, not
        as a link problem."""
        state = self.farm.inspect(link, sha, ext)
        if state.status != "broken":
            return state
        if sha in self.missing_blobs:
            return LinkState("ok", state.current_target)
        if ext is None:
            ext = alias_extension(link)
        alias = self.farm.aliases.path(sha, ext)
        if os.path.lexists(alias):
            return state
        if alias not in self._noted:
            self._noted.add(alias)
            self.report.note("missing_aliases", sha)
            if self.fix and self.farm.aliases.ensure(sha, self.store.object_path(sha),
                                                     ext=ext) != "missing_blob":
                self.report.fixed["missing_aliases"] += 1
                return self.farm.inspect(link, sha, ext)
        return state

    def repair(self, link: str, sha: str, ext: str | None = None) -> Callable[[], str] | None:
        """The repair of a file link under `fix`: the link and the alias it points at."""
        return partial(self._repair, link, sha, ext) if self.fix else None

    def _repair(self, link: str, sha: str, ext: str | None) -> str:
        return self.farm.ensure_file_link(link, sha, self.store.object_path(sha), ext=ext)


def _check_links(catalog: Catalog, views: ViewSet, report: VerifyReport, *, file_links: _FileLinks,
                 vacuum: bool, progress: Callable[[str, int], object] | None) -> None:
    """File links in the file view, folder links in the others (`views.file_view`), then
    orphans: any other link under an enabled view."""
    home = views.file_view
    expected: dict[str, set[str]] = {view: set() for view in views.enabled}
    farm = views.farm
    kept_folders: set[str] = set()  # empty folders the snapshots had: vacuum keeps them
    for place, files, own_links in _snapshot_files(catalog):
        if home is None:
            break
        folder = view_dir(home, place)
        for _extractor, rel, sha in files if home in expected else ():
            report.files_checked += 1
            link = f"{folder}/{rel}"
            expected[home].add(link)
            _note_link(report, link, file_links.state(link, sha), repair=file_links.repair(link, sha))
        for rel, target in own_links if home in expected else ():
            # A symlink the snapshot folder had, kept as it was, or an empty folder it had.
            link = f"{folder}/{rel}"
            if target is not None:
                expected[home].add(link)
            else:
                kept_folders.add(link)
            _note_link(report, link, farm.entry_ok(link, target),
                       repair=partial(farm.ensure_entry, link, target) if file_links.fix else None)
        for link, target in views.folder_links(place):
            expected[link.partition("/")[0]].add(link)
            state = farm.inspect_target(link, target)
            # A conflict here may be an earlier version's per-file folder, which the repair
            # replaces when it holds only links (user files are never touched).
            _note_link(report, link, state,
                       repair=partial(farm.ensure_folder_link, link, target) if file_links.fix else None,
                       also=("conflict",))
        if progress:
            progress("files", len(files))
    _check_capture_links(catalog, views, report, file_links=file_links, expected=expected)
    for view in views.enabled:
        for link, _target in farm.iter_links(view):
            if link not in expected[view]:
                report.note("orphan_links", str(link))
                if vacuum and farm.remove_link(link):
                    report.fixed["orphan_links"] += 1
        if vacuum:
            farm.remove_empty_dirs(view, keep=kept_folders)


def _check_capture_links(catalog: Catalog, views: ViewSet, report: VerifyReport, *,
                         file_links: _FileLinks, expected: dict[str, set[str]]) -> None:
    """The links of crawled pages in the `[crawl] views` (`captures.views`)."""
    chosen = [view for view in views.crawl if view in expected]
    if not chosen:
        return
    farm = views.farm
    with catalog.reading() as tx:
        rows = tx.captures.view_captures()
    pages, folders = capture_links(views.crawl, (ViewCapture(*row) for row in rows))
    for link, (sha, ext) in pages.items():
        if link.partition("/")[0] not in chosen:
            continue
        expected[link.partition("/")[0]].add(link)
        _note_link(report, link, file_links.state(link, sha, ext),
                   repair=file_links.repair(link, sha, ext))
    for link, target in folders.items():
        if link.partition("/")[0] not in chosen:
            continue
        expected[link.partition("/")[0]].add(link)
        _note_link(report, link, farm.inspect_target(link, target),
                   repair=partial(farm.ensure_folder_link, link, target) if file_links.fix else None)


def _note_link(report: VerifyReport, link: str, state: LinkState,
               *, repair: Callable[[], str] | None, also: tuple[str, ...] = ()) -> None:
    """Count one checked link; note a problem and, given a `repair`, try it (the statuses
    missing, wrong and broken, plus `also`)."""
    report.links_checked += 1
    if state.status == "ok":
        return
    kind = f"{state.status}_links"
    report.note(kind, link)
    if (repair is not None and state.status in ("missing", "wrong", "broken", *also)
            and repair() != "conflict"):
        report.fixed[kind] += 1


def _snapshot_files(catalog: Catalog
                    ) -> Iterator[tuple[SnapshotPlace, SnapshotFiles, SnapshotEntries]]:
    with catalog.reading() as tx:
        yield from iter_snapshot_files(tx)


def _check_bucket(catalog: Catalog, primary: PrimaryStore, report: VerifyReport, *,
                  deep: bool, fix: bool, replicas: Sequence[BlobStore], scan_store: bool,
                  data_dir: Path | None, progress: Callable[[str, int], object] | None) -> None:
    """The blobs of an S3 primary (`storage.verify_bucket`): missing or corrupt ones (`fix`
    restores them from a replica), and untracked objects."""
    from archive_pipelines.storage.verify_bucket import restore_blob, walk_bucket

    found = walk_bucket(catalog, primary, deep=deep,
                        progress=None if progress is None else partial(progress, "blobs"))
    report.blobs_checked = found.checked
    bad = [(sha, "missing_blob_files") for sha in found.missing]
    bad += [(sha, "corrupt_blob_files") for sha, _why in found.corrupt]
    for sha, kind in bad:
        report.note(kind, sha)
        if fix and restore_blob(catalog, primary, replicas, sha=sha,
                                corrupt=kind == "corrupt_blob_files") is not None:
            report.fixed[kind] += 1
    if scan_store:
        pending = set() if data_dir is None else pending_body_hashes(
            catalog, data_dir, source=segment_source(primary.store, data_dir))
        for sha in found.untracked:
            report.note("crawl_pending" if sha in pending else "untracked_blob_files", sha)


def _check_untracked(catalog: Catalog, primary: PrimaryStore, report: VerifyReport,
                     *, data_dir: Path | None) -> None:
    """Blob files in the primary store that the catalog has no row for (one prefix at a
    time); those crawl records not yet ingested name are `crawl_pending`."""
    pending = set() if data_dir is None else pending_body_hashes(catalog, data_dir)
    for sha in untracked_hashes(catalog, primary):
        report.note("crawl_pending" if sha in pending else "untracked_blob_files", sha)
