"""Store outages: a run ends in bounded time, each store out is reported once, and the
summary says what was made, failed and skipped per store and whether the policy was met.

Real endpoints only: moto_server (through a counting proxy that injects S3 errors), a port
nobody listens on, and a server that accepts connections and never answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.replication import ReplicationSetup, RunSummary, replicate_until_met
from archive_pipelines.replication.policy import STORES_OUT, TOO_FEW_STORES
from archive_pipelines.settings import StoreSettings
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.servers.faulty_http import FaultyProxy, SilentServer, closed_port_url
from tests.helpers.replication import (
    local_replica,
    open_with_replicas,
    populate,
    present_at,
    s3_replica,
)

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

ATTEMPTS = 2  # tries per S3 request in these tests (AWS_MAX_ATTEMPTS)
WIDTH = 4  # copier threads (open_with_replicas)


@pytest.fixture(autouse=True)
def fast_s3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short S3 timeouts and few attempts, so each outage costs a second or two."""
    monkeypatch.setenv("ARCHIVE_S3_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("ARCHIVE_S3_READ_TIMEOUT", "0.5")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", str(ATTEMPTS))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture
def proxy(s3_endpoint_url: str) -> Iterator[FaultyProxy]:
    with FaultyProxy(s3_endpoint_url) as running:
        yield running


@pytest.fixture
def opened() -> Iterator[list[StorageParts]]:
    """Storage opened by a test, closed afterwards."""
    parts: list[StorageParts] = []
    yield parts
    for storage in parts:
        storage.close()
        storage.catalog.engine.dispose()


def _open(opened: list[StorageParts], data_dir: Path, tmp_path: Path,
          replicas: list[StoreSettings], *, catalog_url: str = "", retention: int = 2
          ) -> tuple[StorageParts, dict[str, bytes]]:
    storage = open_with_replicas(data_dir, replicas, catalog_url=catalog_url,
                                 retention=retention)
    opened.append(storage)
    return storage, populate(storage, tmp_path)


def _run(storage: StorageParts, **limits: int) -> tuple[RunSummary, list[str]]:
    heard: list[str] = []
    setup = ReplicationSetup.open(storage.catalog, storage.settings)
    return replicate_until_met(setup, on_store_problem=heard.append, **limits), heard


def _assert_out_for_the_run(run: RunSummary, heard: list[str], blobs: int, why: str) -> None:
    assert len(heard) == 1 and heard[0].startswith("store 's3r': ") and why in heard[0]
    assert "\n" not in heard[0]
    assert not run.policy_met and run.short == blobs
    tally = run.tally("s3r")
    assert (tally.made, tally.failed, tally.skipped) == (0, 0, blobs)
    assert tally.problem == heard[0]
    assert run.report.errors == []  # the store is reported once, not once per blob
    assert run.report.short_reasons == {STORES_OUT: blobs}
    assert run.verdict().startswith(f"policy NOT met: {blobs} blob(s) still short")
    assert "stores out: s3r" in run.verdict()


def test_an_endpoint_down_at_start_is_reported_once_and_the_run_ends(
        data_dir: Path, tmp_path: Path, catalog_url: str, opened: list[StorageParts]) -> None:
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [s3_replica(closed_port_url(), "bucket", name="s3r")],
                           catalog_url=catalog_url)
    run, heard = _run(storage)  # returns: the run used to scan for ever
    _assert_out_for_the_run(run, heard, len(blobs), "cannot reach the S3 endpoint")
    assert f"gave up after {ATTEMPTS} attempts" in heard[0]
    assert any(line.startswith("s3r ") and f"{len(blobs)} skipped" in line
               for line in run.store_lines())


def test_an_endpoint_that_never_answers_is_reported_once_and_the_run_ends(
        data_dir: Path, tmp_path: Path, opened: list[StorageParts]) -> None:
    with SilentServer() as silent:
        storage, blobs = _open(opened, data_dir, tmp_path,
                               [s3_replica(silent.url, "bucket", name="s3r")])
        run, heard = _run(storage)
        assert silent.connections == ATTEMPTS  # the probe's tries, and nothing after it
    _assert_out_for_the_run(run, heard, len(blobs), "did not answer in time")


