"""The lazy command registry (cli/commands.py) against the commands themselves: `--help` lists
each command from its registered summary, so a docstring edited without the summary (or a
command added without registering it) must fail here, not drift silently."""

from __future__ import annotations

import importlib
import pkgutil

import click
import pytest

import archive_pipelines.cli
from archive_pipelines.cli.commands import COMMANDS
from archive_pipelines.cli.group_runner import run_group
from archive_pipelines.cli.main import cli

pytestmark = pytest.mark.unit


def _command(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None, name
    return command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_its_commands_short_help(name: str) -> None:
    command = _command(name)
    assert command.name == name
    assert COMMANDS[name].summary == command.get_short_help_str(limit=10_000)


@pytest.mark.parametrize("width", [50, 78, 100, 200])
def test_help_lists_the_commands_as_click_would_from_the_commands_themselves(width: int) -> None:
    ctx = click.Context(cli, info_name="archive-pipelines", terminal_width=width)
    lazy, eager = ctx.make_formatter(), ctx.make_formatter()
    cli.format_commands(ctx, lazy)
    click.Group.format_commands(cli, ctx, eager)  # imports every command for its docstring
    assert lazy.getvalue() == eager.getvalue()
    assert all(f"  {name}  " in lazy.getvalue() for name in COMMANDS)


def test_every_command_is_registered() -> None:
    """A command defined in any module of the CLI but missing from the registry is found."""
    defined = set()
    for found in pkgutil.iter_modules(archive_pipelines.cli.__path__, "archive_pipelines.cli."):
        namespace = vars(importlib.import_module(found.name))
        defined |= {(found.name, attribute) for attribute, value in namespace.items()
                    if isinstance(value, click.Command) and value is not cli
                    and getattr(value.callback, "__module__", None) == found.name}
    registered = {(lazy.module, lazy.attribute) for lazy in COMMANDS.values()}
    # A registered group's subcommands are reached through it (`crawls list`).
    for module, attribute in sorted(registered):
        group = getattr(importlib.import_module(module), attribute)
        if isinstance(group, click.Group):
            namespace = vars(importlib.import_module(module))
            registered |= {(module, name) for name, value in namespace.items()
                           if value in group.commands.values()}
    assert defined == registered


def test_an_unknown_command_suggests_the_close_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_group(cli, "archive-pipelines", ["stauts"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "Error: No such command 'stauts'. Did you mean 'status'?")
