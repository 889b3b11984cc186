"""The catalog: SQLAlchemy models, migrations, engines and the repository that owns the SQL."""

from archive_pipelines.catalog.engine import make_engine, shared_engine
from archive_pipelines.catalog.migrate import upgrade_catalog
from archive_pipelines.catalog.repository import CatalogRepository, CatalogStatus

__all__ = ["CatalogRepository", "CatalogStatus", "make_engine", "shared_engine", "upgrade_catalog"]
