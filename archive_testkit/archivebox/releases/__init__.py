"""The `ReleaseMix` layout: ArchiveBox folders in the shape of every release from 0.4 to 0.9-dev.

`generate_collection(root, ReleaseMix(releases=...), snapshots=N, seed=S)` writes
`archive/<timestamp>/` folders with each release's index.json (`release_documents`), flat
extractor outputs (`release_outputs`), optional broken folders and duplicates, and an
`index.sqlite3` of the newest release's schema (`release_sqlite`); its `Manifest`
(`collection_manifest`) lists every file's sha256 so later steps can prove no byte was lost.
"""
