"""Lua for every domain state change two workers could race on; each script runs atomically.

KEYS = [ready ZSET, leases ZSET, counters HASH, and optionally the epoch key];
ARGV[1] = the `{name}:domain:` prefix.
A domain hash's `state` is 'r' (in ready), 'l' (in leases) or '' (idle); a domain is in at
most one ZSET. `size` and `read_offset` are bytes of the domain's frontier file. Batches
travel as one newline-separated blob (domain keys hold no whitespace), which is far cheaper
to send than thousands of arguments.
"""

from __future__ import annotations

_HEADER = """
local ready, leases, counters = KEYS[1], KEYS[2], KEYS[3]
local prefix = ARGV[1]
-- KEYS[4], when given, is the crawl's epoch key: without it the state was lost (a wiped,
-- restarted or replaced Redis) and nothing may change until it is rebuilt from disk.
if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 0 then
  return redis.error_reply('NOEPOCH the crawl state in this Redis is gone: it must be rebuilt')
end
-- one command for many members (ZADD/ZREM), in chunks that fit Lua's unpack
local function each_chunk(command, key, items)
  for i = 1, #items, 4000 do
    redis.call(command, key, unpack(items, i, math.min(i + 3999, #items)))
  end
end
"""

# release_all(worker, blob of `domain next_fetch_at new_read_offset` lines) -> codes:
# 0 lease lost (nothing changed), 1 back in ready, 2 retired (exhausted or excluded).
_RELEASE = """
local function release_all(worker, blob)
  local codes, unleased, requeued = {}, {}, {}
  local consumed, retired = 0, 0
  for d, next_fetch, new_offset in string.gmatch(blob, '(%S+) (%S+) (%S+)\\n') do
    local key = prefix .. d
    local h = redis.call('HMGET', key, 'lease_owner', 'size', 'read_offset', 'excluded')
    if h[1] ~= worker then
      codes[#codes + 1] = 0
    else
      unleased[#unleased + 1] = d
      local ro_text = h[3] or '0'
      local ro, new = tonumber(ro_text), tonumber(new_offset)
      if new > ro then consumed = consumed + new - ro; ro = new; ro_text = new_offset end
      local state = 'r'
      if h[4] == '1' or (tonumber(h[2]) or 0) <= ro then
        state = ''
        retired = retired + 1
        codes[#codes + 1] = 2
      else
        requeued[#requeued + 1] = next_fetch
        requeued[#requeued + 1] = d
        codes[#codes + 1] = 1
      end
      redis.call('HSET', key, 'read_offset', ro_text, 'next_fetch_at', next_fetch,
                 'lease_owner', '', 'lease_until', '0', 'state', state)
    end
  end
  each_chunk('ZREM', leases, unleased)
  each_chunk('ZADD', ready, requeued)
  if consumed > 0 then redis.call('HINCRBY', counters, 'bytes_consumed', consumed) end
  if retired > 0 then redis.call('HINCRBY', counters, 'domains_retired', retired) end
  return codes
end
"""

