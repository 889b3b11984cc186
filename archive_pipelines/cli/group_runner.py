"""Running a click group the way both command-line tools do: one line per error."""

from __future__ import annotations

import click

from archive_pipelines.archive_error import ArchiveError, disk_full_message, is_disk_full


def run_group(group: click.Group, prog: str, argv: list[str] | None = None) -> int:
    """Run `group`; `ArchiveError`s become `<prog>: error: ...` on stderr and their exit
    status (2; 1 for `NotFound`), and a full disk (`data disk full: ...`) exit status 2,
    whatever reported it."""
    try:
        code = group.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ArchiveError as exc:
        if is_disk_full(exc):
            click.echo(f"{prog}: error: {disk_full_message(exc)}", err=True)
            return 2
        click.echo(f"{prog}: error: {exc}", err=True)
        return exc.exit_status
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        click.echo(f"{prog}: error: {disk_full_message(exc)}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("interrupted; run the same command again to resume", err=True)
        return 130
    return code if isinstance(code, int) else 0
