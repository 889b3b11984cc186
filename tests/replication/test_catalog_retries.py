"""A lost PostgreSQL connection: replication's idempotent transactions run again; anything
else, and a loss that keeps happening, is one clear line. Real PostgreSQL: the server ends
the session (pg_terminate_backend) in the middle of a transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg2
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ProgrammingError

from archive_pipelines.archive_error import CatalogError
from archive_pipelines.catalog import (
    POSTGRES_CONNECT_ARGS,
    Catalog,
    connection_lost,
    make_engine,
    retry_on_connection_loss,
)
from archive_testkit.servers.faulty_http import SilentServer, closed_port_url

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    made = make_engine(postgres_url)
    try:
        yield made
    finally:
        made.dispose()


def _terminate(server_url: str, pid: int) -> None:
    """End one backend from another session, as a server restart or a failover would."""
    url = make_url(server_url)
    admin = psycopg2.connect(host=url.host, port=url.port, user=url.username,
                             dbname=url.database)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
    finally:
        admin.close()


def _losing_work(catalog: Catalog, server_url: str, losses: int
                 ) -> tuple[list[int], Callable[[], int]]:
    """A read transaction whose session is killed mid-way the first `losses` times."""
    calls: list[int] = []

    def work() -> int:
        with catalog.reading() as tx:
            pid = int(tx.session.execute(text("SELECT pg_backend_pid()")).scalar_one())
            calls.append(pid)
            if len(calls) <= losses:
                _terminate(server_url, pid)
            return int(tx.session.execute(text("SELECT 42")).scalar_one())

    return calls, work


def test_a_transaction_cut_off_mid_way_runs_again(engine: Engine, postgres_url: str) -> None:
    calls, work = _losing_work(Catalog(engine), postgres_url, losses=1)
    assert retry_on_connection_loss(work, what="reading", first_delay=0.01) == 42
    assert len(calls) == 2 and calls[0] != calls[1]  # on a new connection


def test_a_loss_that_keeps_happening_is_one_clear_line(engine: Engine,
                                                      postgres_url: str) -> None:
    calls, work = _losing_work(Catalog(engine), postgres_url, losses=10)
    with pytest.raises(CatalogError) as raised:
        retry_on_connection_loss(work, what="reading the batch", attempts=3, first_delay=0.01)
    assert len(calls) == 3
    message = str(raised.value)
    assert message.startswith("catalog connection lost while reading the batch (3 attempts): ")
    assert "\n" not in message


def test_other_errors_are_not_retried(engine: Engine) -> None:
    calls: list[int] = []

    def work() -> None:
        calls.append(1)
        with engine.connect() as conn:
            conn.execute(text("SELECT * FROM no_such_table"))

    with pytest.raises(ProgrammingError) as raised:
        retry_on_connection_loss(work, what="reading")
    assert calls == [1] and not connection_lost(raised.value)


def test_connections_are_bounded(engine: Engine) -> None:
    args = POSTGRES_CONNECT_ARGS
    assert args["connect_timeout"] > 0 and args["keepalives"] == 1
    with engine.connect() as conn:  # libpq took the options
        assert conn.connection.dbapi_connection.get_dsn_parameters()[  # type: ignore[union-attr]
            "connect_timeout"] == str(args["connect_timeout"])


@pytest.mark.parametrize("where", ["closed", "silent"])
def test_an_unreachable_catalog_is_one_clear_line(where: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(POSTGRES_CONNECT_ARGS, "connect_timeout", 1)
    with SilentServer() as silent:
        endpoint = closed_port_url() if where == "closed" else silent.url
        host_port = endpoint.removeprefix("http://")
        with pytest.raises(CatalogError) as raised:  # returns: the connect is bounded
            make_engine(f"postgresql://postgres@{host_port}/catalog")
    message = str(raised.value)
    assert "is unreachable" in message and "\n" not in message
