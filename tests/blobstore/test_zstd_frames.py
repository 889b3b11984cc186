import os
from typing import Any

import pytest
import zstandard

from archive_pipelines.blobstore.zstd_frames import ZstdFrameTracker

pytestmark = pytest.mark.unit

# Random bytes make raw blocks, repeats make compressed and RLE blocks; > 128 KiB = several blocks.
PAYLOAD = os.urandom(150_000) + b"\0" * 300_000 + b"abc" * 50_000


def _frame(data: bytes, **options: Any) -> bytes:
    return zstandard.ZstdCompressor(level=3, **options).compress(data)


def _complete(data: bytes, chunk: int = 4096) -> bool:
    tracker = ZstdFrameTracker()
    for start in range(0, len(data), chunk):
        tracker.feed(data[start:start + chunk])
    return tracker.complete


@pytest.mark.parametrize("options", [
    {}, {"write_checksum": True}, {"write_content_size": False},
    {"write_checksum": True, "write_content_size": False},
])
@pytest.mark.parametrize("payload", [b"", b"x", PAYLOAD])
def test_a_whole_frame_is_complete_and_every_cut_is_not(options: dict[str, bool],
                                                        payload: bytes) -> None:
    frame = _frame(payload, **options)
    assert _complete(frame)
    assert _complete(frame, chunk=1)
    cuts = set(range(min(len(frame), 64))) | set(range(len(frame) - 16, len(frame)))
    cuts |= set(range(0, len(frame), 997))
    for cut in sorted(c for c in cuts if 0 <= c < len(frame)):
        assert not _complete(frame[:cut]), f"cut at {cut} of {len(frame)} looked complete"


def test_streamed_frames_and_multiple_frames() -> None:
    chunks = [PAYLOAD[i:i + 70_000] for i in range(0, len(PAYLOAD), 70_000)]
    streamed = zstandard.ZstdCompressor(level=3).compressobj()
    frame = b"".join(streamed.compress(c) for c in chunks) + streamed.flush()
    assert _complete(frame)
    assert _complete(frame + _frame(b"second"))
    assert not _complete(frame + _frame(b"second")[:-1])


def test_skippable_frames_are_followed_but_do_not_count() -> None:
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"xyz"
    assert not _complete(skippable)
    assert _complete(skippable + _frame(b"data"))
    assert _complete(_frame(b"data") + skippable)
    assert not _complete(_frame(b"data") + skippable[:-1])


def test_non_zstd_bytes_are_never_complete() -> None:
    tracker = ZstdFrameTracker()
    tracker.feed(b"this is not zstd at all")
    assert tracker.broken
    assert not tracker.complete
