"""What `verify` says: what it checked, each problem by name, the verdict, what it covered
and what it did not read."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from archive_pipelines.catalog import BlobCounts
from archive_pipelines.storage.verify import KINDS, LINK_KINDS, VerifyReport

# Counted by the blob counts line instead: an unreferenced blob is gc's, not a problem.
_NOT_LISTED = ("orphan_blobs",)


# Kinds whose examples are blobs the primary store should hold: shown with the file's path.
_BLOB_FILE_KINDS = ("missing_blob_files", "corrupt_blob_files", "missing_aliases")

BlobPath = Callable[[str], str]  # a sha256 -> its file's path in the primary store


def named(kind: str, example: str, blob_path: BlobPath) -> str:
    """A problem's name as a person finds it: a link as its path under archive/, a blob
    file as its sha256 and its path."""
    if kind in LINK_KINDS:
        return f"archive/{example}"
    if kind in _BLOB_FILE_KINDS:
        return f"{example}  ({blob_path(example)})"
    return example


def echo_verify_report(report: VerifyReport, counts: BlobCounts, *, deep: bool,
                       blob_path: BlobPath) -> None:
    """What was checked, the catalog's blob counts, then each kind of problem found: its
    count and the first of them by name."""
    if report.views_checked:
        click.echo(f"checked {report.blobs_checked:,} referenced blobs"
                   f"{' (hashed)' if deep else ''}, {report.files_checked:,} files, "
                   f"{report.links_checked:,} links")
    else:
        click.echo(f"checked {report.blobs_checked:,} referenced blobs"
                   f"{' (hashed)' if deep else ''} against one listing of the bucket")
    click.echo(f"blobs: {counts.line()}")
    for kind in KINDS:
        if not report.found[kind] or kind in _NOT_LISTED:
            continue
        fixed = f", fixed {report.fixed[kind]:,}" if report.fixed[kind] else ""
        click.echo(f"  {kind:<22} {report.found[kind]:,}{fixed}")
        shown = report.examples.get(kind, [])
        for example in shown:
            click.echo(f"    {named(kind, example, blob_path)}")
        if report.found[kind] > len(shown):
            click.echo(f"    ... and {report.found[kind] - len(shown):,} more (--json lists "
                       "every one)")


def verify_json(report: VerifyReport, counts: BlobCounts, verdict: Sequence[str], *,
                blob_path: BlobPath) -> dict[str, object]:
    """The whole report: every problem by name, the counts, the verdict lines."""
    return {
        "checked": {"referenced_blobs": report.blobs_checked, "files": report.files_checked,
                    "links": report.links_checked},
        "blobs": counts.as_dict(),
        "problems": report.problems,
        "found": {kind: n for kind, n in report.found.items() if kind not in _NOT_LISTED},
        "fixed": {kind: n for kind, n in report.fixed.items() if n},
        "named": {kind: [named(kind, example, blob_path) for example in examples]
                  for kind, examples in report.examples.items()},
        "verdict": list(verdict),
    }


def verify_verdict(report: VerifyReport, *, deep: bool, primary: str,
                   replicas: Sequence[str]) -> list[str]:
    """The closing lines of `verify`. "healthy" only names what was checked; copies at the
    other stores are never read by `verify`, and it says so."""
    lines = []
    pending = report.found["crawl_pending"]
    if report.problems:
        lines.append(f"{report.problems:,} problem(s) left")
    elif pending:  # not "healthy": those files are not in the catalog yet
        lines.append(f"no problems, but {pending:,} crawled bodies are not in the catalog yet: "
                     "run `archive-pipelines ingest-crawl --all`")
    else:
        contents = "hashed" if deep else "present; contents not hashed: --deep reads them"
        views = (f"views: healthy ({report.links_checked:,} links)" if report.views_checked
                 else "views: none to check (an S3 primary has no symlink views)")
        lines.append(f"{primary}: healthy ({report.blobs_checked:,} referenced blobs {contents}); "
                     + views)
    if replicas:
        lines.append(f"replicas: not checked ({', '.join(replicas)}): run `archive-pipelines "
                     "scrub`, or `archive-pipelines replication-status --verify` for a sample")
    return lines
