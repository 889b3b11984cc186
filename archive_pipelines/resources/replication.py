"""Replication settings and stores for Dagster: one place that opens the ReplicaSet."""

import dagster as dg

from archive_pipelines.replication import ReplicationSetup
from archive_pipelines.resources.storage import StorageResource


class ReplicationResource(dg.ConfigurableResource):
    """The configured stores (local and S3) and the retention policy from the settings.

    S3 credentials come only from the standard AWS chain (env vars such as
    AWS_ACCESS_KEY_ID via `EnvVar`, instance roles): never config, logs or metadata.
    """

    storage: StorageResource

    def open(self) -> ReplicationSetup:
        storage = self.storage.open()
        return ReplicationSetup.open(storage.catalog, storage.settings)
