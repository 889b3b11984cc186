"""Shared fixtures: real redis-server, PostgreSQL and moto_server (S3), started by the test run.

Each service is started once per session on a free port in a temp dir, unless REDIS_URL /
DATABASE_URL / S3_ENDPOINT_URL point at one already. Missing binaries fail loudly: a test
that needs a service never silently skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.catalog import Catalog, make_engine, normalize_catalog_url, upgrade_catalog
from archive_pipelines.datadir import initialize
from archive_pipelines.embedded_redis import LocalRedis
from archive_pipelines.settings import CatalogSettings, Settings, load_settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_testkit.servers import LocalMotoServer, LocalPostgres, create_database, drop_database
from archive_testkit.tmpfs import mount_tmpfs, tmpfs_unavailable, unmount

# The shared test helpers get pytest's assertion messages, as the tests do.
pytest.register_assert_rewrite("tests.helpers")

# The real crawl the capture tests share (one crawl per run, whichever package asks), the
# guard that keeps the `unit` marker honest (pytester: its own test runs it), and the CPU
# report (`--cpu-report=FILE` or CPU_REPORT=FILE; idle otherwise), and the files queued longest
# first for the xdist workers (file_order).
pytest_plugins = ["tests.captures.crawl_fixtures", "tests.helpers.unit_guard", "tests.helpers.cpu_report",
                  "tests.helpers.signal_hygiene", "tests.helpers.instance_hygiene",
                  "tests.helpers.file_order", "pytester"]

# Keep the developer's own settings out of the tests.
for _var in ("ARCHIVE_DATA_DIR", "DAGSTER_HOME"):
    os.environ.pop(_var, None)


@pytest.fixture(autouse=True)
def _forget_host_gates(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test that used the session redis-server, drop the host gates its crawls left
    (every crawl on one Redis shares them): a test's gate, often on a made-up clock, would
    hold up the next test's crawl of the same host."""
    yield
    if "redis_url" not in request.fixturenames:
        return
    import redis

    from frontier_service.frontier.state import HOST_GATES

    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    try:
        for key in client.scan_iter(match=f"{HOST_GATES}*", count=1000):
            client.unlink(key)
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    try:
        server = LocalRedis().start()
    except RuntimeError as exc:
        pytest.fail(f"cannot start redis-server for the tests: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """URL of a PostgreSQL server's maintenance database (tests create their own databases)."""
    if os.environ.get("DATABASE_URL"):
        yield normalize_catalog_url(os.environ["DATABASE_URL"])
        return
    try:
        server = LocalPostgres().start()
    except (RuntimeError, OSError) as exc:
        pytest.fail(f"cannot start PostgreSQL for the tests: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = create_database(postgres_server_url, name)
    try:
        yield url
    finally:
        drop_database(postgres_server_url, name)


@pytest.fixture(scope="session")
def s3_endpoint_url() -> Iterator[str]:
    if os.environ.get("S3_ENDPOINT_URL"):
        yield os.environ["S3_ENDPOINT_URL"]
        return
    try:
        server = LocalMotoServer().start()
    except RuntimeError as exc:
        pytest.fail(f"cannot start moto_server for the tests: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new empty bucket on the S3 endpoint, with throwaway credentials in the environment."""
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    name = f"bucket-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1").create_bucket(
        Bucket=name)
    return name


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty catalog database: parametrized over SQLite and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.sqlite3'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    """A migrated catalog on SQLite and on PostgreSQL."""
    engine = make_engine(catalog_url)
    upgrade_catalog(engine)
    try:
        yield Catalog(engine)
    finally:
        engine.dispose()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def storage(data_dir: Path, catalog_url: str) -> Iterator[StorageParts]:
    """The storage parts on a fresh data dir; catalog parametrized over SQLite and PostgreSQL."""
    settings = Settings(data_dir=data_dir, catalog=CatalogSettings(url=catalog_url))
    initialize(settings)
    storage = open_storage(settings)
    try:
        yield storage
    finally:
        storage.close()
        storage.catalog.engine.dispose()


@pytest.fixture
def sqlite_storage(data_dir: Path) -> Iterator[StorageParts]:
    settings = Settings(data_dir=data_dir)
    initialize(settings)
    storage = open_storage(settings)
    try:
        yield storage
    finally:
        storage.close()
        storage.catalog.engine.dispose()


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    """Default settings on a temp data dir (SQLite catalog), with no environment overrides."""
    return load_settings(data_dir, environ={})


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty directory nobody can create entries in, root included (chattr +i)."""
    path = tmp_path / "read-only"
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        undo = ["chmod", "755", str(path)]
    elif shutil.which("chattr") and subprocess.run(
            ["chattr", "+i", str(path)], capture_output=True).returncode == 0:
        undo = ["chattr", "-i", str(path)]
    else:
        pytest.skip("running as root without chattr +i: cannot make a read-only directory")
    try:
        yield path
    finally:
        subprocess.run(undo, check=True)


@pytest.fixture
def dagster_instance() -> Iterator[dg.DagsterInstance]:
    """A temporary Dagster instance, disposed afterwards (no leaked temp dirs)."""
    with dg.instance_for_test() as instance:
        yield instance


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mounts small tmpfs folders (`tmpfs("4m")`) for full-disk tests; unmounted afterwards.
    Skipped, with the reason, where this machine cannot mount one (not root, no mount)."""
    mounted: list[Path] = []

    def make(size: str) -> Path:
        reason = tmpfs_unavailable()
        if reason:
            pytest.skip(reason)
        path = tmp_path / f"small-disk-{len(mounted)}"
        path.mkdir()
        try:
            mount_tmpfs(path, size)
        except OSError as exc:
            pytest.skip(str(exc))
        mounted.append(path)
        return path

    try:
        yield make
    finally:
        for path in mounted:
            unmount(path)

