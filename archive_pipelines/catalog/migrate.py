"""Apply the catalog's Alembic migrations programmatically (run by `init`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# Alembic takes ~0.25 s to import: imported where used, so programs that never migrate
# (most CLI commands) do not pay for it.
if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    head = script.get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade_catalog(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to head. Returns (revision before, revision after)."""
    from alembic import command

    before = current_revision(engine)
    head = head_revision()
    if before != head:
        command.upgrade(alembic_config(engine), "head")
    return before, head
