"""replication_status: what the CLI prints and the asset check asserts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from archive_pipelines.catalog.models import Blob, utcnow
from archive_pipelines.replication import replication_status
from tests.helpers.replication import Env, replicate_all


@pytest.mark.unit
def test_status_before_and_after_replication(env_local: Env) -> None:
    env = env_local
    n = len(env.blobs)
    # The primary is a store like any other, with the row ingest already uses.
    assert env.replicas["primary"].store_id == env.storage.primary.store_id
    assert env.reopen().ids == env.replicas.ids
    before = replication_status(env.storage.catalog, env.replicas, 2)
    assert before.blobs == n and before.under_replicated == n and not before.meets_policy
    assert before.copies_per_store == {
        "primary": {"missing": 0, "ongoing": 0, "present": n, "corrupted": 0},
        "local": {"missing": 0, "ongoing": 0, "present": 0, "corrupted": 0}}
    assert replication_status(env.storage.catalog, env.replicas, 1).meets_policy

    with env.storage.catalog.reading() as tx:
        some = list(tx.session.scalars(select(Blob.id).order_by(Blob.id).limit(3)))
    with env.storage.catalog.transaction() as tx:
        tx.copies.upsert_copies(store_id=env.replicas["local"].store_id, blob_ids=some,
                      status="ongoing", mtime=utcnow())
    pending = replication_status(env.storage.catalog, env.replicas, 2, max_age=timedelta(hours=1))
    assert pending.under_replicated == n and pending.in_progress == 3
    assert pending.copies_per_store["local"]["ongoing"] == 3

    replicate_all(env, retention=2, max_age=timedelta(0))
    after = replication_status(env.storage.catalog, env.replicas, 2)
    assert after.meets_policy and after.present("local") == n and after.store_errors == []
