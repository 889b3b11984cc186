"""Alembic environment: the engine comes from `config.attributes` (see catalog.migrate).

On SQLite, Alembic's batch mode rebuilds a table to alter it (create a copy, copy the rows,
drop the old one, rename). With foreign keys enforced, dropping a parent table deletes its
children through ON DELETE CASCADE: rebuilding `crawl_session` would empty `page_fetch`. So
enforcement is off while the migrations run (SQLite ignores the pragma inside a transaction:
it is set before), the result is checked with `PRAGMA foreign_key_check`, and enforcement is
back on before the connection returns to the pool.
"""

from typing import Any

from alembic import context
from sqlalchemy import text

from archive_pipelines.catalog.models import Base

config = context.config
engine = config.attributes["engine"]



def _foreign_keys(connection: Any, state: str) -> None:
    """On the driver's connection, outside any transaction (ours begin with BEGIN IMMEDIATE,
    inside which SQLite ignores the pragma)."""
    connection.connection.driver_connection.execute(f"PRAGMA foreign_keys={state}")


with engine.connect() as connection:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        _foreign_keys(connection, "OFF")
    try:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=sqlite,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
            if sqlite:
                broken = connection.execute(text("PRAGMA foreign_key_check")).fetchall()
                if broken:
                    raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
        connection.commit()
    finally:
        if sqlite:
            connection.rollback()  # nothing is pending after the commit: ends any autobegun one
            _foreign_keys(connection, "ON")