# claim(worker, now, lease_seconds, want, max_expired, shard, shards, steal_after) -> leased
# domains. Expired leases go back to ready first; exhausted or excluded due domains are
# retired. With shards > 1 a worker takes the due domains of its shard (a hash of the name)
# and others' only once they have been due for steal_after seconds: a domain keeps going to
# the same process (and its open connection) unless that process falls behind or died.
_CLAIM = """
local function in_shard(d, shard, shards)
  local h = 0
  for i = 1, #d do h = (h * 31 + string.byte(d, i)) % 1000003 end
  return h % shards == shard
end

local function claim(worker, now_text, lease_seconds, want, max_expired, shard, shards, steal_after)
  local now = tonumber(now_text)
  shard, shards = tonumber(shard) or 0, tonumber(shards) or 1
  local steal_before = now - (tonumber(steal_after) or 0)
  want = tonumber(want)
  local lease_until = tostring(now + tonumber(lease_seconds))
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now_text, 'LIMIT', 0, max_expired)
  local requeued = {}
  for _, d in ipairs(expired) do
    local key = prefix .. d
    local h = redis.call('HMGET', key, 'excluded', 'next_fetch_at')
    local state = ''
    if h[1] ~= '1' then
      state = 'r'
      requeued[#requeued + 1] = h[2] or now_text
      requeued[#requeued + 1] = d
    end
    redis.call('HSET', key, 'lease_owner', '', 'lease_until', '0', 'state', state)
  end
  each_chunk('ZREM', leases, expired)
  each_chunk('ZADD', ready, requeued)
  if #expired > 0 then redis.call('HINCRBY', counters, 'leases_expired', #expired) end
  local out, dropped = {}, 0
  local skipped, scan_limit = 0, 4 * want + 100
  while #out < want and skipped < scan_limit do
    local due = redis.call('ZRANGEBYSCORE', ready, '-inf', now_text, 'WITHSCORES',
                           'LIMIT', skipped, want - #out)
    if #due == 0 then break end
    local taken = {}
    for j = 1, #due, 2 do
      if shards <= 1 or tonumber(due[j + 1]) <= steal_before or in_shard(due[j], shard, shards) then
        taken[#taken + 1] = due[j]
      else
        skipped = skipped + 1  -- stays in ready, in front of what the next range returns
      end
    end
    due = taken
    each_chunk('ZREM', ready, due)
    local leased = {}
    for _, d in ipairs(due) do
      local key = prefix .. d
      local h = redis.call('HMGET', key, 'size', 'read_offset', 'excluded')
      if h[3] == '1' or (tonumber(h[1]) or 0) <= (tonumber(h[2]) or 0) then
        redis.call('HSET', key, 'state', '')
        dropped = dropped + 1
      else
        redis.call('HSET', key, 'lease_owner', worker, 'lease_until', lease_until, 'state', 'l')
        leased[#leased + 1] = lease_until
        leased[#leased + 1] = d
        out[#out + 1] = d
      end
    end
    each_chunk('ZADD', leases, leased)
  end
  if dropped > 0 then redis.call('HINCRBY', counters, 'domains_retired', dropped) end
  if #out > 0 then redis.call('HINCRBY', counters, 'claims', #out) end
  return out
end
"""

# ARGV: prefix, worker, now, lease_seconds, max_domains, max_expired, shard, shards,
# steal_after. Returns leased domains.
CLAIM = _HEADER + _CLAIM + """
return claim(ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
"""

# ARGV: prefix, worker, blob of `domain next_fetch_at new_read_offset` lines.
# Per domain: 0 = the lease is no longer ours (nothing changed), 1 = ready, 2 = retired.
RESCHEDULE = _HEADER + _RELEASE + """
return release_all(ARGV[2], ARGV[3])
"""

# ARGV: prefix, worker, blob (as RESCHEDULE), now, lease_seconds, max_domains, max_expired,
# shard, shards, steal_after. Releases, then claims, in one round trip.
# Returns {release codes, leased domains}.
RELEASE_AND_CLAIM = _HEADER + _RELEASE + _CLAIM + """
local codes = release_all(ARGV[2], ARGV[3])
return {codes, claim(ARGV[2], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])}
"""

# ARGV: prefix, now, blob of `domain end_offset urls` lines, and URLs offered (new or not)
# or ''. Returns how many became ready.
# size = max(size, end_offset); an idle, not excluded domain with unread bytes becomes ready.
RECORD_APPENDS = _HEADER + """
local now = ARGV[2]
local offered = tonumber(ARGV[4])
if offered and offered > 0 then redis.call('HINCRBY', counters, 'urls_offered', offered) end
local grown, added, readied = 0, 0, 0
for d, end_offset, urls in string.gmatch(ARGV[3], '(%S+) (%S+) (%S+)\\n') do
  local key = prefix .. d
  local e = tonumber(end_offset)
  added = added + tonumber(urls)
  local h = redis.call('HMGET', key, 'size', 'read_offset', 'state', 'excluded', 'next_fetch_at')
  local size = tonumber(h[1]) or 0
  local grew = e > size
  if grew then grown = grown + e - size; size = e end
  if (not h[3] or h[3] == '') and h[4] ~= '1' and size > (tonumber(h[2]) or 0) then
    redis.call('ZADD', ready, h[5] or now, d)
    readied = readied + 1
    if grew then
      redis.call('HSET', key, 'size', end_offset, 'state', 'r')
    else
      redis.call('HSET', key, 'state', 'r')
    end
  elseif grew then
    redis.call('HSET', key, 'size', end_offset)
  end
end
if added > 0 then redis.call('HINCRBY', counters, 'urls_added', added) end
if grown > 0 then redis.call('HINCRBY', counters, 'bytes_appended', grown) end
return readied
"""

