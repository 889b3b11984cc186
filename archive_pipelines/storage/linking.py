"""Creating many view links at once, on the storage io threads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from archive_pipelines.storage.context import Storage


def ensure_links(storage: Storage, links: list[tuple[str, str]],
                 aliases: Iterable[str] = ()) -> Counter[str]:
    """Aliases for `aliases` (blob hashes), then every (link path, sha256); returns how many
    links were created / ok / fixed / conflict."""
    farm, primary = storage.farm, storage.primary
    storage.map_io(lambda sha: farm.ensure_alias(sha, primary.local_path(sha)), sorted(aliases))
    return Counter(storage.map_io(lambda link: farm.ensure_link(*link), links))
