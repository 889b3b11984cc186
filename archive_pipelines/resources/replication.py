"""Replication settings and stores for Dagster: one place that opens the ReplicaSet."""

import dagster as dg

from archive_pipelines.replication import ReplicationSetup
from archive_pipelines.resources.catalog import CatalogResource


class ReplicationResource(dg.ConfigurableResource):
    """The configured stores (local and S3) and the retention policy from the settings.

    S3 credentials come only from the standard AWS chain (env vars such as
    AWS_ACCESS_KEY_ID via `EnvVar`, instance roles): never config, logs or metadata.
    """

    catalog: CatalogResource

    def open(self, *, probe: bool = True) -> ReplicationSetup:
        """The catalog (on the shared engine of `catalog`), the replicas and the policy:
        replication needs no primary store, views or worker processes. `probe=False`
        contacts no store (planning reads only the catalog)."""
        settings = self.catalog.project_settings()
        return ReplicationSetup.open(self.catalog.open(settings),
                                     settings, probe=probe)
