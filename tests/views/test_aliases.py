import os
from pathlib import Path

import pytest

from archive_pipelines.views import ViewFarm
from archive_pipelines.views.aliases import AliasIndex

pytestmark = pytest.mark.unit

SHA = "ab" * 32


def blob_file(tmp_path: Path, data: bytes = b"<title>t</title>") -> Path:
    path = tmp_path / "cas" / "sha256" / "ab" / "ab" / SHA
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_blob_has_one_alias_per_extension_and_remove_takes_them_all(tmp_path: Path) -> None:
    blob = blob_file(tmp_path)
    aliases = AliasIndex(tmp_path / "cas")
    assert aliases.extensions(SHA) == []
    assert aliases.ensure(SHA, blob) == "created"
    assert aliases.ensure(SHA, blob, ext=".html") == "created"
    assert aliases.ensure(SHA, blob, ext=".htm") == "created"
    assert aliases.ensure(SHA, blob, ext=".html") == "ok"
    assert aliases.path(SHA, ".html") == aliases.path(SHA) + ".html"
    assert aliases.extensions(SHA) == ["", ".html", ".htm"]
    assert os.stat(blob).st_nlink == 4  # the store's name and three aliases
    assert sorted(aliases.remove(SHA)) == ["", ".htm", ".html"]
    assert aliases.extensions(SHA) == [] and os.stat(blob).st_nlink == 1
    assert aliases.remove(SHA) == []


def test_refresh_relinks_every_alias_of_a_replaced_blob_file(tmp_path: Path) -> None:
    blob = blob_file(tmp_path)
    aliases = AliasIndex(tmp_path / "cas")
    aliases.ensure(SHA, blob, ext=".css")
    blob.unlink()  # restored from a replica: a new inode, the alias holds the old one
    blob_file(tmp_path, b"restored")
    assert not aliases.is_ok(SHA, blob, ext=".css")
    assert aliases.refresh(SHA, blob) == ["", ".css"]  # the plain alias was missing
    assert aliases.is_ok(SHA, blob) and aliases.is_ok(SHA, blob, ext=".css")
    assert aliases.refresh(SHA, blob) == []


def test_a_file_link_points_at_the_alias_with_its_extension(tmp_path: Path) -> None:
    blob = blob_file(tmp_path)
    farm = ViewFarm(tmp_path / "archive", tmp_path / "cas")
    page = "by_timestamp/1.0/wget/index.html"
    assert farm.ensure_file_link(page, SHA, str(blob)) == "created"
    target = os.readlink(farm.archive_root / page)
    assert target.endswith(".html") and farm.inspect(page, SHA).status == "ok"
    resolved = os.path.realpath(farm.archive_root / page)
    assert resolved == farm.aliases.path(SHA, ".html")  # what a browser takes the type from
    assert (farm.archive_root / page).read_bytes() == blob.read_bytes()
    # The same bytes under a name without a known extension: the plain alias.
    other = "by_timestamp/1.0/wget/index"
    assert farm.ensure_file_link(other, SHA, str(blob)) == "created"
    assert os.path.realpath(farm.archive_root / other) == farm.aliases.path(SHA)
    assert farm.aliases.extensions(SHA) == ["", ".html"]


def test_an_extensionless_link_of_earlier_versions_is_repointed(tmp_path: Path) -> None:
    blob = blob_file(tmp_path)
    farm = ViewFarm(tmp_path / "archive", tmp_path / "cas")
    page = "by_timestamp/1.0/wget/index.html"
    farm.aliases.ensure(SHA, blob)
    farm.ensure_anchor("by_timestamp")
    old_target = "../../" + ".s/" + os.path.relpath(farm.aliases.path(SHA), farm.aliases.root)
    (farm.archive_root / page).parent.mkdir(parents=True)
    os.symlink(old_target, farm.archive_root / page)
    assert (farm.archive_root / page).read_bytes() == blob.read_bytes()
    assert farm.inspect(page, SHA).status == "wrong"
    assert farm.ensure_file_link(page, SHA, str(blob)) == "fixed"
    assert os.path.realpath(farm.archive_root / page) == farm.aliases.path(SHA, ".html")
    assert farm.inspect(page, SHA).status == "ok"
