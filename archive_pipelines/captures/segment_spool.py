"""The crawler's local segments on a deployment whose primary is S3: a spool.

The crawler writes each segment to the data dir as always (atomically, fsynced), then
uploads it to the bucket under the same relative name (checksummed, verified by S3) and
removes its local copy, which we wrote. An upload that fails leaves the file, so the next
segment close, the next crawler start, or an `ingest-crawl` on that machine uploads it.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import BlobStoreError
from archive_pipelines.captures.segment_files import find_segments
from archive_pipelines.captures.segment_source import SegmentSource

log = logging.getLogger(__name__)


@dataclass
class SpoolUpload:
    """What one pass over the spool did: segments uploaded, and the first failure."""

    uploaded: list[str] = field(default_factory=list)
    left: int = 0  # segments still spooled locally
    error: str = ""


def upload_spooled_segments(source: SegmentSource, data_dir: Path) -> SpoolUpload:
    """Upload every local segment of `data_dir` to a bucket source, removing each local copy
    once stored; stops at the first store failure (the store is most likely down: the rest
    wait for the next pass). Nothing to do for a local source."""
    done = SpoolUpload()
    if source.is_local:
        return done
    local, _skipped = find_segments(data_dir)
    for n, segment in enumerate(local):
        try:
            source.store_file(segment.relative, segment.path)
        except FileNotFoundError:  # another process of the crawl uploaded it meanwhile
            continue
        except (BlobStoreError, OSError) as exc:
            done.error = f"uploading {segment.relative} failed: {exc}"
            done.left = len(local) - n
            log.warning("%s; %d segment(s) stay in %s until the next upload", done.error,
                        done.left, data_dir / "sessions")
            return done
        segment.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # the session's and the day's folders, once empty
            segment.path.parent.rmdir()
            segment.path.parent.parent.rmdir()
        done.uploaded.append(segment.relative)
    return done