def test_a_batch_limit_still_says_the_policy_is_not_met(
        data_dir: Path, tmp_path: Path, opened: list[StorageParts]) -> None:
    storage, _ = _open(opened, data_dir, tmp_path,
                       [s3_replica(closed_port_url(), "bucket", name="s3r")])
    setup = ReplicationSetup.open(storage.catalog, storage.settings)
    small = ReplicationSetup(setup.catalog, setup.replicas,
                             setup.policy.model_copy(update={"batch_size": 2}))
    run = replicate_until_met(small, max_batches=1)
    assert run.stopped_early and not run.policy_met and run.short == 2
    assert "policy NOT met: 2 blob(s)" in run.verdict()


def test_a_missing_bucket_is_refused_at_once_without_retries(
        data_dir: Path, tmp_path: Path, proxy: FaultyProxy, opened: list[StorageParts]) -> None:
    missing = f"missing-{uuid.uuid4().hex[:12]}"
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [s3_replica(proxy.url, missing, name="s3r")])
    proxy.reset_counts()
    run, heard = _run(storage)
    _assert_out_for_the_run(run, heard, len(blobs), f"bucket '{missing}' does not exist")
    # The probe: HEAD of a key, HEAD of the bucket to tell why it 404s. Nothing retried.
    assert [(r.method, r.status) for r in proxy.requests] == [("HEAD", 404), ("HEAD", 404)]


def test_a_store_failing_mid_run_is_skipped_then_a_rerun_finishes(
        data_dir: Path, tmp_path: Path, s3_bucket: str, proxy: FaultyProxy,
        opened: list[StorageParts]) -> None:
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [s3_replica(proxy.url, s3_bucket, name="s3r")])
    setup = ReplicationSetup.open(storage.catalog, storage.settings)
    assert setup.replicas["s3r"].writable  # healthy when the run starts
    proxy.fail(503, "SlowDown")  # then it throttles everything, for good
    proxy.reset_counts()
    heard: list[str] = []
    run = replicate_until_met(setup, on_store_problem=heard.append)
    assert len(heard) == 1 and "SlowDown" not in heard[0]  # a 503 HEAD has no code to show
    assert heard[0].startswith("store 's3r': S3 error 503") and "gave up after" in heard[0]
    tally = run.tally("s3r")
    assert tally.made == 0 and tally.failed >= 1 and tally.failed + tally.skipped == len(blobs)
    assert not run.policy_met and run.short == len(blobs)
    # Only the copies in flight when it failed were tried, each ATTEMPTS times.
    assert len(proxy.requests) <= WIDTH * ATTEMPTS
    assert present_at(storage, "s3r") == set()

    proxy.heal()
    again, heard_again = _run(storage)
    assert again.policy_met and heard_again == []
    assert again.tally("s3r").made == len(blobs) and present_at(storage, "s3r") == set(blobs)


def test_refused_writes_take_the_store_out_for_writes_only_without_retries(
        data_dir: Path, tmp_path: Path, s3_bucket: str, proxy: FaultyProxy,
        opened: list[StorageParts]) -> None:
    storage, _ = _open(opened, data_dir, tmp_path,
                       [s3_replica(proxy.url, s3_bucket, name="s3r")])
    proxy.fail(403, "AccessDenied", methods={"PUT"})
    proxy.reset_counts()
    run, heard = _run(storage)
    assert len(heard) == 1 and f"access denied to bucket '{s3_bucket}'" in heard[0]
    assert "while putting blob" in heard[0]
    puts = [r.path for r in proxy.requests if r.method == "PUT"]
    assert 1 <= len(puts) <= WIDTH and len(set(puts)) == len(puts)  # none retried
    assert not run.policy_met and run.tally("s3r").made == 0
    assert run.tally("s3r").failed == len(puts)
    setup = ReplicationSetup.open(storage.catalog, storage.settings)
    assert setup.replicas["s3r"].readable  # a fresh run probes it again: reads still work


