"""Throwaway local servers (redis-server, PostgreSQL, moto_server) on free ports in temp dirs.

Used by the test fixtures, the benchmarks and the embedded-default Redis; nothing here is
a fake: each class starts the real server binary and stops it.
"""

from archive_pipelines.services.moto import LocalMotoServer
from archive_pipelines.services.ports import free_port, wait_until
from archive_pipelines.services.postgres import LocalPostgres
from archive_pipelines.services.redis import LocalRedis, find_redis_server

__all__ = [
    "LocalMotoServer",
    "LocalPostgres",
    "LocalRedis",
    "find_redis_server",
    "free_port",
    "wait_until",
]
