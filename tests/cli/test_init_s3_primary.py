"""`init` on a data dir whose primary is an S3 bucket: it names the bucket and checks it."""

from pathlib import Path

from tests.helpers.cli import run_cli
from tests.helpers.s3_primary import s3_primary_toml


def test_init_names_the_bucket_and_finds_it(tmp_path: Path, s3_endpoint_url: str,
                                            s3_bucket: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(s3_primary_toml(endpoint_url=s3_endpoint_url,
                                                       bucket=s3_bucket))

    done = run_cli("--data-dir", str(data), "init")

    assert done.returncode == 0, done.stderr
    assert f"primary       s3://{s3_bucket}/archive (S3; no symlink views)" in done.stdout
    assert "reachable, bucket found" in done.stdout


def test_init_says_when_the_bucket_does_not_exist(tmp_path: Path, s3_endpoint_url: str,
                                                  s3_bucket: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(s3_primary_toml(endpoint_url=s3_endpoint_url,
                                                       bucket=f"{s3_bucket}-absent"))

    done = run_cli("--data-dir", str(data), "init")

    assert done.returncode == 1
    assert "the primary store is not usable" in done.stderr
    assert f"bucket '{s3_bucket}-absent' does not exist" in done.stderr
