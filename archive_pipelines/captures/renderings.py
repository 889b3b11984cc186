"""A browser page load's own captures: its full-page screenshot (PNG) and rendered DOM.

They bear the page's URL and time but answer no lookup of that URL (replay, CDX, Memento and
`captures URL` list HTTP exchanges only); they come with their page capture, found by the
record both came from (`renderings_of`), and can be written out to a file (`save_rendering`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from archive_pipelines.archive_error import ArchiveError, NotFound
from archive_pipelines.blobstore import BlobStore, BlobStoreError
from archive_pipelines.captures.lookup import canonical_target
from archive_pipelines.catalog import Capture, Catalog

RENDERING_NAMES = {"screenshot": "screenshot", "dom": "rendered DOM"}
_CHUNK = 1024 * 1024


def renderings_of(catalog: Catalog, captures: Sequence[Capture]) -> dict[int, list[Capture]]:
    """{page capture id: its screenshot and DOM captures} of the `page` captures listed that
    were browser page loads."""
    pages = [capture.id for capture in captures if capture.kind == "page"]
    if not pages:
        return {}
    with catalog.reading() as tx:
        return tx.captures.renderings_of(pages)


def newest_rendering(catalog: Catalog, url: str, *, kind: str, from_ms: int | None = None,
                     to_ms: int | None = None) -> tuple[Capture, Capture]:
    """(page capture, its `kind` capture) of the newest page capture of `url` within
    [from_ms, to_ms] that has one; NotFound when none has."""
    _canonical, url_hash, _site = canonical_target(url)
    with catalog.reading() as tx:
        pages = [c for c in tx.captures.captures_by_url(url_hash, from_ms=from_ms, to_ms=to_ms)
                 if c.kind == "page"]
        found = tx.captures.renderings_of([page.id for page in pages])
    for page in pages:  # newest first
        for rendering in found.get(page.id, []):
            if rendering.kind == kind:
                return page, rendering
    raise NotFound(f"no capture of {url[:200]} has a {RENDERING_NAMES.get(kind, kind)} "
                   "(only pages the crawler loaded in a browser do)")


def save_rendering(store: BlobStore, rendering: Capture, out: Path) -> int:
    """Write the capture's body to `out` (beside it under a temporary name, checked against
    its sha256, then renamed); its size."""
    sha256 = rendering.body_sha256
    if sha256 is None or not rendering.stored:
        raise ArchiveError(f"the {RENDERING_NAMES.get(rendering.kind, rendering.kind)} of "
                           f"{rendering.url[:200]} is not in the store")
    part = out.with_name(f".{out.name}.part")
    digest = hashlib.sha256()
    size = 0
    try:
        with store.open(sha256) as source, open(part, "wb") as sink:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                sink.write(chunk)
                size += len(chunk)
        if digest.hexdigest() != sha256:
            raise ArchiveError(f"blob sha256:{sha256} in the store does not hash to its name: "
                               "run `archive-pipelines verify`")
        os.replace(part, out)
    except BlobStoreError as exc:
        raise ArchiveError(f"cannot read sha256:{sha256} from the store: {exc}") from None
    finally:
        part.unlink(missing_ok=True)
    return size
