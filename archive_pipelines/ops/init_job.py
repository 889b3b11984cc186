"""`init_job`: the same O(1) init as `archive-pipelines init`, from Dagster."""


import dagster as dg

from archive_pipelines.datadir import initialize
from archive_pipelines.resources import SettingsResource


@dg.op(description="Create the data dir layout, write defaults if absent, migrate the catalog.")
def init_data_dir(context: dg.OpExecutionContext, settings: SettingsResource) -> dg.Output[str]:
    report = initialize(settings.load())
    for line in report.log_lines():
        context.log.info(line)
    for hint in (report.hint, report.pools_hint):
        if hint:
            context.log.warning(hint)
    return dg.Output(
        str(report.data_dir),
        metadata={"data_dir": dg.MetadataValue.path(str(report.data_dir)), **report.as_metadata()},
    )


@dg.job(description="Initialize the data directory and catalog (idempotent, O(1)).")
def init_job() -> None:
    init_data_dir()
