"""Lua test-and-set for the seen filter over sharded bitmap strings (plain Redis, no module).

The layout is a blocked, partitioned Bloom filter: a URL's 128-bit fingerprint picks one
block of k segments (bytes 0-3), and byte 4+i picks one bit in segment i. All k bits then
live in one k*S-byte range: one GETRANGE and at most one SETRANGE per URL. A flat list of
positions set with BITFIELD cost Redis more (~4 us per URL when the client sends it, ~8 us
built in Lua: argument conversion and parsing). The blocked layout needs a few % more bits
for the same error rate (see bloom_sizing.blocked_bits).

Lua's instructions are what cost (on the 2-core VM each redis.call is ~1.3 us, each VM
instruction ~15 ns), so the script is generated for the layout's k with the loop over the
hashes unrolled; the client maps every hash byte to its byte offset and bit value with two
bytes.translate calls (no lookup tables built per call); and a new URL's block is rewritten
from its first to its last changed byte as one concatenation of the changed bytes and the
runs between them, not rebuilt through a table and string.char(unpack(...)).

KEYS: the shard strings. ARGV: blocks, stride (bytes per URL in each blob), '1' to add or
'0' to only test, the concatenated fingerprints, the same translated to byte offsets within
a segment, and translated to bit values. Returns one byte per URL: adding, '1' = it was new;
testing, '1' = it may have been seen.
"""

from __future__ import annotations

from functools import cache

# 3 locals per hash and a 2k-1 operand concatenation fit Lua's 250 registers up to here.
MAX_HASHES = 40

_HEAD = """
local nblocks, stride = tonumber(ARGV[1]), tonumber(ARGV[2])
local add, blob, offsets, masks = ARGV[3] == '1', ARGV[4], ARGV[5], ARGV[6]
local nshards, BB = #KEYS, {block_bytes}
local sbyte, schar, ssub, call = string.byte, string.char, string.sub, redis.call
local zero = string.rep('\\0', BB)
local out = {{}}
-- Shards are allocated when the filter is opened: one gone means the filter was lost.
if call('EXISTS', unpack(KEYS)) < nshards then
  return redis.error_reply('NOEPOCH the seen filter is gone: it must be rebuilt')
end
for u = 0, #blob / stride - 1 do
  local o = u * stride
  local a, b, c, d = sbyte(blob, o + 1, o + 4)
  local {ps} = sbyte(offsets, o + 5, o + {last})
  local {ms} = sbyte(masks, o + 5, o + {last})
  local g = (a + b * 256 + c * 65536 + d * 16777216) % nblocks
  local sh = g % nshards
  local key = KEYS[sh + 1]
  local first = (g - sh) / nshards * BB
  -- Integers below 2^53 reach Redis as plain digits: no string.format needed.
  local blk = call('GETRANGE', key, first, first + BB - 1)
  if #blk < BB then blk = blk .. ssub(zero, 1, BB - #blk) end
  local new = false
"""

# Hash i: p = its byte in the block (1-based), y = that byte, with bit m set if it was not.
_HASH = """  p{i} = p{i} + {base}
  local y{i} = sbyte(blk, p{i})
  if y{i} % (m{i} + m{i}) < m{i} then y{i} = y{i} + m{i}; new = true end
"""

_TAIL = """  if new then
    out[u + 1] = add and '1' or '0'
    if add then call('SETRANGE', key, first + p1 - 1, {rebuilt}) end
  else
    out[u + 1] = add and '0' or '1'
  end
end
return table.concat(out)
"""


@cache
def test_and_set(hashes: int, segment_bytes: int) -> str:
    """The test-and-set script for k = hashes segments of segment_bytes bytes each."""
    if not 1 <= hashes <= MAX_HASHES:
        raise ValueError(f"the seen filter supports 1 to {MAX_HASHES} hashes, not {hashes}")
    k = hashes
    parts = [_HEAD.format(block_bytes=k * segment_bytes, last=4 + k,
                          ps=", ".join(f"p{i}" for i in range(1, k + 1)),
                          ms=", ".join(f"m{i}" for i in range(1, k + 1)))]
    parts += [_HASH.format(i=i, base=(i - 1) * segment_bytes + 1) for i in range(1, k + 1)]
    # Bytes p1..pk, with the runs between them copied from the block as they were.
    pieces = ["schar(y1)"]
    for i in range(2, k + 1):
        pieces += [f"ssub(blk, p{i - 1} + 1, p{i} - 1)", f"schar(y{i})"]
    parts.append(_TAIL.format(rebuilt=" .. ".join(pieces)))
    return "".join(parts)


@cache
def hash_byte_tables(segment_bytes: int) -> tuple[bytes, bytes]:
    """bytes.translate tables: a hash byte's byte offset in its segment, and its bit's value."""
    offsets = bytes(v % segment_bytes for v in range(256))
    masks = bytes(1 << ((v // segment_bytes) % 8) for v in range(256))
    return offsets, masks


# KEYS: shards. ARGV: bytes per shard. Allocates each shard once, never clobbering set bits.
PREALLOCATE = """
for _, key in ipairs(KEYS) do
  if redis.call('STRLEN', key) < tonumber(ARGV[1]) then
    redis.call('SETRANGE', key, tonumber(ARGV[1]) - 1, '\\0')
  end
end
return #KEYS
"""

# KEYS: meta hash. ARGV: field, value pairs. Writes the layout once; returns the stored one.
CREATE_META = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
"""
