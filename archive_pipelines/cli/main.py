"""Entry point: the command group, shared options, and one-line error handling."""

from __future__ import annotations

import gc
import sys

import click

from archive_pipelines import __version__
from archive_pipelines.cli.capture_commands import (
    captures_command,
    compact_crawls_command,
    ingest_crawl_command,
)
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.init_status import init_command, status_command
from archive_pipelines.cli.replication_commands import (
    replicate_command,
    replication_status_command,
)
from archive_pipelines.cli.runner import run_group
from archive_pipelines.cli.scrub_command import scrub_command
from archive_pipelines.cli.show_command import show_command
from archive_pipelines.cli.storage_commands import (
    gc_command,
    ingest_command,
    migrate_to_cas_command,
    rebuild_views_command,
    verify_command,
)
from archive_pipelines.cli.update_command import update_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    envvar="ARCHIVE_DATA_DIR",
    default=None,
    metavar="DIR",
    help="The data directory (default: $ARCHIVE_DATA_DIR or ./data).",
)
@click.version_option(__version__, prog_name="archive-pipelines")
@click.pass_context
def cli(ctx: click.Context, data_dir: str | None) -> None:
    """archive-pipelines: store web archives once, browse them as folders, keep N copies."""
    ctx.obj = CliContext(data_dir=data_dir)
    ctx.call_on_close(ctx.obj.close)  # also when the command fails or is interrupted


cli.add_command(init_command)
cli.add_command(status_command)
cli.add_command(scrub_command)
for _command in (ingest_command, verify_command, rebuild_views_command, migrate_to_cas_command,
                 gc_command, replicate_command, replication_status_command, update_command,
                 show_command, ingest_crawl_command, captures_command, compact_crawls_command):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; `ArchiveError`s become one line on stderr and exit status 2."""
    # Everything imported so far lives as long as the process: keep the collector off it.
    gc.freeze()
    return run_group(cli, "archive-pipelines", argv)


if __name__ == "__main__":
    sys.exit(main())
