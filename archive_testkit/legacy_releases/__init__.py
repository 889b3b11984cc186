"""Legacy ArchiveBox collections in the shape of every release from 0.4 to 0.9-dev.

`generate_collection` writes `archive/<timestamp>/` folders with each release's index.json,
flat extractor outputs, optional broken folders and duplicates, and an `index.sqlite3`; its
`Manifest` lists every file's sha256 so later steps can prove no byte was lost.
"""

from archive_testkit.legacy_releases.collection import (
    BROKEN_KINDS,
    Manifest,
    ManifestFile,
    ManifestSnapshot,
    generate_collection,
)

__all__ = ["BROKEN_KINDS", "Manifest", "ManifestFile", "ManifestSnapshot", "generate_collection"]
