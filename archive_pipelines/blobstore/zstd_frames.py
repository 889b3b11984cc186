"""Follow zstd frame boundaries in a byte stream, to tell a complete object from a truncated one.

The zstandard stream reader ends quietly when its input runs out mid-frame; this tracker walks
the frame and block headers (RFC 8878) as the compressed bytes pass by, without decoding.
"""

from __future__ import annotations

_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MIN, _SKIPPABLE_MAX = 0x184D2A50, 0x184D2A5F

_MAGIC = "magic"
_DESCRIPTOR = "descriptor"
_HEADER_REST = "header_rest"
_BLOCK_HEADER = "block_header"
_BLOCK_BODY = "block_body"
_CHECKSUM = "checksum"
_SKIPPABLE_SIZE = "skippable_size"
_SKIPPABLE_BODY = "skippable_body"
_SKIPPED_STATES = (_BLOCK_BODY, _SKIPPABLE_BODY)  # bodies are counted, not buffered


class ZstdFrameTracker:
    """Feed it the compressed bytes in order; `complete` says whether they end on a frame end."""

    def __init__(self) -> None:
        self._state = _MAGIC
        self._need = 4
        self._field = bytearray()
        self._frames = 0
        self._checksum = False
        self._last_block = False
        self.broken = False  # bytes that are not zstd framing: the decoder reports those

    @property
    def complete(self) -> bool:
        """At least one frame, and the bytes so far end exactly at a frame boundary."""
        return (not self.broken and self._state == _MAGIC and not self._field
                and self._frames > 0)

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        pos = 0
        while pos < len(view) and not self.broken:
            take = min(self._need, len(view) - pos)
            if self._state not in _SKIPPED_STATES:
                self._field += view[pos:pos + take]
            pos += take
            self._need -= take
            while self._need == 0 and not self.broken:
                self._step()

    def _expect(self, state: str, need: int) -> None:
        self._state = state
        self._need = need
        self._field.clear()

    def _step(self) -> None:
        value = int.from_bytes(self._field, "little")
        if self._state == _MAGIC:
            if value == _ZSTD_MAGIC:
                self._expect(_DESCRIPTOR, 1)
            elif _SKIPPABLE_MIN <= value <= _SKIPPABLE_MAX:
                self._expect(_SKIPPABLE_SIZE, 4)
            else:
                self.broken = True
        elif self._state == _DESCRIPTOR:
            self._start_frame(value)
        elif self._state == _HEADER_REST:
            self._expect(_BLOCK_HEADER, 3)
        elif self._state == _BLOCK_HEADER:
            self._last_block = bool(value & 1)
            block_type, block_size = (value >> 1) & 3, value >> 3
            if block_type == 3:
                self.broken = True
            else:
                self._expect(_BLOCK_BODY, 1 if block_type == 1 else block_size)  # RLE: one byte
        elif self._state == _BLOCK_BODY:
            if not self._last_block:
                self._expect(_BLOCK_HEADER, 3)
            elif self._checksum:
                self._expect(_CHECKSUM, 4)
            else:
                self._end_frame()
        elif self._state == _CHECKSUM:
            self._end_frame()
        elif self._state == _SKIPPABLE_SIZE:
            self._expect(_SKIPPABLE_BODY, value)
        else:  # _SKIPPABLE_BODY
            self._expect(_MAGIC, 4)

    def _start_frame(self, descriptor: int) -> None:
        if descriptor & 0x08:  # reserved bit
            self.broken = True
            return
        single_segment = bool(descriptor & 0x20)
        self._checksum = bool(descriptor & 0x04)
        window = 0 if single_segment else 1
        dictionary_id = (0, 1, 2, 4)[descriptor & 0x03]
        content_size = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        self._expect(_HEADER_REST, window + dictionary_id + content_size)

    def _end_frame(self) -> None:
        self._frames += 1
        self._expect(_MAGIC, 4)
