"""The WARC inbox sensor: files dropped in the inbox folder become `import_warc_job` runs.

Off by default: an operator turns it on once the inbox (`[import] inbox` in archive.toml,
`<data>/inbox` by default) is where files arrive. The decision is
`warc.inbox.plan_inbox_runs`: a file is imported once it has settled (seen with the same size
and mtime for `[import] inbox_settle_seconds`, so a file still being copied in waits), once
per version of the file (run key: its path, size and mtime; a changed file is imported again,
and a rerun of the same one is harmless: the importer skips files it imported before).

The cursor is the plan's `InboxState`: when each file in the inbox was first seen as it is
and which were asked for. With it, a tick asks only for files not asked for before (at most
MAX_RUNS_PER_TICK, oldest first; the rest on the next ticks) instead of handing Dagster
every file of the inbox on every tick. A reset cursor costs one settle time, and Dagster
drops requests whose run key has a run already. A failed import is not retried by the
sensor: rerun it from Dagit, or touch the file. Imported files stay where they are (they are
originals); their owner removes them.
"""

from __future__ import annotations

import time

import dagster as dg

from archive_pipelines.assets.warc_import import import_warc_job
from archive_pipelines.resources import SettingsResource
from archive_pipelines.run_labels import launched_by
from archive_pipelines.warc.inbox import InboxState, list_inbox, plan_inbox_runs

MAX_RUNS_PER_TICK = 4


@dg.sensor(job=import_warc_job, minimum_interval_seconds=60,
           default_status=dg.DefaultSensorStatus.STOPPED,
           description="Off by default. Watches the inbox folder ([import] inbox, <data>/inbox "
                       "by default) for .warc, .warc.gz and .wacz files and launches one "
                       "import_warc_job run per file once it has stopped changing. Files are "
                       "left where they are.")
def warc_inbox_sensor(context: dg.SensorEvaluationContext,
                      settings: SettingsResource) -> dg.SensorResult:
    project = settings.load()
    inbox = project.local_path(project.imports.inbox)
    if not inbox.is_dir():
        skip = f"no inbox folder {inbox}: create it, or set [import] inbox in archive.toml"
        context.log.info(skip)
        return dg.SensorResult(skip_reason=skip, cursor=context.cursor)
    plan = plan_inbox_runs(list_inbox(inbox), InboxState.from_cursor(context.cursor),
                           now=time.time(), settle_seconds=project.imports.inbox_settle_seconds,
                           limit=MAX_RUNS_PER_TICK)
    requests = [dg.RunRequest(
        run_key=file.run_key,
        run_config={"ops": {"import_warc_op": {"config": {"paths": [str(file.path)]}}}},
        tags={"import/file": file.path.name, **launched_by("sensor", "warc_inbox_sensor")})
        for file in plan.runs]
    context.log.info(plan.summary())
    return dg.SensorResult(run_requests=requests, cursor=plan.state.to_cursor(),
                           skip_reason=None if requests else plan.summary())
