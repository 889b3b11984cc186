"""The manifest of a generated release mix: every snapshot folder and every file's sha256."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from archive_testkit.archivebox.folders import FolderWriter

BROKEN_KINDS = ("missing_index", "not_json", "bad_url")  # load_index's InvalidFolder reasons


@dataclass(frozen=True)
class ManifestFile:
    """One written file: path relative to the collection root, sha256, size, extractor."""

    path: str
    sha256: str
    size: int
    extractor: str


@dataclass(frozen=True)
class ManifestSnapshot:
    """One generated snapshot folder (`folder` relative to the root, e.g. `archive/1500000097`)."""

    folder: str
    url: str
    timestamp: str  # the index.json timestamp (differs from the folder name for duplicates)
    release: str
    fs_version: str
    title: str
    tags: tuple[str, ...]
    has_index: bool
    in_sqlite: bool
    broken: str | None = None
    duplicate_of: str | None = None


@dataclass
class Manifest:
    root: Path
    snapshots: list[ManifestSnapshot] = field(default_factory=list)
    files: dict[str, ManifestFile] = field(default_factory=dict)
    sqlite_variant: str | None = None

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    @property
    def unique_bytes(self) -> int:
        """Bytes a content-addressed store needs (each distinct sha256 once)."""
        return sum({f.sha256: f.size for f in self.files.values()}.values())

    def mismatches(self, paths: Sequence[str] | None = None) -> list[str]:
        """Files (all, or `paths`) whose bytes on disk no longer match the manifest."""
        problems = []
        for rel in self.files if paths is None else paths:
            expected = self.files[rel]
            try:
                digest = hashlib.sha256((self.root / rel).read_bytes()).hexdigest()
            except OSError as exc:
                problems.append(f"{rel}: {exc.strerror or exc}")
                continue
            if digest != expected.sha256:
                problems.append(f"{rel}: sha256 {digest} != {expected.sha256}")
        return problems

    def summary(self) -> dict[str, int]:
        """Counts for logs and the benchmark."""
        return {
            "snapshots": len(self.snapshots),
            "files": len(self.files),
            "total_bytes": self.total_bytes,
            "unique_bytes": self.unique_bytes,
        }

    def save(self, path: Path) -> None:
        data = {
            "root": str(self.root),
            "sqlite_variant": self.sqlite_variant,
            "snapshots": [asdict(s) for s in self.snapshots],
            "files": [asdict(f) for f in self.files.values()],
        }
        path.write_text(json.dumps(data))

    @classmethod
    def load(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text())
        snapshots = [ManifestSnapshot(**{**s, "tags": tuple(s["tags"])}) for s in data["snapshots"]]
        files = {f["path"]: ManifestFile(**f) for f in data["files"]}
        return cls(Path(data["root"]), snapshots, files, data["sqlite_variant"])


class ManifestWriter:
    """Writes files under the manifest's root and records each one in the manifest."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self._folders = FolderWriter(manifest.root)

    def write(self, rel: str, data: bytes, extractor: str, sha256: str | None = None) -> None:
        """Write `data` to `rel` and record it for `extractor` (`sha256` when already known)."""
        self._folders.write(rel, data)
        digest = sha256 or hashlib.sha256(data).hexdigest()
        self.manifest.files[rel] = ManifestFile(rel, digest, len(data), extractor)
