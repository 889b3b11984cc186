"""`write_aged07`: plan, run, and write an aged ArchiveBox 0.7.2 collection to disk."""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

from archive_testkit.archivebox.aged07.django_sqlite import write_sqlite
from archive_testkit.archivebox.aged07.history import archive_history
from archive_testkit.archivebox.aged07.index_json import index_document
from archive_testkit.archivebox.aged07.model import Collection07, Snapshot07, SnapshotPlan
from archive_testkit.archivebox.aged07.outputs import build_files
from archive_testkit.archivebox.aged07.planning import plan_snapshots
from archive_testkit.archivebox.aged07.snapshot_page import snapshot_page
from archive_testkit.archivebox.folders import FolderWriter
from archive_testkit.archivebox.index_sqlite import SQLITE_NAME
from archive_testkit.archivebox.layouts import Aged07

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


def _write_top_level(writer: FolderWriter, rng: random.Random, plans: list[SnapshotPlan]) -> None:
    secret = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)") for _ in range(50))
    config = (
        _CONFIG_HEADER
        + f"[SERVER_CONFIG]\nSECRET_KEY = {secret}\n\n[ARCHIVE_METHOD_OPTIONS]\nTIMEOUT = 60\n\n"
    )
    writer.write("ArchiveBox.conf", config.encode())
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
        writer.write(f"sources/{name}", text.encode(), mtime=members[0].added)
    last = max(plan.db_updated or plan.added for plan in plans)
    log = (
        f"[{last.strftime('%Y-%m-%d %H:%M:%S')},512] django.request WARNING Not Found: /favicon.ico\n"
        f"[{last.strftime('%Y-%m-%d %H:%M:%S')},940] django.server ERROR "
        '"GET /archive/missing/ HTTP/1.1" 404 1337\n'
    )
    writer.write("logs/errors.log", log.encode(), mtime=last)


def write_aged07(root: Path, layout: Aged07, *, snapshots: int, seed: int) -> Collection07:
    """Write an ArchiveBox 0.7.2 collection of `snapshots` folders under `root`; see the package doc."""
    if snapshots < 1:
        raise ValueError("snapshots must be at least 1")
    rng = random.Random(seed)
    root = Path(root)
    writer = FolderWriter(root)
    writer.mkdir("archive")
    plans = plan_snapshots(rng, snapshots, layout.orphans)
    archive_history(rng, plans)
    for plan in plans:
        build_files(rng, plan, layout.files_per_snapshot)
    if layout.with_sqlite:
        write_sqlite(root / SQLITE_NAME, plans)
    out: list[Snapshot07] = []
    for plan in plans:
        folder = f"archive/{plan.timestamp}"
        for name, data in sorted(plan.files.items()):
            writer.write(f"{folder}/{name}", data, mtime=plan.mtime)
        for name in plan.empty_dirs:
            writer.mkdir(f"{folder}/{name}")
        document = index_document(plan)
        size = sum(len(data) for data in plan.files.values())
        names = sorted(plan.files)
        if layout.write_index_json:
            text = json.dumps(document, indent=4, sort_keys=True)
            writer.write(f"{folder}/index.json", text.encode("utf-8"), mtime=plan.mtime)
            names.append("index.json")
        writer.write(f"{folder}/index.html", snapshot_page(plan, document, size), mtime=plan.mtime)
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
                        "id": result.row_id if layout.with_sqlite and plan.in_sqlite else None,
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
    _write_top_level(writer, rng, plans)
    return Collection07(
        root=root, snapshots=out, write_index_json=layout.write_index_json, with_sqlite=layout.with_sqlite
    )
