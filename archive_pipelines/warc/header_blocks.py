"""WARC and HTTP header blocks parsed as warcio's `StatusAndHeadersParser.parse` parses them,
from the bytes its reader already holds, rather than one `readline` at a time.

warcio's parser reads a block line by line through three layers of Python readers (the
record's `LimitReader`, the `BufferedReader` and its `BytesIO`): most of an import's time per
record. Here the status line is read as warcio reads it; the lines after it are taken from
the reader's buffer (the decompressed block it has filled), cut at `\\n` as `readline` cuts
them, up to the first one that is blank once decoded and stripped (where warcio's parser
stops), and the reader is advanced past them, exactly as the reads would have. The lines
are then parsed with warcio's rules (each line decoded as UTF-8 else Latin-1 and stripped on
the right; `name: value`, the name stripped of spaces and tabs on the right, the value on
the left; a line starting with a space or tab continues the value; a line without a colon
is dropped) into the same `StatusAndHeaders`.

Whenever the buffer does not hold the whole block (it straddles a refill), or the reader is
not one whose buffer we know, or the record's limit would cut a line, warcio's own parser
reads the block: the result is the same either way; tests/warc/test_header_blocks.py
compares the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from warcio.bufferedreaders import BufferedReader, ChunkedDataReader
from warcio.limitreader import LimitReader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

# (the lines read, status line first) -> None: told every line a block's parse read.
LineSink = Callable[[list[bytes]], None]


def _decoded(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("iso-8859-1")


def _buffered_lines(stream: Any) -> tuple[list[bytes], list[str]] | None:
    """The lines `readline` would return from `stream` up to the first blank one (included),
    taken from its reader's buffer and consumed, and each decoded; None (nothing consumed)
    when the buffer does not hold them all or the stream is not a reader we know."""
    limit: int | None = None
    reader = stream
    if type(reader) is LimitReader:
        limit = reader.limit
        reader = reader.stream
    if not isinstance(reader, BufferedReader) or isinstance(reader, ChunkedDataReader):
        return None
    buff = reader.buff
    if buff is None:
        return None
    data: bytes = buff.getvalue()  # the bytes the BytesIO was made from: no copy
    start = position = buff.tell()
    end = min(reader.buff_size, len(data))
    if limit is not None:
        end = min(end, start + limit)
    lines, texts = [], []
    while True:
        newline = data.find(b"\n", position, end)
        if newline < 0:
            return None
        line = data[position:newline + 1]
        text = _decoded(line)
        lines.append(line)
        texts.append(text)
        position = newline + 1
        if not text.rstrip():
            break
    buff.seek(position)
    if limit is not None:
        stream.limit -= position - start
    return lines, texts


def parse_block(parser: StatusAndHeadersParser, stream: Any, full_statusline: Any = None, *,
                sink: LineSink | None = None) -> StatusAndHeaders:
    """`parser.parse(stream, full_statusline)`, the same result and the same bytes read
    (see the module docstring); `sink` is given every line read, the status line first."""
    if full_statusline is None:
        full_statusline = stream.readline()
    status = parser.decode_header(full_statusline) if full_statusline else ""
    statusline = status.rstrip()
    protocol_status: Any = None
    if statusline:  # else warcio's parser says so (an EOFError, or an empty block)
        if parser.verify:
            protocol_status = parser.split_prefix(statusline, parser.statuslist)
        else:
            protocol_status = statusline.split(" ", 1)
    read = _buffered_lines(stream) if protocol_status else None
    if read is None:  # warcio's parser reads the block (or refuses its status line)
        parse = type(parser).parse  # the class's: `install` replaces the instance's
        if sink is None:
            return parse(parser, stream, full_statusline)
        recorded = [full_statusline]
        sink(recorded)
        return parse(parser, _Recording(stream, recorded), full_statusline)
    lines, texts = read
    if sink is not None:
        sink([full_statusline, *lines])
    total = len(status)
    headers: list[tuple[str, str]] = []
    name, value = "", None
    for number, text in enumerate(texts):
        total += len(text)
        line = text.rstrip()
        if number and line[:1] in (" ", "\t"):  # continues the value (the first line cannot)
            if value is not None:
                value += line
            continue
        if value is not None:
            headers.append((name, value))
        name, colon, rest = line.partition(":")
        if colon:
            name, value = name.rstrip(" \t"), rest.lstrip()
        else:
            value = None
    # The last line is blank: it closed the last header, if any, above.
    statusline = protocol_status[1].strip() if len(protocol_status) > 1 else ""
    block = StatusAndHeaders.__new__(StatusAndHeaders)  # the headers are str pairs already
    block.statusline, block.headers, block.protocol = statusline, headers, protocol_status[0]
    block.total_len, block.headers_buff = total, None
    return block


class _Recording:
    """A stream whose lines read are kept (warcio's parser reads a block by readline)."""

    def __init__(self, stream: Any, lines: list[bytes]) -> None:
        self._stream = stream
        self._lines = lines

    def readline(self, *args: Any) -> bytes:
        line: bytes = self._stream.readline(*args)
        self._lines.append(line)
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
