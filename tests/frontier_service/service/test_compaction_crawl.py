"""Compaction under kill -9 loses no URL: a crawl that punches its frontier files every
few milliseconds is killed twice mid-crawl, the second time losing its Redis too (the
last run rebuilds it from the compacted files), and run again; every page of the site is
fetched and recorded, and the files were compacted."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from frontier_service.archiving import iter_records
from frontier_service.cli import main
from frontier_service.frontier.checkpoint import OffsetCheckpoint, checkpoint_dir
from frontier_service.frontier.compaction import read_seen
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.frontier_record import FrontierRecord
from tests.frontier_service.service.cli_runs import finish, start, wait_for_pages
from tests.frontier_service.service.tree_site import C_LINKS, serve_tree
from tests.helpers.crawls import delete_keys

HOSTS = [f"t{i}.test" for i in range(6)]
WIDE, DEEP = 6, 6


def tree_paths() -> set[str]:
    paths = {"/"}
    for a in range(WIDE):
        paths.add(f"/a{a}")
        for b in range(DEEP):
            paths.add(f"/a{a}/b{b}")
            paths |= {f"/a{a}/b{b}/c{c}" for c in range(C_LINKS)}
    return paths


def test_compaction_under_kill_9_loses_no_url(tmp_path: Path, redis_url: str,
                                              crawl_name: str) -> None:
    data = tmp_path / "data"
    with serve_tree(wide=WIDE, deep=DEEP) as site:
        args = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name,
                "run", "--host-map", f"*.test=127.0.0.1:{site.port}",
                "--allow-network", "127.0.0.0/8", "--max-depth", "3", "--min-delay", "0.005",
                "--concurrency", "8", "--checkpoint-seconds", "0.1", "--compact-bytes", "1",
                "--compact-seconds", "0.02", "--lease-seconds", "1", "--no-assets",
                "--loop", "asyncio", "--exit-when-idle", "1.5"]
        for host in HOSTS:
            args += ["--allowed-domain", host, "--seed", f"http://{host}/"]
        expected = {f"http://{host}{path}" for host in HOSTS for path in tree_paths()}
        for kill_at in (len(expected) // 4, len(expected) // 2):
            process, port = start(args)
            wait_for_pages(process, port, kill_at, timeout=60)
            os.kill(process.pid, signal.SIGKILL)
            process.communicate(timeout=10)
        delete_keys(redis_url, crawl_name)  # the next run rebuilds Redis from disk
        process, port = start(args)
        code, summary, err = finish(process, timeout=90)
    assert code == 0 and summary["stopped"] == "frontier exhausted", err[-3000:]
    assert "rebuil" in err.lower(), err[-3000:]

    recorded = {str(r["page_url"]) for r in iter_records(data / "sessions")}
    missing = expected - recorded
    assert not missing, f"{len(missing)} pages never fetched, e.g. {sorted(missing)[:3]}"
    # The files were compacted: their prefixes are holes, their fingerprints kept.
    files = FrontierFiles(data)
    for host in HOSTS:
        path = files.path_for(host)
        assert path.stat().st_size > 0 and len(read_seen(path)) > 0, host
        assert files.read_from(host, 0, 10_000)[0] == []  # all consumed
    assert files.corrupt_lines == 0
    files.close()


@pytest.mark.unit
def test_compact_command_dry_run_then_compact(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    files = FrontierFiles(data)
    records = [FrontierRecord(f"http://a.test/page{i}", 1, 1.0, 1) for i in range(3000)]
    for i in range(0, len(records), 100):
        files.append("a.test", records[i:i + 100])
    _, offset = files.read_from("a.test", 0, 2500)
    files.close()
    checkpoint = OffsetCheckpoint(checkpoint_dir(data, "crawl"), "s1")
    checkpoint.advance("a.test", offset, 2500)
    checkpoint.close()
    path = files.path_for("a.test")
    blocks = path.stat().st_blocks

    assert main(["--data-dir", str(data), "compact", "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["files"] == 1 and dry["bytes_freed"] > 40_000 and path.stat().st_blocks == blocks
    assert dry["frontier_disk_bytes"] == dry["frontier_disk_bytes_before"] == blocks * 512

    assert main(["--data-dir", str(data), "compact"]) == 0
    out = capsys.readouterr().out
    assert f"freed {dry['bytes_freed']:,} disk bytes in 1 frontier files" in out
    assert path.stat().st_blocks * 512 == blocks * 512 - dry["bytes_freed"]
    assert main(["--data-dir", str(tmp_path / "none"), "compact"]) == 2  # one clear error
