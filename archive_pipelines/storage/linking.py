"""Creating many view links at once, on the storage io threads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.file_workers import alias_one, folder_link_one, link_one


def ensure_links(storage: Storage, links: list[tuple[str, str]], aliases: Iterable[str] = (),
                 folder_links: Sequence[tuple[str, str]] = ()) -> Counter[str]:
    """Aliases for `aliases` (blob hashes), then every file link (link path, sha256), then
    every folder link (link path, target); returns how many links were created / ok /
    fixed / conflict. (`FileWorkers.start_links` is the same in worker processes.)"""
    farm, primary = storage.farm, storage.primary
    storage.map_io(lambda sha: alias_one(farm, primary, sha), sorted(aliases))
    outcomes = Counter(storage.map_io(lambda link: link_one(farm, primary, link), links))
    outcomes.update(storage.map_io(lambda link: folder_link_one(farm, link), folder_links))
    return outcomes
