"""Replication settings and stores for Dagster: one place that opens the ReplicaSet."""

from datetime import timedelta

import dagster as dg

from archive_pipelines.replication import ReplicaSet
from archive_pipelines.resources.storage import StorageResource
from archive_pipelines.settings import ReplicationSettings
from archive_pipelines.storage import Storage


class ReplicationResource(dg.ConfigurableResource):
    """The configured stores (local and S3) and the retention policy from the settings.

    S3 credentials come only from the standard AWS chain (env vars such as
    AWS_ACCESS_KEY_ID via `EnvVar`, instance roles): never config, logs or metadata.
    """

    storage: StorageResource

    def open(self) -> tuple[Storage, ReplicaSet, ReplicationSettings]:
        storage = self.storage.open()
        return storage, ReplicaSet.open(storage), storage.settings.replication

    @staticmethod
    def max_age(policy: ReplicationSettings) -> timedelta:
        return timedelta(minutes=policy.archival_max_age_minutes)
