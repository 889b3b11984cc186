"""The order of the syscalls that publish a blob in a local store, seen by strace.

A blob is written under a temp name, fsynced, given its final name (renameat2, or link +
unlink where renameat2 is missing), and then its folder is fsynced: before that last fsync
a power cut can lose the new name although the caller was told the blob is stored. In
deferred mode (ingest, the crawler, replication batches) the per-file fsyncs are skipped
and one syncfs of the store's filesystem, by `sync()` / `sync_pending()`, must follow the
rename instead. No test that only looks at files after the fact can see any of this; a
syscall trace can.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

STRACE = shutil.which("strace")

# Puts one new blob into a fresh LocalBlobStore, then prints its hash and final path.
_PUT = """
import json, sys
from pathlib import Path
from archive_pipelines.blobstore import LocalBlobStore

root, way, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode == "link":  # as on a kernel or libc without renameat2: link + unlink
    from archive_pipelines.blobstore import local_files
    local_files._renameat2 = None
data = b"<p>one blob, published once</p>" * 40
source = root.parent / "source.html"
source.write_bytes(data)
store = LocalBlobStore(root, codec="raw")
put = {
    "put_bytes": lambda: store.put_bytes(data),
    "put_file": lambda: store.put_file(source),
    "put_file_hardlink": lambda: store.put_file(source, allow_hardlink=True),
    "put_verified_bytes": lambda: store.put_verified_bytes(
        __import__("hashlib").sha256(data).hexdigest(), data),
}[way]
if mode == "deferred":
    with store.deferred_sync():
        result = put()
    store.sync_pending()
else:
    result = put()
assert result.created, result
print(json.dumps({"sha256": result.sha256, "final": str(store.local_path(result.sha256))}))
"""

WAYS = ["put_bytes", "put_file", "put_file_hardlink", "put_verified_bytes"]
_CALL = re.compile(r"^\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_PUBLISHING = {"rename", "renameat", "renameat2", "link", "linkat"}


@dataclass(frozen=True)
class Call:
    index: int
    name: str
    paths: list[str]  # the quoted path arguments, in order
    args: str
    result: int


@dataclass(frozen=True)
class Trace:
    calls: list[Call]
    opened: dict[int, tuple[str, str]]  # call index of an fsync/syncfs -> (path, open flags)

    def publishing(self, final: str) -> Call:
        """The one successful call that gave `final` its name."""
        found = [c for c in self.calls if c.name in _PUBLISHING and c.result == 0
                 and c.paths[-1:] == [final]]
        assert len(found) == 1, f"expected one rename/link to {final}, got {found}"
        return found[0]

    def syncs_of(self, path: str, *, names: tuple[str, ...] = ("fsync", "fdatasync")
                 ) -> list[tuple[int, str]]:
        """(call index, open flags) of every successful sync of a descriptor opened on `path`."""
        return [(c.index, self.opened[c.index][1]) for c in self.calls
                if c.name in names and c.result == 0 and self.opened.get(c.index, ("",))[0] == path]


def _parse(text: str) -> Trace:
    calls: list[Call] = []
    fds: dict[int, tuple[str, str]] = {}
    opened: dict[int, tuple[str, str]] = {}
    for line in text.splitlines():
        match = _CALL.match(line)
        if match is None:
            continue  # signals, exits, unfinished/resumed halves
        name, args, result = match.group(1), match.group(2), int(match.group(3))
        call = Call(len(calls), name, _STRING.findall(args), args, result)
        calls.append(call)
        if name in ("open", "openat", "creat") and result >= 0 and call.paths:
            fds[result] = (call.paths[0], args)  # a reused number: the old one was closed
        elif name in ("fsync", "fdatasync", "syncfs") and result == 0:
            fd = int(args.split(",")[0])
            if fd in fds:
                opened[call.index] = fds[fd]
    return Trace(calls, opened)


def _traced_put(tmp_path: Path, way: str, mode: str) -> tuple[Trace, str]:
    if STRACE is None:
        pytest.skip("strace is not installed: the publish order cannot be observed")
    probe = subprocess.run([STRACE, "-f", "-o", os.devnull, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here (ptrace not permitted?): {probe.stderr.strip()}")
    log = tmp_path / "trace"
    done = subprocess.run(
        [STRACE, "-f", "-e", "trace=%file,fsync,fdatasync,syncfs,sync", "-e", "signal=none",
         "-o", str(log), sys.executable, "-c", _PUT, str(tmp_path / "store"), way, mode],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.strip().splitlines()[-1])["final"]
    return _parse(log.read_text()), final


@pytest.mark.parametrize(("way", "mode"), [*((way, "rename") for way in WAYS),
                                          ("put_file", "link"), ("put_verified_bytes", "link")])
def test_temp_fsynced_then_renamed_then_folder_fsynced(tmp_path: Path, way: str, mode: str
                                                       ) -> None:
    trace, final = _traced_put(tmp_path, way, mode)
    published = trace.publishing(final)
    temp = published.paths[0]
    assert (published.name in ("link", "linkat")) == (mode == "link"), published
    assert temp != final and Path(temp).name.endswith(".tmp")
    # The bytes are durable before the name points at them...
    assert [i for i, _flags in trace.syncs_of(temp) if i < published.index], (
        f"{way}: the temp file {temp} was never fsynced before {published.name}")
    # ...and the new name is durable after it: an fsync of the final folder itself.
    folder = str(Path(final).parent)
    after = [(i, flags) for i, flags in trace.syncs_of(folder) if i > published.index]
    assert after, f"{way}: no fsync of {folder} after {published.name} published {final}"
    assert all("O_DIRECTORY" in flags for _i, flags in after)


@pytest.mark.parametrize("way", ["put_bytes", "put_file"])
def test_deferred_mode_syncs_the_filesystem_after_the_rename(tmp_path: Path, way: str) -> None:
    """`sync_pending()` after a deferred put (what an ingest batch does before it commits)
    flushes the store's filesystem once, after the rename."""
    trace, final = _traced_put(tmp_path, way, "deferred")
    published = trace.publishing(final)
    device = os.stat(final).st_dev
    flushes = [c for c in trace.calls if c.index > published.index and c.result == 0 and (
        c.name == "sync" or (c.name == "syncfs" and c.index in trace.opened
                             and os.stat(trace.opened[c.index][0]).st_dev == device))]
    assert flushes, f"{way}: nothing flushed the store's filesystem after {published.name}"
