"""Storage commands as a person runs them."""

import hashlib
import os
import re
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli


def test_ingest_verify_rebuild_gc_round_trip(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    src = tmp_path / "site"
    (src / "static").mkdir(parents=True)
    (src / "index.html").write_text("<html>hi</html>")
    (src / "static" / "app.js").write_text("js" * 100)
    for n in (1, 2):
        done = run_cli("--data-dir", str(data), "ingest", "--url", f"https://a.test/{n}",
                       "--timestamp", f"{n}.0", "--user", "alice", "wget", str(src))
        assert done.returncode == 0, done.stderr
    assert "deduplicated 2" in done.stdout
    by_user = data / "archive" / "by_user" / "alice"
    assert any("app.js" in files for _dir, _dirs, files in os.walk(by_user, followlinks=True))

    verify = run_cli("--data-dir", str(data), "verify")
    assert verify.returncode == 0 and "healthy" in verify.stdout
    (data / "archive" / "by_timestamp" / "1.0" / "wget" / "index.html").unlink()
    broken = run_cli("--data-dir", str(data), "verify")
    assert broken.returncode == 1 and "missing_links" in broken.stdout
    fixed = run_cli("--data-dir", str(data), "verify", "--fix")
    assert fixed.returncode == 0 and "fixed 1" in fixed.stdout

    rebuilt = run_cli("--data-dir", str(data), "rebuild-views", "--clean", "--view", "by_date")
    assert rebuilt.returncode == 0 and "2 links" in rebuilt.stdout
    gc = run_cli("--data-dir", str(data), "gc", "--dry-run")
    assert gc.returncode == 0 and "unreferenced blobs past the grace: 0;" in gc.stdout


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_cli("--data-dir", str(data), "init")
    bad_view = run_cli("--data-dir", str(data), "verify", "--view", "by_colour")
    assert bad_view.returncode == 2 and "by_colour" in bad_view.stderr
    both = run_cli("--data-dir", str(data), "migrate-to-cas", "--dry-run", "--cleanup-legacy")
    assert both.returncode == 2 and "exclude each other" in both.stderr
    missing = run_cli("--data-dir", str(data), "ingest", "--url", "https://x.test/", "wget",
                      str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_replicate_and_status(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(
        '[replication]\nretention = 2\n[[stores]]\nname = "primary"\npath = "cas"\n'
        'codec = "raw"\n[[stores]]\nname = "copy"\npath = "replicas/copy"\ncodec = "zstd"\n')
    run_cli("--data-dir", str(data), "init")
    src = tmp_path / "site"
    src.mkdir()
    for i in range(3):
        (src / f"{i}.html").write_text(f"page {i}" * 100)
    run_cli("--data-dir", str(data), "ingest", "--url", "https://a.test/", "wget", str(src))
    short = run_cli("--data-dir", str(data), "replication-status")
    assert short.returncode == 1 and "3 under-replicated" in short.stdout
    done = run_cli("--data-dir", str(data), "replicate")
    assert done.returncode == 0, done.stderr
    assert "3 copies made" in done.stdout and "copy: 3" in done.stdout
    status = run_cli("--data-dir", str(data), "replication-status")
    assert status.returncode == 0 and "0 under-replicated" in status.stdout


def test_ingest_hardlinks_by_default_and_copies_with_copy(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    for n, flags in ((1, ()), (2, ("--copy",))):
        src = tmp_path / f"site{n}"
        src.mkdir()
        page = src / "index.html"
        page.write_text(f"<html>{n}</html>")
        page.chmod(0o644)
        done = run_cli("--data-dir", str(data), "ingest", "--url", f"https://a.test/{n}",
                       "--timestamp", f"{n}.0", *flags, "wget", str(src))
        assert done.returncode == 0, done.stderr
        stored = (data / "archive" / "by_timestamp" / f"{n}.0" / "wget" / "index.html").resolve()
        assert stored.read_text() == f"<html>{n}</html>"
        if flags:  # a copy: the source is left as it was
            assert not os.path.samefile(stored, page) and page.stat().st_mode & 0o777 == 0o644
        else:  # one inode, now read-only for everyone
            assert os.path.samefile(stored, page) and page.stat().st_mode & 0o777 == 0o444


@pytest.mark.parametrize(("url", "reason"), [
    ("example.org", "not an absolute URL (no scheme)"),
    ("example.org:8080/page", "not an absolute URL (no scheme)"),
    ("ftp://example.org/file", "unsupported scheme 'ftp' (only http and https)"),
    ("https://", "URL has no host"),
])
def test_ingest_refuses_a_url_without_http_scheme_and_host(tmp_path: Path, url: str,
                                                           reason: str) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    src = tmp_path / "site"
    src.mkdir()
    (src / "index.html").write_text("<html>hi</html>")
    done = run_cli("--data-dir", str(data), "ingest", "--url", url, "wget", str(src))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"archive-pipelines: error: bad --url {url!r}: {reason}"
        + ("; give it with http:// or https://" if "no scheme" in reason else "")]
    assert not (data / "archive" / "by_domain").exists()  # no by_domain/unknown/
    assert "snapshots       0" in run_cli("--data-dir", str(data), "status").stdout


def test_ingest_files_a_given_timestamp_under_its_day(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    src = tmp_path / "site"
    src.mkdir()
    (src / "index.html").write_text("<html>hi</html>")
    done = run_cli("--data-dir", str(data), "ingest", "--url", "https://example.com/",
                   "--timestamp", "1700000000", "wget", str(src))  # 2023-11-14 22:13:20 UTC
    assert done.returncode == 0, done.stderr
    archive = data / "archive"
    assert [p.name for p in (archive / "by_domain" / "example.com").iterdir()] == ["20231114"]
    assert [p.name for p in (archive / "by_date").iterdir()] == ["20231114"]
    [snapshot] = (archive / "by_domain" / "example.com" / "20231114").iterdir()
    assert (snapshot / "wget" / "index.html").read_text() == "<html>hi</html>"
    assert (archive / "by_timestamp" / "1700000000" / "wget" / "index.html").exists()


@pytest.mark.parametrize(("timestamp", "reason"), [
    ("yesterday", "expected unix seconds"),
    ("2023-11-14", "expected unix seconds"),
    ("-5", "expected unix seconds"),
    ("99999999999999999999", "after the year 9999"),
])
def test_ingest_refuses_a_bad_timestamp(tmp_path: Path, timestamp: str, reason: str) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    src = tmp_path / "site"
    src.mkdir()
    (src / "index.html").write_text("<html>hi</html>")
    done = run_cli("--data-dir", str(data), "ingest", "--url", "https://example.com/",
                   "--timestamp", timestamp, "wget", str(src))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"bad --timestamp {timestamp!r}: {reason}" in lines[0], lines
    assert "snapshots       0" in run_cli("--data-dir", str(data), "status").stdout


def _tree(data: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every path under the data dir but the catalog's files: (mode, size, nlink, inode)."""
    listing = {}
    for dirpath, dirs, files in os.walk(data):
        for name in dirs + files:
            if not name.startswith("catalog.sqlite3"):
                st = os.lstat(os.path.join(dirpath, name))
                listing[os.path.join(dirpath, name)] = (st.st_mode, st.st_size, st.st_nlink,
                                                        st.st_ino)
    return listing


ITEM = re.compile(r"^  (would remove|would unlink|removed|unlinked) (blob|untracked|folder) "
                  r"(\S+) \(([^)]*)\)$")


def _items(output: str) -> set[tuple[str, str, str, str]]:
    """The --list lines, the dry run's verbs put in the real run's words."""
    verbs = {"would remove": "removed", "would unlink": "unlinked"}
    found = set()
    for line in output.splitlines():
        if match := ITEM.match(line):
            verb, kind, name, detail = match.groups()
            found.add((verbs.get(verb, verb), kind, name, detail))
    return found


def test_gc_dry_run_says_what_the_real_run_removes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cli = ("--data-dir", str(data))
    assert run_cli(*cli, "init").returncode == 0

    def ingest(url: str, files: dict[str, str], *flags: str) -> None:
        site = tmp_path / f"site{len(list(tmp_path.glob('site*')))}"
        for rel, text in files.items():
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_text(text)
        done = run_cli(*cli, "ingest", "--url", url, "--timestamp", "1.0", *flags, "wget",
                       str(site))
        assert done.returncode == 0, done.stderr

    # Hard-linked, then replaced: the old blob's inode lives on in site0/index.html.
    ingest("https://a.test/", {"index.html": "<html>v1</html>", "app.js": "js"})
    ingest("https://a.test/", {"index.html": "<html>v2</html>", "app.js": "js"})
    # Copied, then replaced: removing the old blob frees its bytes.
    ingest("https://b.test/", {"page.html": "page one"}, "--copy")
    ingest("https://b.test/", {"page.html": "page two"}, "--copy")
    untracked = b"left by a crashed ingest"
    digest = hashlib.sha256(untracked).hexdigest()
    leaf = data / "cas" / "sha256" / digest[:2] / digest[2:4]
    leaf.mkdir(parents=True, exist_ok=True)
    (leaf / digest).write_bytes(untracked)
    moved = data / "migrated" / "20240101" / "1600000000.1"
    moved.mkdir(parents=True)
    (moved / "index.html").write_text("legacy")

    before = _tree(data)
    dry = run_cli(*cli, "gc", "--grace-hours", "0", "--untracked", "--dry-run", "--list")
    assert dry.returncode == 0, dry.stderr
    assert _tree(data) == before  # the dry run changed nothing
    real = run_cli(*cli, "gc", "--grace-hours", "0", "--untracked", "-v")
    assert real.returncode == 0, real.stderr

    v1, one = (hashlib.sha256(t).hexdigest() for t in (b"<html>v1</html>", b"page one"))
    expected = {("unlinked", "blob", v1, "15 B, still held by another path"),
                ("removed", "blob", one, "8 B"),
                ("removed", "untracked", digest, "24 B"),
                ("removed", "folder", str(moved), "6 B")}
    assert _items(dry.stdout) == _items(real.stdout) == expected
    assert dry.stdout.startswith("dry run: nothing is changed\n")
    assert ("unreferenced blobs past the grace: 2; would remove 1 (8 B would be freed), "
            "would unlink 1 (still held by another path, 15 B not freed)") in dry.stdout
    assert "untracked blob files: would remove 1 (24 B would be freed)" in dry.stdout
    assert "migrated legacy folders: would remove 1 (6 B would be freed)" in dry.stdout
    assert "total: 38 B would be freed" in dry.stdout
    assert ("unreferenced blobs past the grace: 2; removed 1 (8 B freed), unlinked 1 (still "
            "held by another path, 15 B not freed)") in real.stdout
    assert "untracked blob files: removed 1 (24 B freed)" in real.stdout
    assert "total: 38 B freed" in real.stdout
    assert (tmp_path / "site0" / "index.html").read_text() == "<html>v1</html>"
    assert not (leaf / digest).exists() and not moved.exists()

    again = run_cli(*cli, "gc", "--grace-hours", "0", "--untracked", "--dry-run", "--list")
    assert _items(again.stdout) == set() and "total: 0 B would be freed" in again.stdout
    assert "untracked blob files: not checked (--untracked)" in run_cli(
        *cli, "gc", "--dry-run").stdout
    assert run_cli(*cli, "verify").returncode == 0


def test_verify_deep_finds_a_blob_edited_through_its_hard_linked_legacy_path(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    cli = ("--data-dir", str(data))
    assert run_cli(*cli, "init").returncode == 0
    site = tmp_path / "site"
    site.mkdir()
    legacy = site / "index.html"
    legacy.write_bytes(b"<html>as archived</html>")
    done = run_cli(*cli, "ingest", "--url", "https://a.test/", "--timestamp", "1.0", "wget",
                   str(site))  # hard-links by default
    assert done.returncode == 0, done.stderr
    digest = hashlib.sha256(b"<html>as archived</html>").hexdigest()
    blob = data / "cas" / "sha256" / digest[:2] / digest[2:4] / digest
    assert os.stat(legacy).st_ino == os.stat(blob).st_ino

    legacy.chmod(legacy.stat().st_mode | 0o200)  # u+w
    with open(legacy, "r+b") as handle:
        handle.write(b"<html>EDITED  it</html>!")
    assert os.stat(blob).st_size == len(b"<html>as archived</html>")

    shallow = run_cli(*cli, "verify")  # existence only: it may not notice, and does not
    assert shallow.returncode == 0 and "healthy" in shallow.stdout
    deep = run_cli(*cli, "verify", "--deep")
    assert deep.returncode == 1
    assert re.search(r"corrupt_blob_files +1", deep.stdout) and f"    {digest}" in deep.stdout
    assert "1 problem(s) left" in deep.stdout
    help_text = " ".join(run_cli(*cli, "verify", "--help").stdout.split())
    assert "Re-read and hash every referenced blob" in help_text
    assert "Without it only the existence of each blob file is checked" in help_text


def test_a_second_url_at_the_same_timestamp_never_takes_the_first_ones_folder(tmp_path: Path) -> None:
    """by_timestamp/<ts> stays with the snapshot that had it: its links stay right."""
    data = tmp_path / "data"
    cli = ("--data-dir", str(data))
    assert run_cli(*cli, "init").returncode == 0
    for n, url in enumerate(("https://a.test/", "https://b.test/", "https://c.test/")):
        site = tmp_path / f"site{n}"
        site.mkdir()
        (site / "page.html").write_text(f"page of {url}")
        done = run_cli(*cli, "ingest", "--url", url, "--timestamp", "1.0", "wget", str(site))
        assert done.returncode == 0, done.stderr
    owner = data / "archive" / "by_timestamp" / "1.0" / "wget" / "page.html"
    assert owner.read_text() == "page of https://a.test/"
    verify = run_cli(*cli, "verify")
    assert verify.returncode == 0 and "healthy" in verify.stdout, verify.stdout
