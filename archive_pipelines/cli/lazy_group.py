"""A click group that imports a command's module only when that command runs.

Importing every command up front cost each `archive-pipelines` call ~2 s of CPU (SQLAlchemy
models, Alembic, boto3, ...), `--help` included. The group's own help lists each command from
the one-line summary kept beside its module name; tests/cli/test_cli_commands.py checks
that each summary is the real command's short help.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a command lives, and the first sentence of its docstring (`--help` shows it)."""

    module: str
    attribute: str
    summary: str


class LazyGroup(click.Group):
    """A group whose commands are `LazyCommand`s, loaded by name when resolved."""

    def __init__(self, *args: Any, lazy_commands: dict[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = self.lazy_commands.get(cmd_name)
        if lazy is None:
            return super().get_command(ctx, cmd_name)
        command = getattr(importlib.import_module(lazy.module), lazy.attribute)
        assert isinstance(command, click.Command), lazy
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        # A two-word command (`captures qa URL`) before the one-word one (`captures URL`).
        pair = " ".join(args[:2])
        if len(args) >= 2 and pair in self.lazy_commands:
            return pair, self.get_command(ctx, pair), args[2:]
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests close names from `self.commands`, which holds no lazy ones.
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with each lazy command stood in for by its summary."""
        stand_ins = {name: click.Command(name, help=lazy.summary)
                     for name, lazy in self.lazy_commands.items()}
        commands = [(name, stand_ins[name] if name in stand_ins else self.get_command(ctx, name))
                    for name in self.list_commands(ctx)]
        rows = [(name, command) for name, command in commands
                if command is not None and not command.hidden]
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit))
                                for name, command in rows])
