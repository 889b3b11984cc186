"""Every `archive-pipelines` command: the module that defines it, loaded only when the
command runs, and the first sentence of its docstring, which the group's `--help` lists
(tests/cli/test_cli_commands.py keeps each one equal to the command's own)."""

from __future__ import annotations

from archive_pipelines.cli.lazy_group import LazyCommand

COMMANDS = {
    "init": LazyCommand(
        "archive_pipelines.cli.init_command", "init_command",
        "Create the data dir layout, write archive.toml if absent, migrate the catalog."),
    "status": LazyCommand(
        "archive_pipelines.cli.status_command", "status_command",
        "Show catalog counts and schema state."),
    "show": LazyCommand(
        "archive_pipelines.cli.show_command", "show_command",
        "Show a snapshot: its id (ArchiveBox's own id for an adopted one, with or without "
        "dashes, or an 8+ character prefix) or its timestamp."),
    "ingest": LazyCommand(
        "archive_pipelines.cli.ingest_command", "ingest_command",
        "Store every file under DIRECTORY as EXTRACTOR output of the snapshot of --url."),
    "verify": LazyCommand(
        "archive_pipelines.cli.verify_command", "verify_command",
        "Check the store and views against the catalog; exit 1 if problems remain."),
    "rebuild-views": LazyCommand(
        "archive_pipelines.cli.rebuild_command", "rebuild_views_command",
        "Regenerate the symlink views from the catalog."),
    "gc": LazyCommand(
        "archive_pipelines.cli.gc_command", "gc_command",
        "Remove blobs unreferenced for longer than the grace period (primary store only), "
        "and migrated legacy folders (in migrated/) older than it; with --untracked, "
        "untracked blob files older than it too."),
    "update": LazyCommand(
        "archive_pipelines.cli.update_command", "update_command",
        "Adopt an existing ArchiveBox collection, gradually and safely."),
    "migrate-to-cas": LazyCommand(
        "archive_pipelines.cli.migrate_command", "migrate_to_cas_command",
        "Store the files of legacy archive/<timestamp>/ folders in the blob store."),
    "replicate": LazyCommand(
        "archive_pipelines.cli.replication_commands", "replicate_command",
        "Copy under-replicated blobs until each has `replication.retention` copies."),
    "replication-status": LazyCommand(
        "archive_pipelines.cli.replication_commands", "replication_status_command",
        "Copies per store and how many blobs fall short of the retention policy."),
    "scrub": LazyCommand(
        "archive_pipelines.cli.scrub_command", "scrub_command",
        "Read, decode and rehash the copies each store is recorded to hold."),
    "ingest-crawl": LazyCommand(
        "archive_pipelines.cli.ingest_crawl_command", "ingest_crawl_command",
        "Record closed crawl segments (sessions/<day>/<session>/*.jsonl) in the catalog: one "
        "capture per fetch, the bodies as blob references, the segment file as a blob."),
    "captures": LazyCommand(
        "archive_pipelines.cli.captures_command", "captures_command",
        "List the captures of URL, newest first: when, status, body sha256 and size, session, "
        "and a page's title."),
    "captures qa": LazyCommand(
        "archive_pipelines.cli.captures_qa_command", "captures_qa_command",
        "Check a browser capture of URL against its replay: screenshots and resources."),
    "compact-crawls": LazyCommand(
        "archive_pipelines.cli.compact_command", "compact_crawls_command",
        "Rewrite old crawl sessions into one zstd JSON-lines file each, plus an offset index "
        "(sessions/compacted/); captures then point into it."),
    "export-warc": LazyCommand(
        "archive_pipelines.cli.export_command", "export_warc_command",
        "Write the captures (or those of a session, URL prefix or time window) to a WARC 1.1 "
        "file or a WACZ package."),
    "import-warc": LazyCommand(
        "archive_pipelines.cli.import_command", "import_warc_command",
        "Import WARC and WACZ files: each stored as it is, every body once, every HTTP "
        "capture looked up by `captures`."),
    "index-warcs": LazyCommand(
        "archive_pipelines.cli.index_warcs_command", "index_warcs_command",
        "Index the WARCs inside snapshots (warc/*.warc, warc/*.warc.gz) so `captures URL` "
        "finds what they hold."),
    "crawls": LazyCommand(
        "archive_pipelines.cli.crawls_command", "crawls_command",
        "List the crawl definitions ([[crawls]] in archive.toml) and their crawls, queue one, "
        "or show one."),
    "replay": LazyCommand(
        "archive_pipelines.cli.replay_command", "replay_command",
        "Serve archived pages as they were, at /web/<timestamp>/<url>, until interrupted."),
}
