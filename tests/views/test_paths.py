import posixpath
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from archive_pipelines.views import (
    SnapshotPlace,
    UnsafePathError,
    domain_of,
    file_view,
    folder_links,
    paths,
    validate_relative_path,
    view_path,
)
from archive_pipelines.views.paths import (
    ALIAS_EXTENSIONS,
    alias_extension,
    blob_alias,
    link_target,
    typed_alias_extension,
)

pytestmark = pytest.mark.unit

PLACE = SnapshotPlace(snapshot_id="019b54ee-28d9-72dc-0000-000000000000",
                      url="https://Example.com:8443/a?b", timestamp="1735142400.123",
                      created_at=datetime(2024, 12, 25, 16, 0, tzinfo=UTC), created_by="squash")


@pytest.mark.parametrize(("url", "domain"), [
    ("https://Example.COM/x", "example.com"),
    ("http://bücher.example/", "xn--bcher-kva.example"),
    ("https://user:pw@host.test:8080/", "host.test"),
    ("not a url", "unknown"),
    ("", "unknown"),
    ("file:///etc/passwd", "unknown"),
    ("http://[::1]:80/", "__1"),
])
def test_domain_is_the_host_in_punycode(url: str, domain: str) -> None:
    assert domain_of(url) == domain


def test_view_paths_follow_the_architecture() -> None:
    """A file's path in every view is its path inside the snapshot folder, as it was."""
    sid = PLACE.snapshot_id
    assert view_path("by_timestamp", PLACE, "readability/content.html") == (
        "by_timestamp/1735142400.123/readability/content.html")
    assert view_path("by_domain", PLACE, "index.html") == (
        f"by_domain/example.com/20241225/{sid}/index.html")
    assert view_path("by_domain", PLACE, "wget/a/index.html") == (
        f"by_domain/example.com/20241225/{sid}/wget/a/index.html")
    assert view_path("by_date", PLACE, "wget/i") == (
        f"by_date/20241225/example.com/{sid}/wget/i")
    assert view_path("by_user", PLACE, "wget/i") == (
        f"by_user/squash/20241225/example.com/{sid}/wget/i")
    assert view_path("by_timestamp", PLACE, "wget/i") == (
        "by_timestamp/1735142400.123/wget/i")
    other = replace(PLACE, owns_timestamp=False)
    assert view_path("by_timestamp", other, "wget/i") == (
        "by_timestamp/1735142400.123__019b54ee/wget/i")


@pytest.mark.parametrize("bad", ["", "../x", "a/../../x", "/etc/passwd", "a\x00b", "a//b",
                                 "./a", "a/..", "C:\\x", "x" * 300, "a/" * 600,
                                 "\udcff.html"])
def test_unsafe_relative_paths_are_rejected(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        validate_relative_path(bad)


def test_safe_relative_paths_are_normalized() -> None:
    assert validate_relative_path("a/b c/ünï.html") == "a/b c/ünï.html"
    assert validate_relative_path("a\\b") == "a/b"


def test_link_targets_are_short_enough_to_live_in_the_inode() -> None:
    digest = "ab" * 32
    alias = blob_alias(digest)
    assert len(alias) == 29 and alias == alias.lower()
    assert link_target("by_timestamp/1/wget/index.html", digest) == f"../../.s/{alias}.html"
    assert link_target("by_timestamp/1/wget/LICENSE", digest) == f"../../.s/{alias}"
    # by_timestamp holds the file links when enabled (`file_view`): six folders below the
    # snapshot folder still fits with an extension (the longest adds six bytes).
    deep = "by_timestamp/1735142400.123/wget/example.com/a/b/c/d/index.xhtml"
    assert len(link_target(deep, digest)) < 60
    assert max(map(len, ALIAS_EXTENSIONS)) <= 6


@pytest.mark.parametrize(("name", "ext"), [
    ("index.html", ".html"),
    ("a/b/INDEX.HTM", ".htm"),  # the browser reads extensions in any case: one alias
    ("jquery.min.js", ".js"),
    ("by_timestamp/1/wget/site.css", ".css"),
    ("photo.JPEG", ".jpeg"),
    ("archive.tar.gz", ".gz"),
    ("README", ""),
    (".htaccess", ""),  # a dot-file's name, not an extension
    ("a.b/c", ""),  # the dot is in a folder's name
    ("page.php", ""),  # no type a browser knows by the name: the plain alias
    ("page.html@a=1", ""),  # a crawled page with a query (`captures.views.page_path`)
    ("trailing.", ""),
])
def test_the_alias_extension_is_the_link_names_when_a_browser_reads_it(name: str, ext: str) -> None:
    assert alias_extension(name) == ext


def test_a_content_type_gives_the_extension_a_name_lacks() -> None:
    assert typed_alias_extension("about", "text/html; charset=UTF-8") == ".html"
    assert typed_alias_extension("a/b/app", "application/javascript") == ".js"
    assert typed_alias_extension("page.htm", "text/plain") == ".htm"
    assert typed_alias_extension("about", "application/x-unknown") == ""
    assert typed_alias_extension("about", None) == ""
    assert link_target("by_timestamp/c/h/about", "ab" * 32, ".html").endswith(".html")
    assert link_target("by_timestamp/c/h/about", "ab" * 32) == link_target(
        "by_timestamp/c/h/about", "ab" * 32, "")


def test_each_extension_names_its_own_alias_of_the_blob() -> None:
    digest = "cd" * 32
    plain = blob_alias(digest)
    assert blob_alias(digest, "") == plain
    names = {blob_alias(digest, ext) for ext in ALIAS_EXTENSIONS}
    assert len(names) == len(ALIAS_EXTENSIONS) and plain not in names
    assert all(name.startswith(plain + ".") and "/" not in name[len(plain):] for name in names)
    assert all(ext == ext.lower() and ext.startswith(".") for ext in ALIAS_EXTENSIONS)
    # A content type's extension is one of them too: gc looks for those aliases only.
    assert set(paths._TYPE_EXTENSIONS.values()) <= set(ALIAS_EXTENSIONS)


def test_aliases_are_base32_of_the_first_128_bits_as_existing_stores_have_them() -> None:
    import base64
    import hashlib

    for n in range(300):
        digest = hashlib.sha256(str(n).encode()).hexdigest()
        name = base64.b32encode(bytes.fromhex(digest)[:16]).decode().rstrip("=").lower()
        assert blob_alias(digest) == f"{name[:2]}/{name}"
    assert blob_alias("f" * 64).endswith("/" + "7" * 25 + "4")  # 3 bits + 2 of padding
    assert blob_alias("0" * 64).endswith("/" + "a" * 26)


def test_by_timestamp_holds_the_files_and_the_other_views_link_to_its_folders() -> None:
    assert file_view(["by_domain", "by_date", "by_user", "by_timestamp"]) == "by_timestamp"
    assert file_view(["by_user", "by_date"]) == "by_date"
    assert file_view([]) is None
    sid = PLACE.snapshot_id
    links = dict(folder_links("by_timestamp", ["by_domain", "by_timestamp", "by_user"], PLACE))
    assert links == {
        f"by_domain/example.com/20241225/{sid}": "../../../by_timestamp/1735142400.123",
        f"by_user/squash/20241225/example.com/{sid}":
            "../../../../by_timestamp/1735142400.123"}
    # Each target resolves, from the link's folder, to the file view's snapshot folder.
    for link, target in links.items():
        assert posixpath.normpath(posixpath.join(posixpath.dirname(link), target)) == (
            "by_timestamp/1735142400.123")
