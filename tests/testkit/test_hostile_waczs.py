"""Each hostile WACZ is what it says; the valid WACZ they start from passes py-wacz's validator."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive_testkit.hostile_waczs import (
    ESCAPING_NAMES,
    HUGE_DECLARED_SIZE,
    HostileWacz,
    valid_wacz,
    wacz_with_escaping_paths,
    wacz_with_huge_member,
    wacz_with_wrong_digest,
)

WACZ = Path(sys.executable).parent / "wacz"  # py-wacz's console script, a test-time validator


def _listed_hashes(archive: zipfile.ZipFile) -> dict[str, str]:
    package = json.loads(archive.read("datapackage.json"))
    return {resource["path"]: resource["hash"] for resource in package["resources"]}


def _actual_hash(archive: zipfile.ZipFile, name: str) -> str:
    return "sha256:" + hashlib.sha256(archive.read(name)).hexdigest()


def _assert_good_member_reads(hostile: HostileWacz) -> None:
    """The good WARC reads with warcio, digests checked, its responses at the offsets given."""
    assert hostile.good_member is not None and hostile.good
    with zipfile.ZipFile(hostile.path) as archive:
        data = archive.read(hostile.good_member)
    for good in hostile.good:
        stream = BytesIO(data)
        stream.seek(good.offset)
        record = next(iter(ArchiveIterator(stream, check_digests="raise")))
        assert record.rec_headers.get_header("WARC-Target-URI") == good.url
        assert hashlib.sha256(record.content_stream().read()).hexdigest() == good.payload_sha256


def _validate(path: Path) -> int:
    return subprocess.run([str(WACZ), "validate", "-f", str(path)], capture_output=True, timeout=120,
                          check=False).returncode


def test_py_wacz_validates_the_valid_one_and_rejects_the_wrong_digest(tmp_path: Path) -> None:
    assert _validate(valid_wacz(tmp_path / "valid.wacz").path) == 0
    assert _validate(wacz_with_wrong_digest(tmp_path / "wrong.wacz").path) != 0


@pytest.mark.unit
def test_the_wrong_digest_is_one_ignored_byte_of_a_still_valid_warc(tmp_path: Path) -> None:
    valid = valid_wacz(tmp_path / "valid.wacz")
    hostile = wacz_with_wrong_digest(tmp_path / "wrong.wacz")
    [member] = hostile.bad_members
    with zipfile.ZipFile(hostile.path) as archive:
        assert _listed_hashes(archive)[member] != _actual_hash(archive, member)
        assert all(_listed_hashes(archive)[name] == _actual_hash(archive, name)
                   for name in _listed_hashes(archive) if name != member)
        altered = archive.read(member)
    original = valid.warc_bytes()
    assert len(altered) == len(original)
    assert [i for i, (a, b) in enumerate(zip(altered, original, strict=True)) if a != b] == [4]  # gzip MTIME
    _assert_good_member_reads(hostile)


@pytest.mark.unit
def test_member_names_leave_the_folder_with_right_digests(tmp_path: Path) -> None:
    hostile = wacz_with_escaping_paths(tmp_path / "escaping.wacz")
    assert hostile.bad_members == ESCAPING_NAMES
    folder = (tmp_path / "unpack").resolve()
    with zipfile.ZipFile(hostile.path) as archive:
        names = archive.namelist()
        listed = _listed_hashes(archive)
        assert all(listed[name] == _actual_hash(archive, name) for name in listed)
    assert set(ESCAPING_NAMES) <= set(names)
    for name in ESCAPING_NAMES:
        assert not (folder / name).resolve().is_relative_to(folder), name
    assert (folder / hostile.good_member).resolve().is_relative_to(folder)
    _assert_good_member_reads(hostile)


@pytest.mark.unit
def test_a_member_declares_four_gigabytes_in_a_few_bytes(tmp_path: Path) -> None:
    hostile = wacz_with_huge_member(tmp_path / "huge.wacz")
    [member] = hostile.bad_members
    with zipfile.ZipFile(hostile.path) as archive:  # both headers say it: zipfile reads the central one
        info = archive.getinfo(member)
        assert archive.testzip() is None  # CRCs right: only the sizes lie
    assert info.file_size == HUGE_DECLARED_SIZE and info.compress_size < 1024
    raw = hostile.path.read_bytes()
    local_size = raw[info.header_offset + 22:info.header_offset + 26]  # the local header's uncompressed size
    assert int.from_bytes(local_size, "little") == HUGE_DECLARED_SIZE
    assert hostile.path.stat().st_size < 16 * 1024
    _assert_good_member_reads(hostile)
