"""Lua test-and-set for the seen filter over sharded bitmap strings (plain Redis, no module).

The layout is a blocked, partitioned Bloom filter: a URL's 128-bit fingerprint picks one
block of k segments (bytes 0-3), and byte 4+i picks one bit in segment i. All k bits then
live in one k*S-byte range: one GETRANGE and at most one SETRANGE per URL, and the client
sends 16 bytes per URL instead of k positions. On the 2-core test VM this costs Redis ~5 us
per new URL and ~3 us per duplicate; a flat list of client-computed positions set with one
BITFIELD per URL cost ~10-13 us (plus packing 10 arguments per URL in Python). The blocked
layout needs a few % more bits for the same error rate (see bloom_sizing.blocked_bits).

KEYS: the shard strings. ARGV: k, segment bytes S, blocks, stride (bytes per URL in the
blob), '1' to add or '0' to only test, the concatenated fingerprints. Returns one byte per
URL: adding, '1' = it was new; testing, '1' = it may have been seen.
"""

from __future__ import annotations

TEST_AND_SET = """
local k, S, nblocks, stride = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local add, blob = ARGV[5] == '1', ARGV[6]
local nshards, BB = #KEYS, k * S
local sbyte, schar, unpack, call = string.byte, string.char, unpack, redis.call
-- Per hash byte v: its byte within the segment (1-based), that bit's value, and twice it.
local BOFF, MASK, M2 = {}, {}, {}
for v = 0, 255 do
  local b = ((v - v % S) / S) % 8
  BOFF[v] = v % S + 1; MASK[v] = 2 ^ b; M2[v] = 2 ^ (b + 1)
end
local zero = string.rep('\\0', BB)
local out = {}
for u = 0, #blob / stride - 1 do
  local o = u * stride
  local a, b, c, d = sbyte(blob, o + 1, o + 4)
  local g = (a + b * 256 + c * 65536 + d * 16777216) % nblocks
  local sh = g % nshards
  local key = KEYS[sh + 1]
  local first = (g - sh) / nshards * BB
  -- Integers below 2^53 reach Redis as plain digits: no string.format needed.
  local blk = call('GETRANGE', key, first, first + BB - 1)
  if #blk < BB then blk = blk .. string.sub(zero, 1, BB - #blk) end
  local base, present, changed = 0, true, nil
  for i = 1, k do
    local v = sbyte(blob, o + 4 + i)
    local bi = base + BOFF[v]
    local cur = sbyte(blk, bi)
    local m = MASK[v]
    if cur % M2[v] < m then
      present = false
      if not add then break end
      if not changed then changed = {sbyte(blk, 1, BB)} end
      changed[bi] = cur + m
    end
    base = base + S
  end
  if add then
    if present then out[u + 1] = '0' else
      out[u + 1] = '1'
      call('SETRANGE', key, first, schar(unpack(changed, 1, BB)))
    end
  else
    out[u + 1] = present and '1' or '0'
  end
end
return table.concat(out)
"""

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
