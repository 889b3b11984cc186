"""Hostile WARC and WACZ files imported: each fault is reported with its file and offset, the
good records around it are imported (found by `captures`, their bodies the payloads' bytes),
nothing is written outside the data dir, and the command exits 1."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import select

from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit import hostile_waczs, hostile_warcs
from archive_testkit.hostile_records import HostileFile
from tests.helpers.captures import open_parts
from tests.helpers.cli import CLI


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)


def _bodies(data: Path) -> set[tuple[str, str | None]]:
    with open_parts(data) as parts, parts.catalog.reading() as tx:
        rows = tx.session.execute(select(PageFetch.url, PageFetch.body_sha256)).all()
        parts.catalog.engine.dispose()
    return {(url, sha) for url, sha in rows}


def _files_outside(root: Path, data: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and data not in p.parents
            and p.parent != root]


HOSTILE_WARCS: dict[str, Callable[[Path], HostileFile]] = {
    "truncated gzip member": hostile_warcs.truncated_member_warc,
    "content-length too long": hostile_warcs.content_length_too_long_warc,
    "content-length too long, plain": lambda p: hostile_warcs.content_length_too_long_warc(
        p.with_suffix(""), gzipped=False),
    "content-length too short": hostile_warcs.content_length_too_short_warc,
    "content-length of 2 GB": hostile_warcs.content_length_2gb_warc,
    "no target URI": hostile_warcs.no_target_uri_warc,
    "wrong sha1 payload digest": hostile_warcs.wrong_payload_digest_warc,
    "wrong sha256 payload digest": lambda p: hostile_warcs.wrong_payload_digest_warc(
        p, algorithm="sha256"),
    **{f"target URI {case}": partial(hostile_warcs.odd_target_uri_warc, case=case)
       for case in ("continuation-line", "bare-lf", "dot-segments")},
}


@pytest.mark.parametrize("case", sorted(HOSTILE_WARCS))
def test_a_hostile_record_is_reported_and_the_rest_imported(case: str, tmp_path: Path) -> None:
    hostile = HOSTILE_WARCS[case](tmp_path / "hostile.warc.gz")
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    run = _cli("--data-dir", str(data), "import-warc", "--json", str(hostile.path))
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["refused"] + report["broken_spans"] >= 1
    assert any(str(hostile.path) in line and f"offset {hostile.bad_offset}" in line
               for line in report["problems"]), report["problems"]
    held = _bodies(data)
    for good in hostile.good:
        assert (good.url, good.payload_sha256) in held, good
    assert len(held) == len(hostile.good)  # the bad record is not stored as good
    assert _files_outside(tmp_path, data) == []
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("case", ["percent-newline", "percent-nul"])
def test_an_encoded_control_character_is_a_url_like_any_other(case: str, tmp_path: Path) -> None:
    """`%0A` and `%00` are percent-encoded bytes of a valid URL (crawlers fetch such links):
    imported, found under that URL."""
    hostile = hostile_warcs.odd_target_uri_warc(tmp_path / "odd.warc.gz", case=case)
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    run = _cli("--data-dir", str(data), "import-warc", str(hostile.path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(_bodies(data)) == len(hostile.good) + 1


def test_a_warc_1_0_file_is_imported(tmp_path: Path) -> None:
    hostile = hostile_warcs.warc_1_0_file(tmp_path / "old.warc.gz")
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    run = _cli("--data-dir", str(data), "import-warc", str(hostile.path))
    assert run.returncode == 0, run.stdout + run.stderr
    held = _bodies(data)
    for good in hostile.good:
        assert (good.url, good.payload_sha256) in held, good


HOSTILE_WACZS = {
    "wrong datapackage digest": hostile_waczs.wacz_with_wrong_digest,
    "member paths leaving the package": hostile_waczs.wacz_with_escaping_paths,
    "a member declaring 4 GiB": hostile_waczs.wacz_with_huge_member,
}


@pytest.mark.parametrize("case", sorted(HOSTILE_WACZS))
def test_a_hostile_wacz_is_reported_and_the_rest_imported(case: str, tmp_path: Path) -> None:
    hostile = HOSTILE_WACZS[case](tmp_path / "hostile.wacz")
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    run = _cli("--data-dir", str(data), "import-warc", "--json", str(hostile.path))
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads(run.stdout)
    for member in hostile.bad_members:
        assert any(member in line for line in report["problems"]), report["problems"]
    held = _bodies(data)
    if hostile.good_member not in hostile.bad_members:
        for good in hostile.good:
            assert (good.url, good.payload_sha256) in held, good
    else:  # the package's one WARC is the bad one: nothing of it is imported as good
        assert held == set()
    assert _files_outside(tmp_path, data) == []
    assert not (tmp_path / "evil.warc.gz").exists() and not Path("/abs/path.warc.gz").exists()
