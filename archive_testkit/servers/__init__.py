"""Throwaway PostgreSQL and S3 (moto_server) servers on free ports, for tests and benchmarks.

Real server binaries, not fakes. Redis comes from the product's `archive_pipelines.embedded_redis`
(the crawler's embedded default); all of them share `archive_pipelines.server_process`.
"""

from archive_testkit.servers.moto import LocalMotoServer
from archive_testkit.servers.postgres import LocalPostgres, create_database, drop_database

__all__ = ["LocalMotoServer", "LocalPostgres", "create_database", "drop_database"]
