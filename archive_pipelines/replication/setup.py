"""What replication runs with: the storage, its configured stores and the policy, opened
together (by the Dagster resource and the CLI alike)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.settings import ReplicationSettings
from archive_pipelines.storage.context import Storage


@dataclass(frozen=True)
class ReplicationSetup:
    storage: Storage
    replicas: ReplicaSet
    policy: ReplicationSettings

    @classmethod
    def open(cls, storage: Storage) -> ReplicationSetup:
        """The stores and policy of `storage`'s settings (`replicas.errors`: stores that
        could not be opened)."""
        return cls(storage, ReplicaSet.open(storage), storage.settings.replication)

    @property
    def max_age(self) -> timedelta:
        """How long an ongoing copy counts toward the policy (its copier presumed alive)."""
        return timedelta(minutes=self.policy.archival_max_age_minutes)
