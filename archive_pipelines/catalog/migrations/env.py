"""Alembic environment: the engine comes from `config.attributes` (see catalog.migrate)."""

from alembic import context

from archive_pipelines.catalog.models import Base

config = context.config
engine = config.attributes["engine"]

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
