"""What `verify` says at the end: the verdict, what it covered, and what it did not read."""

from __future__ import annotations

from collections.abc import Sequence

from archive_pipelines.storage.verify import VerifyReport


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
        lines.append(f"{primary}: healthy ({report.blobs_checked:,} blobs {contents}); "
                     f"views: healthy ({report.links_checked:,} links)")
    if replicas:
        lines.append(f"replicas: not checked ({', '.join(replicas)}): run `archive-pipelines "
                     "scrub`, or `archive-pipelines replication-status --verify` for a sample")
    return lines
