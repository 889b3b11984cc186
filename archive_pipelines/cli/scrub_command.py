"""`scrub`: read the copies each store is recorded to hold; record those gone or corrupt.

`replication-status --verify` reads a sample of each store through the same functions.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

import click

from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import FRACTION
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.replication import (
    ReplicationSetup,
    ScrubPlan,
    ScrubReport,
    plan_scrubs,
    run_scrubs,
)

MAX_PROBLEM_LINES = 10  # per store


def open_setup(obj: CliContext) -> ReplicationSetup:
    """The catalog and every configured store (a store that cannot be read is named by the
    scrub's report, `echo_scrub_table`)."""
    return ReplicationSetup.open(obj.catalog, obj.settings)


def scrub_with_progress(setup: ReplicationSetup, stores: Sequence[str], *, prefix: str = "",
                        sample: float | None = None, min_sample: int = 0, quiet: bool = False
                        ) -> tuple[list[ScrubPlan], list[ScrubReport]]:
    """Plan and run the scrub of `stores` (empty: all), with a progress bar on a terminal."""
    plans = plan_scrubs(setup.catalog, setup.replicas, list(stores) or None,
                        prefix=prefix or None, sample=sample, min_sample=min_sample)
    total = sum(plan.expected for plan in plans)
    with progress_bar("scrub", "copy", total=total, disable=quiet) as bar:
        reports = run_scrubs(setup.catalog, setup.replicas, plans,
                             width=setup.policy.copier_width,
                             progress=lambda copies, _bytes: bar.update(copies))
    return plans, reports


def echo_scrub_table(plans: Sequence[ScrubPlan], reports: Sequence[ScrubReport],
                     shown_errors: Collection[str] = ()) -> None:
    """One line per store: what was read, what was found, how fast; then problem lines
    (store errors already in `shown_errors` are not repeated)."""
    click.echo(f"  {'store':<16} {'read':>21} {'ok':>9} {'missing':>8} {'corrupt':>8} "
               f"{'set aside':>10} {'objects/s':>10} {'MiB/s':>8}")
    for plan, report in zip(plans, reports, strict=True):
        share = "" if plan.fraction >= 1 else f" ({plan.fraction:.1%})"
        read = f"{report.checked:,} of {plan.copies:,}"
        click.echo(f"  {report.store:<16} {read:>21} {report.ok:>9,} {report.missing:>8,} "
                   f"{report.corrupted:>8,} {report.set_aside:>10,} "
                   f"{report.objects_per_second:>10,.1f} {report.mebibytes_per_second:>8,.2f}"
                   f"{share}")
    for report in reports:
        for line in report.problems[:MAX_PROBLEM_LINES]:
            click.echo(f"  ! {line}", err=True)
        if report.bad > MAX_PROBLEM_LINES:
            click.echo(f"  ! store {report.store!r}: ... and {report.bad - MAX_PROBLEM_LINES:,} "
                       "more", err=True)
        if report.error and report.error not in shown_errors:
            click.echo(f"  ! {report.error}", err=True)


def echo_scrub_outcome(reports: Sequence[ScrubReport]) -> bool:
    """The closing line; True if every copy read was intact and every store readable."""
    bad = sum(report.bad for report in reports)
    unread = [report.store for report in reports if report.error]
    if bad:
        copies = "copy" if bad == 1 else "copies"
        click.echo(f"{bad:,} {copies} missing or corrupt, recorded so: the next "
                   "`archive-pipelines replicate` (or the director) copies those blobs there "
                   "again")
    if unread:
        click.echo(f"could not read store(s) {', '.join(unread)}: their copies were not all "
                   "checked")
    if not bad and not unread:
        checked = sum(report.checked for report in reports)
        click.echo(f"all {checked:,} copies read are intact")
    return not bad and not unread


def _check_prefix(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """The prefix in lower case (hashes are stored so; `0A` means `0a`)."""
    try:
        prefix_range(value.lower())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a hex prefix of a sha256 (e.g. 0a)") from None
    return value.lower()


@click.command("scrub")
@click.option("--store", "stores", multiple=True, metavar="NAME",
              help="A store to scrub (repeat for more; default: every configured store).")
@click.option("--sample", type=FRACTION, default=None, metavar="FRACTION",
              help="Read only this share of each store's copies, e.g. 0.01: a random slice "
                   "of the hash space, a different one each run (default: every copy).")
@click.option("--prefix", default="", callback=_check_prefix, metavar="HEXPREFIX",
              help="Only blobs whose sha256 starts with this hex, e.g. 0a.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def scrub_command(obj: CliContext, stores: tuple[str, ...], sample: float | None, *, prefix: str,
                  as_json: bool) -> None:
    """Read, decode and rehash the copies each store is recorded to hold.

    A copy found missing or corrupt is recorded so, and the next `replicate` (or the
    director) copies the blob there again. A corrupt object in a local store is first moved
    into that store's quarantine/ folder (never deleted) when another store has a good copy;
    otherwise it is left in place and recorded corrupted. Exit 1 if any copy was missing or
    corrupt, or a store could not be read.
    """
    setup = open_setup(obj)
    plans, reports = scrub_with_progress(setup, stores, prefix=prefix, sample=sample,
                                         quiet=as_json)
    if as_json:
        click.echo(json.dumps({
            "sample": sample, "prefix": prefix,
            "stores": [{**report.summary(), "copies": plan.copies, "fraction": plan.fraction}
                       for plan, report in zip(plans, reports, strict=True)],
            "bad": sum(report.bad for report in reports)}, indent=2))
        healthy = not any(report.bad or report.error for report in reports)
    else:
        echo_scrub_table(plans, reports)
        healthy = echo_scrub_outcome(reports)
    if not healthy:
        raise click.exceptions.Exit(1)
