"""The code location's executor: the deployment chooses, when each run starts.

`archive_executor` takes the run config of Dagster's default executor (`multiprocess`, the
default, or `in_process`) and reads the instance's `executor.yaml` (DAGSTER_HOME, written by
`init --profile cluster`) when a run starts: with `executor: celery` in it, a run's steps go
to the dagster-celery workers with the broker, backend and Celery settings of that file; without
the file (the single-machine default) they run as before, in subprocesses of the run.
Switching needs no code edit and no reload: the next run reads the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import dagster as dg
from dagster._core.definitions.executor_definition import (
    IN_PROC_CONFIG,
    MULTI_PROC_CONFIG,
    _get_default_executor_requirements,
    multi_or_in_process_executor,
)
from dagster._core.execution.retries import RetryMode

from archive_pipelines.datadir.cluster_profile import read_executor_choice

# The default executor's own config schema: run configs written for it stay valid.
_DEFAULT_SCHEMA = dg.Field(dg.Selector({"multiprocess": MULTI_PROC_CONFIG, "in_process": IN_PROC_CONFIG}),
                           default_value={"multiprocess": {}})


@dg.executor(name="archive", config_schema=_DEFAULT_SCHEMA,
             requirements=_get_default_executor_requirements)
def archive_executor(init_context: dg.InitExecutorContext) -> dg.Executor:
    """Celery when the deployment's executor.yaml says so, else Dagster's default executor
    (an explicit `in_process` in a run's config is always honoured)."""
    config = init_context.executor_config
    choice = read_executor_choice(Path(init_context.instance.root_directory))
    if choice.kind == "celery" and "multiprocess" in config:
        from dagster_celery.executor import CeleryExecutor  # only the cluster needs Celery

        retries = cast("dict[str, Any]", config["multiprocess"]).get("retries") or {"enabled": {}}
        return CeleryExecutor(
            broker=choice.celery["broker"], backend=choice.celery.get("backend"),
            include=choice.celery.get("include"), config_source=choice.celery.get("config_source"),
            retries=RetryMode.from_config(retries))
    return multi_or_in_process_executor.executor_creation_fn(init_context)  # type: ignore[misc]
