"""`generate_archivebox07`: plan, run, and write a collection to disk."""

from __future__ import annotations

import html
import json
import os
import random
from datetime import datetime
from pathlib import Path

from archive_testkit.archivebox07.history import archive_history
from archive_testkit.archivebox07.index_json import index_document
from archive_testkit.archivebox07.model import SQLITE_NAME, Collection07, Snapshot07, SnapshotPlan
from archive_testkit.archivebox07.outputs import build_files
from archive_testkit.archivebox07.planning import plan_snapshots
from archive_testkit.archivebox07.snapshot_page import snapshot_page
from archive_testkit.archivebox07.sqlite import write_sqlite

_CONFIG_HEADER = """# This is the config file for your ArchiveBox collection.
#
# You can add options here manually in INI format, or automatically by running:
#    archivebox config --set KEY=VALUE
#
# If you modify this file manually, make sure to update your archive after by running:
#    archivebox init
#
# A list of all possible config with documentation and examples can be found here:
#    https://github.com/ArchiveBox/ArchiveBox/wiki/Configuration

"""


def _write(path: Path, data: bytes, when: datetime | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if when is not None:
        stamp = when.timestamp()
        os.utime(path, (stamp, stamp))


def _write_top_level(root: Path, rng: random.Random, plans: list[SnapshotPlan]) -> None:
    secret = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)") for _ in range(50))
    config = (
        _CONFIG_HEADER
        + f"[SERVER_CONFIG]\nSECRET_KEY = {secret}\n\n[ARCHIVE_METHOD_OPTIONS]\nTIMEOUT = 60\n\n"
    )
    _write(root / "ArchiveBox.conf", config.encode())
    by_source: dict[str, list[SnapshotPlan]] = {}
    for plan in plans:
        by_source.setdefault(plan.source, []).append(plan)
    for source, members in sorted(by_source.items()):
        name = source.rsplit("/", 1)[-1]
        if members[0].batch in ("legacy", "bookmarks", "orphan"):
            lines = [
                "<!DOCTYPE NETSCAPE-Bookmark-file-1>",
                "<TITLE>Bookmarks</TITLE>",
                "<H1>Bookmarks</H1>",
                "<DL><p>",
            ]
            for plan in members:
                stamp = int(float(plan.timestamp))
                lines.append(
                    f'    <DT><A HREF="{html.escape(plan.url)}" ADD_DATE="{stamp}">'
                    f"{html.escape(plan.title or plan.url)}</A>"
                )
            lines.append("</DL><p>")
            text = "\n".join(lines) + "\n"
        else:
            text = "\n".join(plan.url for plan in members) + "\n"
        _write(root / "sources" / name, text.encode(), members[0].added)
    last = max(plan.db_updated or plan.added for plan in plans)
    log = (
        f"[{last.strftime('%Y-%m-%d %H:%M:%S')},512] django.request WARNING Not Found: /favicon.ico\n"
        f"[{last.strftime('%Y-%m-%d %H:%M:%S')},940] django.server ERROR "
        '"GET /archive/missing/ HTTP/1.1" 404 1337\n'
    )
    _write(root / "logs" / "errors.log", log.encode(), last)


def generate_archivebox07(
    root: Path,
    *,
    snapshots: int,
    seed: int = 0,
    files_per_snapshot: int = 50,
    with_sqlite: bool = True,
    write_index_json: bool = True,
    orphans: int = 0,
) -> Collection07:
    """Write an ArchiveBox 0.7.2 collection of `snapshots` folders under `root`; see the module doc.

    `write_index_json=False` leaves out every folder's index.json (SQLite and index.html only);
    `with_sqlite=False` leaves out index.sqlite3; `orphans` folders (at most about a quarter)
    repeat a live snapshot's URL at an older timestamp without a SQLite row.
    """
    if snapshots < 1:
        raise ValueError("snapshots must be at least 1")
    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "archive").mkdir(exist_ok=True)
    plans = plan_snapshots(rng, snapshots, orphans)
    archive_history(rng, plans)
    for plan in plans:
        build_files(rng, plan, files_per_snapshot)
    if with_sqlite:
        write_sqlite(root / SQLITE_NAME, plans)
    out: list[Snapshot07] = []
    for plan in plans:
        folder = root / "archive" / plan.timestamp
        for name, data in sorted(plan.files.items()):
            _write(folder / name, data, plan.mtime)
        for name in plan.empty_dirs:
            (folder / name).mkdir(parents=True, exist_ok=True)
        document = index_document(plan)
        size = sum(len(data) for data in plan.files.values())
        names = sorted(plan.files)
        if write_index_json:
            text = json.dumps(document, indent=4, sort_keys=True)
            _write(folder / "index.json", text.encode("utf-8"), plan.mtime)
            names.append("index.json")
        _write(folder / "index.html", snapshot_page(plan, document, size), plan.mtime)
        names.append("index.html")
        out.append(
            Snapshot07(
                timestamp=plan.timestamp,
                snapshot_id=str(plan.snapshot_uuid),
                url=plan.url,
                title=plan.title,
                added=plan.added,
                updated=plan.db_updated,
                tags=plan.tags,
                results=[
                    {
                        "id": result.row_id if with_sqlite and plan.in_sqlite else None,
                        "uuid": str(result.uuid),
                        "extractor": result.extractor,
                        "cmd": list(result.cmd),
                        "pwd": result.pwd,
                        "cmd_version": result.cmd_version,
                        "output": result.db_output,
                        "json_output": result.json_output,
                        "status": result.status,
                        "start_ts": result.start,
                        "end_ts": result.end,
                        "index_texts": result.index_texts,
                    }
                    for result in plan.results
                ],
                in_sqlite=plan.in_sqlite,
                files=tuple(sorted(names)),
                wget_path=plan.main_rel if "wget" in plan.present else None,
                empty_dirs=tuple(sorted(set(plan.empty_dirs))),
            )
        )
    _write_top_level(root, rng, plans)
    return Collection07(root=root, snapshots=out, write_index_json=write_index_json, with_sqlite=with_sqlite)
