"""What the storage commands share: the --view choice, and their lists of errors."""

from __future__ import annotations

import click

from archive_pipelines.settings import ALL_VIEWS

VIEW_CHOICE = click.Choice(ALL_VIEWS)


def print_errors(errors: list[str], limit: int = 10) -> None:
    """The first `limit` errors on stderr, then how many more there were."""
    for error in errors[:limit]:
        click.echo(f"  ! {error}", err=True)
    if len(errors) > limit:
        click.echo(f"  ! ... and {len(errors) - limit} more", err=True)
