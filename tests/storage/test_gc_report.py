"""What gc's report says on an S3 primary, where blobs go to the bucket's trash first and
only the trash's deletions free bytes."""

import pytest

from archive_pipelines.storage.gc_report import GcReport, Tally


@pytest.mark.unit
@pytest.mark.parametrize(("dry_run", "first"), [
    (True, "dry run, nothing changed: would move 3 blob(s) (2.0 KiB) of 4 unreferenced past "
           "the grace period to the trash; would free 1.0 KiB by deleting 2 object(s) from "
           "the trash"),
    (False, "moved 3 blob(s) (2.0 KiB) of 4 unreferenced past the grace period to the trash; "
            "freed 1.0 KiB by deleting 2 object(s) from the trash"),
])
def test_gc_on_s3_frees_only_what_it_deletes_from_the_trash(dry_run: bool, first: str) -> None:
    report = GcReport(dry_run=dry_run, deferred=True, candidates=4,
                      blobs=Tally(count=3, bytes=2048), trash=Tally(count=2, bytes=1024),
                      trash_restored=1, trash_waiting=5)
    assert report.total_bytes_freed == 1024
    assert report.log_lines() == [first, "kept or skipped: 1 put back from the trash "
                                         "(referenced again); 5 in the trash within the grace"]
    metadata = report.as_metadata()
    assert (metadata["trash_deleted"], metadata["trash_bytes_freed"]) == (2, 1024)
    assert (metadata["trash_restored"], metadata["trash_waiting"]) == (1, 5)
