"""Creating many view links at once, on the storage io threads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from archive_pipelines.blobstore import LocalBlobStore
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.file_workers import FileLink, alias_one, folder_link_one, link_one
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import ViewSet


def ensure_links(primary: PrimaryStore, views: ViewSet, work: FileWork,
                 *, links: Sequence[FileLink], aliases: Iterable[str] = (),
                 folder_links: Sequence[tuple[str, str]] = ()) -> Counter[str]:
    """Aliases for `aliases` (blob hashes), then every file link (`FileLink`), then
    every folder link (link path, target); returns how many links were created / ok /
    fixed / conflict. (`FileWorkers.start_links` is the same in worker processes.)
    Views link into a local primary: with any other, a TypeError."""
    farm, store = views.farm, primary.store
    if not isinstance(store, LocalBlobStore):
        raise TypeError(f"view links point into a local primary store, not {store!r}")
    work.map_io(lambda sha: alias_one(farm, store, sha), sorted(aliases))
    outcomes = Counter(work.map_io(lambda link: link_one(farm, store, link), links))
    outcomes.update(work.map_io(lambda link: folder_link_one(farm, link), folder_links))
    return outcomes
