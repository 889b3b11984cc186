"""S3 faults: every request bounded, transient errors retried, permanent ones never.

Real endpoints only: moto_server behind a counting proxy that can answer with injected
errors, a port nobody listens on, and a server that accepts and never answers.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from archive_pipelines.blobstore import BlobStoreError, S3BlobStore
from archive_pipelines.blobstore.s3 import S3Network
from archive_pipelines.blobstore.s3_errors import S3Refused, S3Unavailable, translate
from archive_testkit.servers import LocalMotoServer
from archive_testkit.servers.faulty_http import FaultyProxy, SilentServer, closed_port_url

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

FAST = S3Network(connect_timeout=1, read_timeout=0.5, attempts=3)
SHA = hashlib.sha256(b"x").hexdigest()


def _client_error(status: int, code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


@pytest.mark.unit
@pytest.mark.parametrize(("status", "code", "kind"), [
    (503, "SlowDown", S3Unavailable),
    (503, "ServiceUnavailable", S3Unavailable),
    (500, "InternalError", S3Unavailable),
    (400, "RequestTimeout", S3Unavailable),
    (400, "Throttling", S3Unavailable),
    (429, "TooManyRequests", S3Unavailable),
    (403, "AccessDenied", S3Refused),
    (403, "InvalidAccessKeyId", S3Refused),
    (403, "SignatureDoesNotMatch", S3Refused),
    (404, "NoSuchBucket", S3Refused),
    (400, "AuthorizationHeaderMalformed", S3Refused),
])
def test_transient_and_permanent_errors_are_told_apart(status: int, code: str,
                                                      kind: type[BlobStoreError]) -> None:
    error = translate(_client_error(status, code), store="s3r", bucket="b",
                      action="putting blob x", writing=True, attempts=3)
    assert type(error) is kind
    assert error.store == "s3r" and error.writing  # type: ignore[attr-defined]
    assert str(error).startswith("store 's3r': ") and "\n" not in str(error)
    assert ("gave up after 3 attempts" in str(error)) == (kind is S3Unavailable)


@pytest.mark.unit
@pytest.mark.parametrize("code", ["NoSuchKey", "InvalidObjectState", "PreconditionFailed"])
def test_errors_about_one_object_do_not_blame_the_store(code: str) -> None:
    error = translate(_client_error(400, code), store="s3r", bucket="b", action="reading")
    assert type(error) is BlobStoreError


@pytest.mark.unit
def test_network_settings_from_the_environment() -> None:
    assert S3Network.from_environ({}) == S3Network()
    tuned = S3Network.from_environ({"ARCHIVE_S3_CONNECT_TIMEOUT": "2",
                                    "ARCHIVE_S3_READ_TIMEOUT": "7.5",
                                    "AWS_MAX_ATTEMPTS": "5", "AWS_RETRY_MODE": "adaptive"})
    assert tuned == S3Network(connect_timeout=2, read_timeout=7.5, attempts=5,
                              retry_mode="adaptive")
    config = tuned.client_config()
    assert (config.connect_timeout, config.read_timeout) == (2, 7.5)
    assert config.retries == {"mode": "adaptive", "total_max_attempts": 5}
    with pytest.raises(ValueError, match="ARCHIVE_S3_READ_TIMEOUT"):
        S3Network.from_environ({"ARCHIVE_S3_READ_TIMEOUT": "soon"})
    with pytest.raises(ValueError, match="1-10"):
        S3Network.from_environ({"AWS_MAX_ATTEMPTS": "0"})


@pytest.fixture(autouse=True)
def throwaway_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture
def proxy(s3_endpoint_url: str) -> Iterator[FaultyProxy]:
    with FaultyProxy(s3_endpoint_url) as running:
        yield running


def _store(bucket: str, endpoint: str, network: S3Network = FAST) -> S3BlobStore:
    return S3BlobStore(bucket=bucket, name="s3r", endpoint_url=endpoint, region="us-east-1",
                       network=network)


def test_a_closed_port_gives_up_after_the_attempts() -> None:
    store = _store("bucket", closed_port_url())
    with pytest.raises(S3Unavailable) as raised:
        store.exists(SHA)
    message = str(raised.value)
    assert "cannot reach the S3 endpoint" in message and "gave up after 3 attempts" in message
    assert "\n" not in message


def test_a_silent_endpoint_times_out_after_the_attempts(s3_bucket: str) -> None:
    with SilentServer() as silent:
        store = _store(s3_bucket, silent.url)
        with pytest.raises(S3Unavailable) as raised:
            store.put_bytes(b"x")
        assert "did not answer in time" in str(raised.value)
        assert silent.connections == FAST.attempts  # one connection per try, then done


def test_slowdown_is_retried_and_then_succeeds(s3_bucket: str, proxy: FaultyProxy) -> None:
    store = _store(s3_bucket, proxy.url)
    proxy.fail(503, "SlowDown", times=2, methods={"PUT"})
    put = store.put_bytes(b"after two slowdowns")
    assert put.created and store.check(put.sha256).ok
    puts = [r for r in proxy.requests if r.method == "PUT"]
    assert [(r.status, r.injected) for r in puts] == [(503, True), (503, True), (200, False)]


@pytest.mark.parametrize(("status", "code"), [(503, "SlowDown"), (500, "InternalError")])
def test_a_store_that_keeps_failing_gives_up_after_the_attempts(
        s3_bucket: str, proxy: FaultyProxy, status: int, code: str) -> None:
    store = _store(s3_bucket, proxy.url)
    proxy.fail(status, code)
    with pytest.raises(S3Unavailable) as raised:
        store.put_bytes(b"never stored")
    assert f"gave up after {FAST.attempts} attempts" in str(raised.value)
    assert "while looking up blob" in str(raised.value)  # put_bytes looks first: a HEAD
    assert [r.method for r in proxy.requests] == ["HEAD"] * FAST.attempts  # then stopped


def test_access_denied_is_reported_at_once_without_retries(s3_bucket: str,
                                                           proxy: FaultyProxy) -> None:
    store = _store(s3_bucket, proxy.url)
    proxy.fail(403, "AccessDenied", methods={"PUT"})
    with pytest.raises(S3Refused) as raised:
        store.put_bytes(b"denied")
    assert f"access denied to bucket '{s3_bucket}'" in str(raised.value)
    assert raised.value.writing and not raised.value.transient
    puts = [r for r in proxy.requests if r.method == "PUT"]
    assert [(r.status, r.injected) for r in puts] == [(403, True)]  # one PUT: not retried


def test_a_missing_bucket_is_reported_at_once_without_retries(proxy: FaultyProxy) -> None:
    missing = f"missing-{uuid.uuid4().hex[:12]}"
    store = _store(missing, proxy.url)
    with pytest.raises(S3Refused) as raised:
        store.exists(SHA)
    assert f"bucket '{missing}' does not exist" in str(raised.value)
    # HEAD of the key (a bare 404), HEAD of the bucket to tell why: once each.
    assert [(r.method, r.status) for r in proxy.requests] == [("HEAD", 404), ("HEAD", 404)]


@pytest.fixture
def moto_with_iam(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto_server that checks credentials (moto's IAM): unknown keys get a real 403."""
    with monkeypatch.context() as env:
        env.setenv("INITIAL_NO_AUTH_ACTION_COUNT", "0")
        server = LocalMotoServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def test_credentials_moto_rejects_are_refused_at_once_without_retries(
        moto_with_iam: str) -> None:
    with FaultyProxy(moto_with_iam) as counting:
        # Patient reads: a moto_server just started with IAM on can take over FAST's 0.5 s
        # for its first answer on a loaded machine, and a retried timeout is not what this
        # test is about (a 403 is never retried).
        store = _store("any-bucket", counting.url, S3Network(connect_timeout=5, read_timeout=20,
                                                             attempts=3))
        with pytest.raises(S3Refused) as raised:
            store.probe()
        assert "access denied to bucket 'any-bucket'" in str(raised.value)
        assert [(r.method, r.status) for r in counting.requests] == [("HEAD", 403)]
        counting.reset_counts()
        with pytest.raises(S3Refused) as refused_list:
            list(store.iter_hashes())  # a GET's 403 carries the reason
        assert "S3 rejected the credentials (InvalidAccessKeyId)" in str(refused_list.value)
        assert [(r.method, r.status) for r in counting.requests] == [("GET", 403)]
