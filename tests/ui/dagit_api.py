"""What the UI tests read back from Dagit's GraphQL API (the one its pages query)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archive_testkit.dagit import TERMINAL_BACKFILL, TERMINAL_RUN, Dagit

REPOSITORY = {"repositoryName": "__repository__",
              "repositoryLocationName": "archive_pipelines.definitions"}


@dataclass(frozen=True)
class AssetGraph:
    """Assets by name, with their upstream edges and their checks."""

    edges: frozenset[tuple[str, str]]
    checks: dict[str, list[str]]


def asset_graph(dagit: Dagit) -> AssetGraph:
    nodes = dagit.graphql("""{ assetNodes { assetKey { path } dependencyKeys { path }
        assetChecksOrError { ... on AssetChecks { checks { name } } } } }""")["assetNodes"]
    edges = {("/".join(dep["path"]), "/".join(node["assetKey"]["path"]))
             for node in nodes for dep in node["dependencyKeys"]}
    checks = {"/".join(node["assetKey"]["path"]): [c["name"] for c in
                                                   node["assetChecksOrError"].get("checks", [])]
              for node in nodes}
    return AssetGraph(frozenset(edges), checks)


def backfill_ids(dagit: Dagit) -> set[str]:
    data = dagit.graphql("""{ partitionBackfillsOrError(limit: 100) {
        ... on PartitionBackfills { results { id } } } }""")
    return {b["id"] for b in data["partitionBackfillsOrError"]["results"]}


def backfills_of(dagit: Dagit, asset: str) -> list[dict[str, Any]]:
    """Backfills whose selection is exactly `asset`."""
    data = dagit.graphql("""{ partitionBackfillsOrError(limit: 100) { ... on PartitionBackfills {
        results { id assetSelection { path } } } } }""")
    return [b for b in data["partitionBackfillsOrError"]["results"]
            if [a["path"] for a in b["assetSelection"] or []] == [[asset]]]


def backfill(dagit: Dagit, backfill_id: str) -> dict[str, Any]:
    """Status, partitions, error and runs of one backfill."""
    return dict(dagit.graphql("""query($id: String!) { partitionBackfillOrError(backfillId: $id) {
        ... on PartitionBackfill { id status numPartitions partitionNames error { message }
          assetSelection { path }
          runs(limit: 50) { id status assetSelection { path } tags { key value } } }
        ... on PythonError { message } } }""", {"id": backfill_id})["partitionBackfillOrError"])


def finished_backfill(dagit: Dagit, backfill_id: str) -> dict[str, Any] | None:
    """The backfill once it is over (completed, failed or canceled), else None."""
    found = backfill(dagit, backfill_id)
    return found if found.get("status") in TERMINAL_BACKFILL else None


def runs_since(dagit: Dagit, known: set[str]) -> list[dict[str, Any]]:
    """Runs not in `known` and not launched by a backfill, with their selections."""
    data = dagit.graphql("""{ runsOrError(limit: 50) { ... on Runs { results { id status
        assetSelection { path } assetCheckSelection { name assetKey { path } }
        tags { key } } } } }""")
    return [r for r in data["runsOrError"]["results"] if r["id"] not in known
            and not any(t["key"] == "dagster/backfill" for t in r["tags"])]


def run_ids(dagit: Dagit) -> set[str]:
    data = dagit.graphql("{ runsOrError(limit: 50) { ... on Runs { results { id } } } }")
    return {r["id"] for r in data["runsOrError"]["results"]}


def runs_of_job(dagit: Dagit, job: str) -> list[dict[str, Any]]:
    """The job's runs (newest first): id, status and tags."""
    data = dagit.graphql("""query($job: String!) { runsOrError(
        filter: { pipelineName: $job }, limit: 50) { ... on Runs { results { id status
        tags { key value } } } } }""", {"job": job})
    return list(data["runsOrError"]["results"])


def finished_run(dagit: Dagit, run_id: str) -> dict[str, Any] | None:
    data = dagit.graphql("""query($id: ID!) { runOrError(runId: $id) { ... on Run { id status
        assetSelection { path } assetCheckSelection { name } } } }""", {"id": run_id})
    run = data["runOrError"]
    return run if run.get("status") in TERMINAL_RUN else None


def check_evaluations(dagit: Dagit, run_id: str) -> list[tuple[str, str, bool]]:
    """(asset, check, passed) of every check evaluated in the run."""
    return [("/".join(e["evaluation"]["assetKey"]["path"]), e["evaluation"]["checkName"],
             e["evaluation"]["success"])
            for e in _events(dagit, run_id) if e["__typename"] == "AssetCheckEvaluationEvent"]


def run_errors(dagit: Dagit, run_id: str) -> str:
    """The error messages a run logged (step failures, run failure, engine errors)."""
    lines = []
    for event in _events(dagit, run_id):
        error = event.get("error") or {}
        if error.get("message") or event["__typename"] in ("ExecutionStepFailureEvent",
                                                           "RunFailureEvent"):
            lines.append(f"{event['__typename']}: {event.get('message', '')} "
                         f"{error.get('message', '')}".strip())
    return "\n".join(lines) or "(no error event)"


def sensor(dagit: Dagit, name: str) -> dict[str, Any]:
    """A sensor's status and its latest ticks (newest first)."""
    return dict(dagit.graphql("""query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
        ... on Sensor { name sensorState { status ticks(limit: 5) { id status timestamp
          skipReason error { message } } } } } }""",
        {"s": {**REPOSITORY, "sensorName": name}})["sensorOrError"])


def _events(dagit: Dagit, run_id: str) -> list[dict[str, Any]]:
    data = dagit.graphql("""query($id: ID!) { logsForRun(runId: $id, limit: 5000) {
        ... on EventConnection { events { __typename
          ... on MessageEvent { message }
          ... on ErrorEvent { error { message } }
          ... on AssetCheckEvaluationEvent { evaluation { checkName success
                                                          assetKey { path } } } } } } }""",
        {"id": run_id})
    return list(data["logsForRun"].get("events", []))