# ARGV: prefix, worker, domain, read_offset or ''. Returns -1 not ours, 0 refused, 1 retired.
RETIRE_IF_EXHAUSTED = _HEADER + """
local d = ARGV[3]
local key = prefix .. d
local h = redis.call('HMGET', key, 'lease_owner', 'size', 'read_offset')
if h[1] ~= ARGV[2] then return -1 end
local ro = tonumber(h[3]) or 0
local new = tonumber(ARGV[4])
if new and new > ro then
  redis.call('HINCRBY', counters, 'bytes_consumed', new - ro)
  ro = new
  redis.call('HSET', key, 'read_offset', ro)
end
if (tonumber(h[2]) or 0) > ro then return 0 end
redis.call('ZREM', leases, d)
redis.call('HSET', key, 'lease_owner', '', 'lease_until', '0', 'state', '')
redis.call('HINCRBY', counters, 'domains_retired', 1)
return 1
"""

# ARGV: prefix, worker, domain, now, lease_seconds, read_offset or ''. Returns 1 if renewed.
RENEW = _HEADER + """
local d = ARGV[3]
local key = prefix .. d
local h = redis.call('HMGET', key, 'lease_owner', 'read_offset')
if h[1] ~= ARGV[2] then return 0 end
local lease_until = tonumber(ARGV[4]) + tonumber(ARGV[5])
redis.call('ZADD', leases, lease_until, d)
redis.call('HSET', key, 'lease_until', lease_until)
local ro, new = tonumber(h[2]) or 0, tonumber(ARGV[6])
if new and new > ro then
  redis.call('HINCRBY', counters, 'bytes_consumed', new - ro)
  redis.call('HSET', key, 'read_offset', new)
end
return 1
"""

# ARGV: prefix, worker, now, lease_seconds, blob of `domain read_offset` lines. Extends the
# leases the worker still holds and raises their read offsets; per domain 1 renewed, 0 lost.
RENEW_MANY = _HEADER + """
local worker, now, lease_seconds = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local lease_until = now + lease_seconds
local codes, renewed, consumed = {}, {}, 0
for d, new_offset in string.gmatch(ARGV[5], '(%S+) (%S+)\\n') do
  local key = prefix .. d
  local h = redis.call('HMGET', key, 'lease_owner', 'read_offset')
  if h[1] ~= worker then
    codes[#codes + 1] = 0
  else
    codes[#codes + 1] = 1
    renewed[#renewed + 1] = lease_until
    renewed[#renewed + 1] = d
    local ro, new = tonumber(h[2]) or 0, tonumber(new_offset)
    if new > ro then
      consumed = consumed + new - ro
      redis.call('HSET', key, 'lease_until', lease_until, 'read_offset', new_offset)
    else
      redis.call('HSET', key, 'lease_until', lease_until)
    end
  end
end
each_chunk('ZADD', leases, renewed)
if consumed > 0 then redis.call('HINCRBY', counters, 'bytes_consumed', consumed) end
return codes
"""

# ARGV: prefix, domain, reason. A leased domain stays leased; its release will not re-add it.
EXCLUDE = _HEADER + """
local d = ARGV[2]
local key = prefix .. d
local h = redis.call('HMGET', key, 'state', 'excluded')
redis.call('HSET', key, 'excluded', '1', 'excluded_reason', ARGV[3])
if h[1] == 'r' then
  redis.call('ZREM', ready, d)
  redis.call('HSET', key, 'state', '')
end
if h[2] ~= '1' then redis.call('HINCRBY', counters, 'domains_excluded', 1) end
return 1
"""

# ARGV: prefix, domain, now. Lifts an exclusion; the domain is ready again if it has URLs.
INCLUDE = _HEADER + """
local d = ARGV[2]
local key = prefix .. d
local h = redis.call('HMGET', key, 'state', 'size', 'read_offset', 'next_fetch_at')
redis.call('HSET', key, 'excluded', '0', 'excluded_reason', '')
if (not h[1] or h[1] == '') and (tonumber(h[2]) or 0) > (tonumber(h[3]) or 0) then
  redis.call('ZADD', ready, h[4] or ARGV[3], d)
  redis.call('HSET', key, 'state', 'r')
  return 1
end
return 0
"""

# ARGV: prefix, worker. Ends every lease `worker` holds now (its process is known dead):
# the next claim re-queues those domains instead of waiting for the leases to run out.
EXPIRE_LEASES_OF = _HEADER + """
local expired = {}
for _, d in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
  if redis.call('HGET', prefix .. d, 'lease_owner') == ARGV[2] then
    expired[#expired + 1] = '0'
    expired[#expired + 1] = d
  end
end
each_chunk('ZADD', leases, expired)
return #expired / 2
"""
