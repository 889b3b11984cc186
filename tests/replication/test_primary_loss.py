"""A blob file deleted from the primary store, with every other name of its bytes: `verify`
reports it, `verify --fix` records the copy as missing, the next `replicate` copies it back from a
replica and `verify --fix` links the views to it again: every view opens the original bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli


@pytest.mark.faults
def test_a_deleted_primary_blob_comes_back_from_a_replica(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(
        '[replication]\nretention = 2\n'
        '[[stores]]\nname = "primary"\npath = "cas"\ncodec = "raw"\n'
        '[[stores]]\nname = "replica"\npath = "replicas/replica"\ncodec = "zstd"\n')
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    site = tmp_path / "site"
    site.mkdir()
    lost_bytes = b"<p>the page that will be lost</p>" * 40
    (site / "lost.html").write_bytes(lost_bytes)
    (site / "kept.html").write_bytes(b"<p>kept</p>")
    assert run_cli("--data-dir", str(data), "ingest", "--url", "https://a.test/", "wget",
                   str(site)).returncode == 0
    assert run_cli("--data-dir", str(data), "replicate").returncode == 0

    # Every name of the lost file's inode goes: the store's file, the views' alias and the
    # ingest source it was hard-linked from.
    inode = (site / "lost.html").stat().st_ino
    names = [Path(root) / name for root, _, files in os.walk(tmp_path) for name in files
             if (Path(root) / name).lstat().st_ino == inode]  # hard links, not the views' symlinks
    assert any("cas" in name.parts for name in names)
    for name in names:
        name.chmod(0o644)
        name.unlink()

    found = run_cli("--data-dir", str(data), "verify")
    assert found.returncode == 1 and "missing_blob_files     1" in found.stdout, found.stdout
    fixed = run_cli("--data-dir", str(data), "verify", "--fix")
    assert fixed.returncode == 1  # the bytes are not back yet: reported, not hidden
    replicated = run_cli("--data-dir", str(data), "replicate")
    assert replicated.returncode == 0, replicated.stdout + replicated.stderr
    assert "copies made (1.3 KiB); primary: 1" in replicated.stdout, replicated.stdout
    # The views' alias of the bytes is made again from the restored file.
    assert run_cli("--data-dir", str(data), "verify", "--fix").returncode == 0
    healthy = run_cli("--data-dir", str(data), "verify", "--deep")
    assert healthy.returncode == 0, healthy.stdout
    views = [p for p in (data / "archive").rglob("lost.html")]
    assert views and all(p.read_bytes() == lost_bytes for p in views)
