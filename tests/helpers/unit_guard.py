"""Keeps the `unit` marker honest: a test marked unit fails if it asks for a server fixture,
starts a process or opens a socket while it sets up or runs (the root conftest loads this
plugin). Teardown is left alone: it may stop a server that earlier tests of the module shared.

The unit tests are the loop run after every edit (`make test-unit`): they must stay free of
servers and processes to stay fast and able to run anywhere."""

from __future__ import annotations

import _posixsubprocess
import os
import socket
import subprocess
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

# urllib3 probes for IPv6 by binding a socket when it is first imported (boto3 imports it):
# imported here, before any test runs, so a unit test that imports boto3 opens no socket.
import urllib3.util.connection  # noqa: F401

# Fixtures that start or reach a server (Redis, PostgreSQL, moto_server, an HTTP server,
# Dagit, a crawl) or a Dagster instance.
SERVER_FIXTURES = frozenset({
    "redis_url", "postgres_server_url", "postgres_url", "catalog_url", "catalog",
    "s3_endpoint_url", "s3_bucket", "dagster_instance", "web", "captures_web", "crawled",
    "crawl", "crawl_data", "crawl_name", "dagit",
})

_SOCKET_CALLS = ("connect", "connect_ex", "bind")
_PROCESS_CALLS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system")


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        pytest.fail(f"a test marked unit {what}: drop the marker, or what needs it", pytrace=False)

    return refuse


_guarding = False


@contextmanager
def _no_processes_nor_network() -> Iterator[None]:
    global _guarding
    saved: list[tuple[object, str, object]] = []

    def swap(owner: object, name: str, replacement: object) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    try:
        # subprocess and asyncio start processes through Popen, multiprocessing through
        # fork_exec or os.fork.
        swap(subprocess.Popen, "_execute_child", _refuse("starts a process"))
        swap(_posixsubprocess, "fork_exec", _refuse("starts a process"))
        for name in _PROCESS_CALLS:
            if hasattr(os, name):
                swap(os, name, _refuse("starts a process"))
        for name in _SOCKET_CALLS:
            swap(socket.socket, name, _refuse("opens a socket (a connection or a listener)"))
        _guarding = True
        yield
    finally:
        _guarding = False
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _is_unit(item: pytest.Item) -> bool:
    return item.get_closest_marker("unit") is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    if not _is_unit(item):
        return (yield)
    servers = sorted(SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())))
    if servers:
        pytest.fail(f"a test marked unit uses server fixtures {servers}: drop the unit marker",
                    pytrace=False)
    with _no_processes_nor_network():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if not _is_unit(item):
        return (yield)
    with _no_processes_nor_network():
        return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    """Catches server fixtures asked for at run time (`request.getfixturevalue`)."""
    if not (_guarding and fixturedef.argname in SERVER_FIXTURES):
        return
    try:
        pytest.fail(f"a test marked unit uses the server fixture {fixturedef.argname!r}: "
                    "drop the unit marker", pytrace=False)
    except pytest.fail.Exception as exc:
        # Cached as pytest caches a fixture that failed, so that it is finished at teardown
        # (an uncached failure leaves a finalizer behind that breaks the next test's setup);
        # pytest calls this hook with the fixture's SubRequest, the type cache_key takes.
        key = fixturedef.cache_key(request)  # type: ignore[arg-type]
        fixturedef.cached_result = (None, key, (exc, exc.__traceback__))
        raise
