"""The local store: hardlinks, change detection, crash safety and filesystem errors."""

import errno
import hashlib
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import archive_pipelines.blobstore.local as local_module
import archive_pipelines.blobstore.local_files as local_files
import archive_pipelines.blobstore.object_writer as object_writer
from archive_pipelines.blobstore import (
    BlobIntegrityError,
    BlobStoreError,
    LocalBlobStore,
)
from archive_pipelines.blobstore.hashing import sha256_fd
from archive_pipelines.blobstore.local_files import publish
from tests.blobstore.stored_objects import stored_files

DATA = os.urandom(100_000) + b"some text " * 10_000


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "source.bin"
    path.write_bytes(DATA)
    return path


@pytest.mark.unit
def test_local_path_is_the_absolute_stored_file(local_store: LocalBlobStore) -> None:
    result = local_store.put_bytes(DATA)
    path = local_store.local_path(result.sha256)
    assert path.is_absolute()
    assert path == local_store.root / "sha256" / result.sha256[:2] / result.sha256[2:4] / (
        result.sha256)
    assert path.read_bytes() == DATA
    assert stat.S_IMODE(path.stat().st_mode) == 0o444  # a view's symlink cannot edit it


@pytest.mark.unit
def test_hardlink_shares_the_inode(local_store: LocalBlobStore, source: Path) -> None:
    result = local_store.put_file(source, allow_hardlink=True)

    stored = local_store.local_path(result.sha256)
    assert stored.stat().st_ino == source.stat().st_ino
    assert source.stat().st_nlink == 2
    assert (result.created, result.size, result.stored_bytes) == (True, len(DATA), len(DATA))
    assert local_store.check(result.sha256, expected_size=len(DATA)).ok
    assert stored_files(local_store.root) == [stored]
    again = local_store.put_file(source, allow_hardlink=True)
    assert (again.created, again.stored_bytes) == (False, 0)


@pytest.mark.unit
@pytest.mark.parametrize("refusal", [errno.EXDEV, errno.EPERM])
def test_hardlink_falls_back_to_a_copy(local_store: LocalBlobStore, source: Path,
                                       monkeypatch: pytest.MonkeyPatch, refusal: int) -> None:
    real_link = os.link

    def link(src: object, dst: object, **kwargs: object) -> None:
        if Path(str(src)) == source:  # e.g. the store is on another filesystem
            raise OSError(refusal, os.strerror(refusal), str(src))
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    result = local_store.put_file(source, allow_hardlink=True)

    stored = local_store.local_path(result.sha256)
    assert result.created
    assert stored.stat().st_ino != source.stat().st_ino
    assert stored.read_bytes() == DATA


@pytest.mark.unit
def test_a_zstd_store_never_hardlinks(tmp_path: Path, source: Path) -> None:
    store = LocalBlobStore(tmp_path / "z", codec="zstd")
    result = store.put_file(source, allow_hardlink=True)
    assert source.stat().st_nlink == 1
    assert result.stored_bytes < len(DATA)
    assert store.check(result.sha256, expected_size=len(DATA)).ok


def _append(path: Path) -> None:
    with open(path, "ab") as out:
        out.write(b"late write")


def _rewrite_same_size(path: Path) -> None:
    # Same size, new bytes, a later mtime: only size+mtime can tell.
    st = path.stat()
    with open(path, "r+b") as out:
        out.write(b"X" * 16)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


@pytest.mark.unit
@pytest.mark.parametrize("mutate", [_append, _rewrite_same_size])
@pytest.mark.parametrize(("moment", "hardlink"), [
    ("after hashing", False), ("after hashing", True),
    ("while copying", False),  # a hardlink copies nothing
    ("while linking", True),  # a copy links only its own temp file
])
def test_a_file_that_changes_during_ingest_leaves_nothing(
        local_store: LocalBlobStore, source: Path, monkeypatch: pytest.MonkeyPatch,
        mutate: Callable[[Path], None], moment: str, hardlink: bool) -> None:
    if moment == "after hashing":
        def hash_then_change(fd: int) -> tuple[str, int]:
            digest = sha256_fd(fd)
            mutate(source)
            return digest
        monkeypatch.setattr(local_module, "sha256_fd", hash_then_change)
    elif moment == "while copying":
        real_encode = object_writer.encode_stream

        def encode_then_change(*args: object, **kwargs: object) -> object:
            encoded = real_encode(*args, **kwargs)  # type: ignore[arg-type]
            mutate(source)
            return encoded
        monkeypatch.setattr(object_writer, "encode_stream", encode_then_change)
    else:
        real_link = os.link

        def link_then_change(src: object, dst: object, **kwargs: object) -> None:
            real_link(src, dst, **kwargs)  # type: ignore[arg-type]
            if Path(str(src)) == source:
                mutate(source)
        monkeypatch.setattr(os, "link", link_then_change)

    with pytest.raises(BlobIntegrityError, match="changed during ingest") as raised:
        local_store.put_file(source, allow_hardlink=hardlink)

    assert str(raised.value).startswith("store 'primary': blob ")
    assert stored_files(local_store.root) == []
    assert list(local_store.iter_hashes()) == []


