"""The fixtures reach real servers over real connections."""

import boto3
import redis
from sqlalchemy import create_engine, text


def test_redis_is_a_real_server(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    assert client.ping()
    assert client.info("server")["redis_version"]


def test_postgres_is_a_real_server(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        assert "PostgreSQL" in conn.execute(text("SELECT version()")).scalar_one()
    engine.dispose()


def test_s3_endpoint_stores_objects(s3_endpoint_url: str, s3_bucket: str) -> None:
    client = boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1")
    client.put_object(Bucket=s3_bucket, Key="k", Body=b"v")
    assert client.get_object(Bucket=s3_bucket, Key="k")["Body"].read() == b"v"
