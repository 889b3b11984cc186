"""What replication runs with: the catalog, the configured stores and the policy, opened
together (by the Dagster resource and the CLI alike)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from archive_pipelines.catalog import Catalog
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.settings import ReplicationSettings, Settings


@dataclass(frozen=True)
class ReplicationSetup:
    catalog: Catalog
    replicas: ReplicaSet
    policy: ReplicationSettings

    @classmethod
    def open(cls, catalog: Catalog, settings: Settings, *, probe: bool = True
             ) -> ReplicationSetup:
        """The stores and policy of the settings, their rows in `catalog` (`replicas.errors`:
        stores that could not be opened). Without `probe`, no store is contacted (for work
        that only reads the catalog, like the director's planning)."""
        return cls(catalog, ReplicaSet.open(catalog, settings, probe=probe),
                   settings.replication)

    @property
    def max_age(self) -> timedelta:
        """How long an ongoing copy counts toward the policy (its copier presumed alive)."""
        return timedelta(minutes=self.policy.archival_max_age_minutes)