def test_when_a_store_refuses_writes_the_others_take_the_copies(
        data_dir: Path, tmp_path: Path, s3_bucket: str, proxy: FaultyProxy,
        opened: list[StorageParts]) -> None:
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [local_replica(), s3_replica(proxy.url, s3_bucket, name="s3r")])
    proxy.fail(403, "AccessDenied", methods={"PUT"})
    run, heard = _run(storage)  # blobs first planned to s3r go to local on the next scan
    assert run.policy_met and present_at(storage, "local") == set(blobs)
    assert len(heard) == 1 and "access denied" in heard[0]


def test_a_destination_failing_mid_batch_skips_every_group_bound_for_it(
        data_dir: Path, tmp_path: Path, s3_bucket: str, proxy: FaultyProxy,
        opened: list[StorageParts]) -> None:
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [local_replica(), s3_replica(proxy.url, s3_bucket, name="s3r")],
                           retention=3)
    proxy.fail(403, "AccessDenied", methods={"PUT"})
    first, _ = _run(storage)  # local gets its copies: two sources for s3r from now on
    assert present_at(storage, "local") == set(blobs) and not first.policy_met
    proxy.heal()
    proxy.fail(503, "SlowDown", methods={"PUT"})  # reads work, writes fail after retries
    run, heard = _run(storage)  # sources drawn at random: groups primary->s3r, local->s3r
    assert len(heard) == 1 and "gave up after" in heard[0]
    tally = run.tally("s3r")
    assert tally.made == 0 and tally.failed >= 1 and tally.failed + tally.skipped == len(blobs)
    assert not run.policy_met and run.short == len(blobs)


def test_a_store_out_does_not_fail_a_policy_the_others_can_meet(
        data_dir: Path, tmp_path: Path, opened: list[StorageParts]) -> None:
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [local_replica(), s3_replica(closed_port_url(), "b", name="s3r")])
    run, heard = _run(storage)
    assert run.policy_met and run.tally("local").made == len(blobs)
    assert len(heard) == 1 and run.tally("s3r").problem == heard[0]  # still reported
    assert run.tally("s3r").skipped == 0  # it was not needed


@pytest.mark.unit
def test_more_copies_than_stores_ends_with_the_reason(
        data_dir: Path, tmp_path: Path, opened: list[StorageParts]) -> None:
    storage, blobs = _open(opened, data_dir, tmp_path, [local_replica()], retention=3)
    run, heard = _run(storage)
    assert heard == [] and not run.policy_met and run.short == len(blobs)
    assert run.tally("local").made == len(blobs)  # what could be done was done
    assert run.report.short_reasons == {TOO_FEW_STORES: len(blobs)}


def test_a_blob_met_again_by_a_second_scan_is_counted_once(
        data_dir: Path, tmp_path: Path, s3_bucket: str, proxy: FaultyProxy,
        opened: list[StorageParts]) -> None:
    """s3r fails mid-run while local takes its copies: that progress makes the run scan the
    catalog again, which meets every blob short at s3r a second time. The summary still
    counts each blob once per store: made + already + failed + skipped = the blobs."""
    storage, blobs = _open(opened, data_dir, tmp_path,
                           [local_replica(), s3_replica(proxy.url, s3_bucket, name="s3r")],
                           retention=3)
    proxy.fail(503, "SlowDown", methods={"PUT"})
    run, heard = _run(storage)
    assert len(heard) == 1 and not run.policy_met and run.short == len(blobs)
    assert present_at(storage, "local") == set(blobs)
    assert run.report.failed_copies["s3r"] + run.report.skipped_copies["s3r"] > len(blobs), (
        "the run did not scan twice: nothing here would count a blob twice")
    for store in ("local", "s3r"):
        tally = run.tally(store)
        assert tally.made + tally.already + tally.failed + tally.skipped == len(blobs), tally
    assert run.metadata()["failed"] + run.metadata()["skipped"] == len(blobs)
