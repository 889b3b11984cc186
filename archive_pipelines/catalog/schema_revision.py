"""The catalog's schema revision for `status`, read without importing Alembic (~0.25 s of
CPU, on every `status`).

The current revision is the row of Alembic's version table; the head is the one migration
script that no other script revises, read from the scripts' literal `revision` and
`down_revision` lines. Anything unusual (several rows, a script that is not plain literals,
not exactly one head) is left to Alembic (`catalog.migrate`), which answers or fails as it
always did. tests/cli/test_schema_revision.py checks both answers against Alembic's.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text

from archive_pipelines.catalog import migrate

if TYPE_CHECKING:
    from sqlalchemy import Engine

VERSION_TABLE = "alembic_version"  # Alembic's default; migrations/env.py keeps it
VERSIONS_DIR = migrate.MIGRATIONS_DIR / "versions"
# The module-level names Alembic reads from a migration script.
SCRIPT_NAMES = ("revision", "down_revision", "branch_labels", "depends_on")


def current_revision(engine: Engine) -> str | None:
    """The revision recorded in the catalog; None when it has no schema (no version row)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(rows) > 1:
        return migrate.current_revision(engine)  # Alembic's own error for several heads
    return rows[0] if rows else None


def head_revision() -> str:
    """The revision `init` migrates the catalog to."""
    head = _script_head(VERSIONS_DIR)
    return head if head is not None else migrate.head_revision()


@cache
def _script_head(versions: Path) -> str | None:
    """The one revision no script revises; None if the scripts say anything less plain."""
    revises: dict[str, tuple[str, ...]] = {}
    for path in sorted(versions.glob("*.py")):
        if path.name.startswith((".#", "__init__")):  # the files Alembic skips
            continue
        names = _literal_names(path)
        if names is None or names.get("branch_labels") or names.get("depends_on"):
            return None
        revision, down = names.get("revision"), names.get("down_revision")
        down = (down,) if isinstance(down, str) else () if down is None else down
        if (not isinstance(revision, str) or revision in revises or not isinstance(down, tuple)
                or not all(isinstance(parent, str) for parent in down)):
            return None
        revises[revision] = down
    parents = {parent for down in revises.values() for parent in down}
    heads = set(revises) - parents
    if not parents <= set(revises) or len(heads) != 1:
        return None
    return heads.pop()


def _literal_names(path: Path) -> dict[str, object] | None:
    """The script's module-level `SCRIPT_NAMES` assigned plain literals; None if any is not."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    names: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in SCRIPT_NAMES:
            try:
                names[target.id] = ast.literal_eval(value)
            except ValueError:
                return None
    return names
