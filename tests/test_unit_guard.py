"""The `unit` marker's guard: a unit test that starts a process, opens a socket or asks for a
server fixture fails, and the guard puts everything back afterwards.

These tests are not marked unit themselves: inside a unit test the outer guard would refuse
the process or socket even if the guard under test were broken."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.helpers.unit_guard import _no_processes_nor_network


def _run_a_process() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _run_an_asyncio_process() -> None:
    async def start() -> None:
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        await process.wait()

    asyncio.run(start())


def _spawn_a_process() -> None:
    process = multiprocessing.get_context("spawn").Process(target=print)
    process.start()
    process.join()


def _fork() -> None:
    if os.fork() == 0:  # only if the guard let it through: the child leaves at once
        os._exit(0)


def _connect() -> None:
    with socket.socket() as sock:
        sock.connect_ex(("127.0.0.1", 9))


def _bind() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))


@pytest.mark.parametrize("action", [_run_a_process, _run_an_asyncio_process, _spawn_a_process,
                                    _fork, _connect, _bind])
def test_a_process_or_a_socket_under_the_guard_fails_the_test(action: Callable[[], None]) -> None:
    with _no_processes_nor_network(), pytest.raises(pytest.fail.Exception, match="marked unit"):
        action()


def test_the_guard_puts_everything_back() -> None:
    before = (subprocess.Popen._execute_child, os.fork, socket.socket.connect)  # type: ignore[attr-defined]
    with _no_processes_nor_network():
        pass
    after = (subprocess.Popen._execute_child, os.fork, socket.socket.connect)  # type: ignore[attr-defined]
    assert after == before
    _run_a_process()


def test_a_unit_test_that_asks_for_a_server_fixture_fails(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    unit: no servers\n")
    pytester.makeconftest(
        'import pytest\n'
        'pytest_plugins = ["tests.helpers.unit_guard"]\n'
        '@pytest.fixture\n'
        'def redis_url() -> str:\n'
        '    return "redis://127.0.0.1:1"\n')
    pytester.makepyfile(
        'import pytest\n'
        '@pytest.mark.unit\n'
        'def test_asks(redis_url): pass\n'
        '@pytest.mark.unit\n'
        'def test_asks_at_run_time(request): request.getfixturevalue("redis_url")\n'
        'def test_not_unit(redis_url): pass\n'
        '@pytest.mark.unit\n'
        'def test_pure(tmp_path): pass\n')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1, failed=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_asks *",
                                 "a test marked unit uses server fixtures *'redis_url'*",
                                 "*test_asks_at_run_time*",
                                 "a test marked unit uses the server fixture 'redis_url'*"])
