"""Entry point: the command group, shared options, and one-line error handling."""

from __future__ import annotations

import gc
import sys

import click

from archive_pipelines import __version__
from archive_pipelines.cli.commands import COMMANDS
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.group_runner import run_group
from archive_pipelines.cli.lazy_group import LazyGroup


@click.group(cls=LazyGroup, lazy_commands=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
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
    _collect_again()  # the command's module is imported by now (LazyGroup.resolve_command)
    ctx.obj = CliContext(data_dir=data_dir)
    ctx.call_on_close(ctx.obj.close)  # also when the command fails or is interrupted


def _collect_again() -> None:
    """Turn the collector back on if `main` turned it off, with everything imported so far
    frozen out of its sight: those objects live as long as the process."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; `ArchiveError`s become one line on stderr and exit status 2."""
    # Imports make many objects and next to no garbage: the collector would run ~150 times
    # (~0.1 s) while the command's modules load. It is off until then (`_collect_again`).
    gc.disable()
    try:
        return run_group(cli, "archive-pipelines", argv)
    finally:
        gc.enable()


if __name__ == "__main__":
    sys.exit(main())
