"""Generated ArchiveBox collections on disk, for import tests, benchmarks and the demo.

`generate_collection(root, layout, snapshots=N, seed=S)` is the one entry point; the layout
says which collection and carries its options:

* `Aged07(...)`: a collection that lived through 0.4, 0.6 and 0.7 and ends on ArchiveBox
  0.7.2 (`aged07/`): 0.7's index.json, index.html and extractor outputs in every folder, the
  Django schema of index.sqlite3, orphans; returns a `Collection07`.
* `ReleaseMix(releases=...)`: folders in the index.json shape of each release from 0.4 to
  0.9-dev (`releases/`), broken folders and duplicates on request; returns a `Manifest`.

Both write their files through `folders.FolderWriter`, their index.sqlite3 through
`index_sqlite.write_index_sqlite`, and each wget run's `warc/<unix>.warc.gz` through
`archive_testkit.warc_files` (warcio, with digests, as `wget --warc-file` writes it).
"""

from archive_testkit.archivebox.aged07.model import (
    ARCHIVEBOX_VERSION,
    DATA_DIR,
    METHODS_04,
    METHODS_06,
    METHODS_07,
    OLD_OUTPUT_DIR,
    Collection07,
    Snapshot07,
)
from archive_testkit.archivebox.collection import generate_collection
from archive_testkit.archivebox.formats import (
    django_datetime,
    hashurl,
    is_static_url,
    slugify,
    without_scheme,
)
from archive_testkit.archivebox.index_sqlite import SQLITE_NAME
from archive_testkit.archivebox.layouts import Aged07, ReleaseMix
from archive_testkit.archivebox.releases.collection_manifest import (
    BROKEN_KINDS,
    Manifest,
    ManifestFile,
    ManifestSnapshot,
)

__all__ = [
    "ARCHIVEBOX_VERSION",
    "BROKEN_KINDS",
    "DATA_DIR",
    "METHODS_04",
    "METHODS_06",
    "METHODS_07",
    "OLD_OUTPUT_DIR",
    "SQLITE_NAME",
    "Aged07",
    "Collection07",
    "Manifest",
    "ManifestFile",
    "ManifestSnapshot",
    "ReleaseMix",
    "Snapshot07",
    "django_datetime",
    "generate_collection",
    "hashurl",
    "is_static_url",
    "slugify",
    "without_scheme",
]