@pytest.mark.unit
@pytest.mark.parametrize("how", ["renameat2", "link", "rename"])
def test_publish_never_replaces_an_existing_object(tmp_path: Path, how: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if how != "renameat2":  # a kernel or filesystem without RENAME_NOREPLACE
        monkeypatch.setattr(local_files, "_renameat2", None)
    if how == "rename":  # a filesystem without hard links either: publish renames
        def no_links(src: object, dst: object, **kwargs: object) -> None:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        monkeypatch.setattr(os, "link", no_links)
    first, second, final = tmp_path / "first", tmp_path / "second", tmp_path / "final"
    first.write_bytes(b"first")
    second.write_bytes(b"second")

    assert publish(first, final) is True
    assert not first.exists()  # it became `final`
    assert publish(second, final) is False
    assert final.read_bytes() == b"first"
    assert second.read_bytes() == b"second"  # the loser's temp is the caller's to remove


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_kill_9_mid_write_leaves_no_object(tmp_path: Path, codec: str) -> None:
    root = tmp_path / "store"
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; "
         "from archive_pipelines.blobstore import LocalBlobStore; "
         "LocalBlobStore(Path(sys.argv[1]), codec=sys.argv[2]).put_stream(sys.stdin.buffer)",
         str(root), codec],
        stdin=subprocess.PIPE)
    assert writer.stdin is not None
    data = os.urandom(3 * 1024 * 1024)
    try:
        writer.stdin.write(data)  # no EOF: the writer is still waiting for more
        writer.stdin.flush()
        deadline = time.monotonic() + 20
        while not any(p.stat().st_size > 0 for p in stored_files(root)):
            assert time.monotonic() < deadline, "the writer never started its temp file"
            assert writer.poll() is None
            time.sleep(0.02)
    finally:
        writer.kill()
        writer.wait()
        writer.stdin.close()

    store = LocalBlobStore(root, codec=codec)
    assert list(store.iter_hashes()) == []
    assert [p for p in stored_files(root) if "sha256" in p.parts] == []
    result = store.put_bytes(data)
    assert result.created
    assert store.check(result.sha256, expected_size=len(data)).ok
    litter = [p for p in stored_files(root) if p.name.endswith(".tmp")]
    assert len(litter) == 1
    assert store.remove_stale_temp_files(max_age_seconds=3600) == 0  # too young
    assert store.remove_stale_temp_files(max_age_seconds=0) == 1
    assert stored_files(root) == [store.local_path(result.sha256)]


@pytest.mark.parametrize("under", ["", "missing/store"])
def test_a_read_only_directory_is_a_clear_error(read_only_dir: Path, source: Path,
                                                under: str) -> None:
    store = LocalBlobStore(read_only_dir / under if under else read_only_dir)
    for put in (lambda: store.put_bytes(b"x"), lambda: store.put_file(source),
                lambda: store.put_file(source, allow_hardlink=True)):
        with pytest.raises(BlobStoreError, match=r"^store 'primary': cannot write ") as raised:
            put()
        assert "\n" not in str(raised.value)
        assert str(store.root) in str(raised.value)
    assert stored_files(read_only_dir) == []


@pytest.mark.unit
def test_a_full_disk_is_a_clear_error_and_cleans_up(local_store: LocalBlobStore, source: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    for put in (lambda: local_store.put_bytes(DATA), lambda: local_store.put_file(source)):
        with pytest.raises(BlobStoreError, match="no space left on device"):
            put()
    assert stored_files(local_store.root) == []


@pytest.mark.unit
def test_listing_skips_temp_files_and_other_codecs(tmp_path: Path) -> None:
    raw = LocalBlobStore(tmp_path / "shared", codec="raw")
    zstd = LocalBlobStore(tmp_path / "shared", codec="zstd")
    raw_hash = raw.put_bytes(b"raw blob").sha256
    zstd_hash = zstd.put_bytes(b"zstd blob").sha256
    leftover = raw.local_path(raw_hash).parent / f".{raw_hash[:16]}.0123456789abcdef.tmp"
    leftover.write_bytes(b"half a blob")

    assert list(raw.iter_hashes()) == [raw_hash]
    assert list(zstd.iter_hashes()) == [zstd_hash]
    assert not raw.exists(zstd_hash)


@pytest.mark.unit
def test_a_store_that_does_not_exist_yet(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "not" / "yet", writable=False)
    sha256 = hashlib.sha256(b"x").hexdigest()
    assert list(store.iter_hashes()) == []
    assert not store.exists(sha256)
    assert store.check(sha256).status == "missing"
    assert not (tmp_path / "not").exists()


@pytest.mark.unit
def test_a_hardlinked_put_shares_the_inode_and_makes_it_read_only(
        local_store: LocalBlobStore, source: Path) -> None:
    source.chmod(0o664)
    put = local_store.put_file(source, allow_hardlink=True)
    assert put.created and put.stored_bytes == len(DATA)
    assert os.path.samefile(local_store.local_path(put.sha256), source)
    assert stat.S_IMODE(source.stat().st_mode) == 0o444


@pytest.mark.unit
def test_a_source_we_may_not_chmod_is_copied(local_store: LocalBlobStore, source: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    source.chmod(0o644)

    def refuse(path: object, mode: int, **kwargs: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
    monkeypatch.setattr(os, "chmod", refuse)
    put = local_store.put_file(source, allow_hardlink=True)
    monkeypatch.undo()
    assert put.created
    stored = local_store.local_path(put.sha256)
    assert not os.path.samefile(stored, source) and stored.read_bytes() == DATA
    assert stat.S_IMODE(source.stat().st_mode) == 0o644
    assert sorted(p.name for p in stored_files(local_store.root)) == [stored.name]


def test_temp_names_are_unique_hidden_and_new_in_a_forked_child(tmp_path: Path) -> None:
    names = {local_files.temp_name(str(tmp_path), "ab" * 32) for _ in range(1000)}
    assert len(names) == 1000
    assert all(local_files._TEMP_NAME.fullmatch(os.path.basename(n)) for n in names)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, local_files.temp_name(str(tmp_path), "x").encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 200).decode()
    ours = local_files.temp_name(str(tmp_path), "x")
    def prefix(name: str) -> str:
        return os.path.basename(name).split(".")[2][:8]
    assert prefix(child) != prefix(ours)  # another random prefix
