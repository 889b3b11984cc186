"""Lua for every domain state change two workers could race on; each script runs atomically.

KEYS = [ready ZSET, leases ZSET, counters HASH, and optionally the epoch key];
ARGV[1] = the `{name}:domain:` prefix, ARGV[2] = the host gates' prefix ('' = no gates).
A domain hash's `state` is 'r' (in ready), 'l' (in leases) or '' (idle); a domain is in at
most one ZSET. `size` and `read_offset` are bytes of the domain's frontier file. Batches
travel as one newline-separated blob (domain keys hold no whitespace), which is far cheaper
to send than thousands of arguments.

Host gates make politeness towards a host shared by every crawl on this Redis: the hash
`{gate prefix}{domain}`, outside any crawl's prefix, holds `owner` (`worker@{domain
prefix}` of the process whose lease holds the host), `until` (that lease's expiry),
`next_at` (the host's next allowed request, set by the last holder's release) and
`waiting` (the ready ZSETs of crawls that found the host held, space-separated). A crawl
leases a due domain only if its gate is not held by another (or that lease ran out) and
its `next_at` has passed; otherwise the domain goes back to its ready ZSET, due when the
gate frees: `next_at`, or `until`, lowered to `next_at` by the holder's release. A gate
lives until its lease ends or, once released, its `next_at` (its key then expires).
"""

from __future__ import annotations

from frontier_service.frontier.slots import LUA_SLOT_OF, LUA_SLOT_OWNER

HEADER = """
local ready, leases, counters = KEYS[1], KEYS[2], KEYS[3]
local prefix, gate = ARGV[1], ARGV[2]
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

-- host gates (see the module docstring): who holds a gate is the worker within its crawl.
-- Times are kept as the strings they came as (Lua's tostring keeps 14 digits only).
local function gate_owner(worker) return worker .. '@' .. prefix end

local function gate_ttl(key, at, now)
  redis.call('EXPIRE', key, math.max(1, math.ceil(tonumber(at) - now) + 1))
end

local function later(a, b)
  if (tonumber(b) or 0) > (tonumber(a) or 0) then return b end
  return a
end

-- Hold d's gate until `lease_until`: 0 if another holds it and its lease is running, else
-- 1, or 2 when other crawls wait for the host.
local function gate_hold(d, me, now, lease_until)
  local key = gate .. d
  local g = redis.call('HMGET', key, 'owner', 'until', 'waiting')
  if g[1] and g[1] ~= '' and g[1] ~= me and (tonumber(g[2]) or 0) > now then return 0 end
  redis.call('HSET', key, 'owner', me, 'until', lease_until)
  gate_ttl(key, lease_until, now)
  if g[3] and g[3] ~= '' then return 2 end
  return 1
end

-- Free d's gate if `me` holds it: no request before next_at (nil: keep the gate's own);
-- the crawls waiting for it find d due at next_at (true if there were any). A gate nobody
-- holds (it expired) only learns next_at. `now` nil: leave the key's expiry (and an
-- unheld gate) as it is.
local function gate_free(d, me, next_at, now)
  local key = gate .. d
  local g = redis.call('HMGET', key, 'owner', 'until', 'next_at', 'waiting')
  local at = later(g[3] or '0', next_at)
  if g[1] ~= me then
    if now and (not g[1] or g[1] == '' or (tonumber(g[2]) or 0) <= now) and tonumber(at) > now then
      redis.call('HSET', key, 'next_at', at)
      gate_ttl(key, at, now)
    end
    return false
  end
  redis.call('HSET', key, 'owner', '', 'until', '0', 'next_at', at, 'waiting', '')
  if g[4] and g[4] ~= '' then
    for waiting in string.gmatch(g[4], '%S+') do
      redis.call('ZADD', waiting, 'XX', 'LT', at, d)
    end
  end
  if now then gate_ttl(key, at, now) end
  return g[4] ~= nil and g[4] ~= false and g[4] ~= ''
end
"""

# Note that `holder`'s file keeps d's lines [ro, size) (nothing if size <= ro): see lua_machines.py.
ORPHAN = """
local function orphan(d, key, holder, ro, size, orphaned, orphans)
  if holder == '' or size <= ro then return end
  redis.call('HSET', key, 'ro@' .. holder, ro .. ' ' .. size)
  redis.call('SADD', orphans .. holder, d)
  redis.call('HINCRBY', orphaned, holder, size - ro)
  redis.call('HINCRBY', counters, 'domains_orphaned', 1)
  redis.call('HINCRBY', counters, 'bytes_consumed', size - ro)  -- they left this frontier
end
"""

# release_all(worker, blob of `domain next_fetch_at new_read_offset` lines, now) -> codes:
# 0 lease lost (nothing changed), 1 back in ready, 2 retired (exhausted or excluded).
# The host's gate, if ours, is freed with its next request allowed at next_fetch_at.
_RELEASE = """
local TURN_GRACE_S = 0.5  -- how long crawls woken by a release have to take the host first

local function release_all(worker, blob, now_text)
  local now, me = tonumber(now_text), gate_owner(worker)
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
      local woke = gate ~= '' and gate_free(d, me, next_fetch, now)
      local state = 'r'
      if h[4] == '1' or (tonumber(h[2]) or 0) <= ro then
        state = ''
        retired = retired + 1
        codes[#codes + 1] = 2
      else
        -- other crawls waited for the host: their turn first (claimed in this very script,
        -- the domain would go straight back to us)
        requeued[#requeued + 1] = woke and tostring(tonumber(next_fetch) + TURN_GRACE_S) or next_fetch
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
# A due domain whose host gate is held by another crawl's process, or whose next request
# is not allowed yet, goes back to ready, due when the gate frees (counter `gate_waits`).
_CLAIM = """
local function in_shard(d, shard, shards)
  local h = 0
  for i = 1, #d do h = (h * 31 + string.byte(d, i)) % 1000003 end
  return h % shards == shard
end

-- nil if d's gate lets `me` lease it now, else when to try again (its gate is then marked
-- as waited for by this crawl when held: the holder's release makes d due here)
local function gate_blocks(d, me, now)
  local key = gate .. d
  local g = redis.call('HMGET', key, 'owner', 'until', 'next_at', 'waiting')
  local at = g[3] or '0'
  if g[1] and g[1] ~= '' and g[1] ~= me and (tonumber(g[2]) or 0) > now then
    local waiting = g[4] or ''
    if not string.find(' ' .. waiting, ' ' .. ready .. ' ', 1, true) then
      redis.call('HSET', key, 'waiting', waiting .. ready .. ' ')
    end
    return later(at, g[2])
  end
  if tonumber(at) > now then return at end
  return nil
end

-- machines: '' (one machine), or `me slotmap slots orphaned orphans-prefix`: only the
-- domains of the slots `me` owns are taken; one whose hash measures another machine's file
-- is let go (its lines wait on that machine's disk: see lua_machines.py).
local function claim(worker, now_text, lease_seconds, want, max_expired, shard, shards, steal_after,
                     machines)
  local now = tonumber(now_text)
  local machine, slotmap, nslots, orphaned, orphans = string.match(machines or '',
      '(%S+) (%S+) (%S+) (%S+) (%S+)')
  nslots = tonumber(nslots)
  local me = gate_owner(worker)
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
  local out, dropped, waits = {}, 0, 0
  local skipped, scan_limit = 0, 4 * want + 100
  -- each slot's owner read once per call (the scan passes the other machines' due
  -- domains, many per slot)
  local function owner_of(d) return slot_owner(slotmap, d, nslots) end
  while #out < want and skipped + waits < scan_limit do
    local due = redis.call('ZRANGEBYSCORE', ready, '-inf', now_text, 'WITHSCORES',
                           'LIMIT', skipped, want - #out)
    if #due == 0 then break end
    local taken = {}
    for j = 1, #due, 2 do
      if machine and owner_of(due[j]) ~= machine then
        skipped = skipped + 1  -- another machine's: stays in ready for its owner
      elseif shards <= 1 or tonumber(due[j + 1]) <= steal_before or in_shard(due[j], shard, shards) then
        taken[#taken + 1] = due[j]
      else
        skipped = skipped + 1  -- stays in ready, in front of what the next range returns
      end
    end
    due = taken
    each_chunk('ZREM', ready, due)
    local leased, deferred = {}, {}
    for _, d in ipairs(due) do
      local key = prefix .. d
      local h = redis.call('HMGET', key, 'size', 'read_offset', 'excluded', 'm')
      local blocked = nil
      if machine and h[4] ~= machine and h[4] then  -- its lines are on another machine
        orphan(d, key, h[4], tonumber(h[2]) or 0, tonumber(h[1]) or 0, orphaned, orphans)
        redis.call('HSET', key, 'm', '', 'size', '0', 'read_offset', '0', 'state', '')
      elseif h[3] == '1' or (tonumber(h[1]) or 0) <= (tonumber(h[2]) or 0) then
        redis.call('HSET', key, 'state', '')
        dropped = dropped + 1
      else
        if machine and not h[4] then redis.call('HSET', key, 'm', machine) end
        if gate ~= '' then blocked = gate_blocks(d, me, now) end
        if blocked then  -- stays ready (its state is 'r'), due once the gate frees
          deferred[#deferred + 1] = blocked
          deferred[#deferred + 1] = d
          waits = waits + 1
        else
          redis.call('HSET', key, 'lease_owner', worker, 'lease_until', lease_until, 'state', 'l')
          if gate ~= '' then
            local gkey = gate .. d
            redis.call('HSET', gkey, 'owner', me, 'until', lease_until)
            gate_ttl(gkey, lease_until, now)
          end
          leased[#leased + 1] = lease_until
          leased[#leased + 1] = d
          out[#out + 1] = d
        end
      end
    end
    each_chunk('ZADD', leases, leased)
    each_chunk('ZADD', ready, deferred)
  end
  if dropped > 0 then redis.call('HINCRBY', counters, 'domains_retired', dropped) end
  if waits > 0 then redis.call('HINCRBY', counters, 'gate_waits', waits) end
  if #out > 0 then redis.call('HINCRBY', counters, 'claims', #out) end
  return out
end
"""

# ARGV: prefix, gate prefix, worker, now, lease_seconds, max_domains, max_expired, shard,
# shards, steal_after, machines ('' or as `claim` says). Returns leased domains.
CLAIM = HEADER + LUA_SLOT_OF + LUA_SLOT_OWNER + ORPHAN + _CLAIM + """
return claim(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11])
"""

# ARGV: prefix, gate prefix, worker, blob of `domain next_fetch_at new_read_offset` lines,
# now. Per domain: 0 = the lease is no longer ours (nothing changed), 1 = ready, 2 = retired.
RESCHEDULE = HEADER + _RELEASE + """
return release_all(ARGV[3], ARGV[4], ARGV[5])
"""

# ARGV: prefix, gate prefix, worker, blob (as RESCHEDULE), now, lease_seconds, max_domains,
# max_expired, shard, shards, steal_after, machines. Releases, then claims, in one round trip.
# Returns {release codes, leased domains}.
RELEASE_AND_CLAIM = HEADER + LUA_SLOT_OF + LUA_SLOT_OWNER + ORPHAN + _RELEASE + _CLAIM + """
local codes = release_all(ARGV[3], ARGV[4], ARGV[5])
return {codes, claim(ARGV[3], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11],
                     ARGV[12])}
"""

# ARGV: prefix, gate prefix, now, blob of `domain end_offset urls` lines, and URLs offered
# (new or not) or ''. Returns how many became ready.
# size = max(size, end_offset); an idle, not excluded domain with unread bytes becomes ready.
RECORD_APPENDS = HEADER + """
local now = ARGV[3]
local offered = tonumber(ARGV[5])
if offered and offered > 0 then redis.call('HINCRBY', counters, 'urls_offered', offered) end
local grown, added, readied = 0, 0, 0
for d, end_offset, urls in string.gmatch(ARGV[4], '(%S+) (%S+) (%S+)\\n') do
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

# ARGV: prefix, gate prefix, worker, domain, read_offset or '', now, next_fetch_at or ''.
# Returns -1 not ours, 0 refused, 1 retired (its gate freed: next request at next_fetch_at,
# or as the gate had it).
RETIRE_IF_EXHAUSTED = HEADER + """
local d = ARGV[4]
local key = prefix .. d
local h = redis.call('HMGET', key, 'lease_owner', 'size', 'read_offset')
if h[1] ~= ARGV[3] then return -1 end
local ro = tonumber(h[3]) or 0
local new = tonumber(ARGV[5])
if new and new > ro then
  redis.call('HINCRBY', counters, 'bytes_consumed', new - ro)
  ro = new
  redis.call('HSET', key, 'read_offset', ro)
end
if (tonumber(h[2]) or 0) > ro then return 0 end
redis.call('ZREM', leases, d)
redis.call('HSET', key, 'lease_owner', '', 'lease_until', '0', 'state', '')
redis.call('HINCRBY', counters, 'domains_retired', 1)
if gate ~= '' then gate_free(d, gate_owner(ARGV[3]), ARGV[7] ~= '' and ARGV[7] or nil, tonumber(ARGV[6])) end
return 1
"""

# ARGV: prefix, gate prefix, worker, domain, now, lease_seconds, read_offset or ''.
# Returns 1 if renewed (the host's gate too), 0 if the lease is not ours, or the gate is
# held by another crawl's process (our lease then ends: the domain waits in ready).
RENEW = HEADER + """
local worker, d, now = ARGV[3], ARGV[4], tonumber(ARGV[5])
local key = prefix .. d
local h = redis.call('HMGET', key, 'lease_owner', 'read_offset')
if h[1] ~= worker then return 0 end
local lease_until = now + tonumber(ARGV[6])
if gate ~= '' and gate_hold(d, gate_owner(worker), now, lease_until) == 0 then
  redis.call('ZADD', leases, now, d)
  redis.call('HSET', key, 'lease_until', now)
  return 0
end
redis.call('ZADD', leases, lease_until, d)
redis.call('HSET', key, 'lease_until', lease_until)
local ro, new = tonumber(h[2]) or 0, tonumber(ARGV[7])
if new and new > ro then
  redis.call('HINCRBY', counters, 'bytes_consumed', new - ro)
  redis.call('HSET', key, 'read_offset', new)
end
return 1
"""

# ARGV: prefix, gate prefix, worker, now, lease_seconds, blob of `domain read_offset` lines.
# Extends the leases the worker still holds (and their hosts' gates) and raises their read
# offsets; per domain 1 renewed, 2 renewed while other crawls wait for the host (give it
# up soon), 0 lost (as RENEW).
RENEW_MANY = HEADER + """
local worker, now, lease_seconds = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local lease_until = now + lease_seconds
local me = gate_owner(worker)
local codes, renewed, consumed = {}, {}, 0
for d, new_offset in string.gmatch(ARGV[6], '(%S+) (%S+)\\n') do
  local key = prefix .. d
  local h = redis.call('HMGET', key, 'lease_owner', 'read_offset')
  if h[1] ~= worker then
    codes[#codes + 1] = 0
  else
    local code, ends = 1, lease_until
    if gate ~= '' then code = gate_hold(d, me, now, lease_until) end
    if code == 0 then ends = now end  -- another crawl's process holds the host: ours ends
    codes[#codes + 1] = code
    renewed[#renewed + 1] = ends
    renewed[#renewed + 1] = d
    local ro, new = tonumber(h[2]) or 0, tonumber(new_offset)
    if new > ro then
      consumed = consumed + new - ro
      redis.call('HSET', key, 'lease_until', ends, 'read_offset', new_offset)
    else
      redis.call('HSET', key, 'lease_until', ends)
    end
  end
end
each_chunk('ZADD', leases, renewed)
if consumed > 0 then redis.call('HINCRBY', counters, 'bytes_consumed', consumed) end
return codes
"""

# ARGV: prefix, gate prefix, domain, reason. A leased domain stays leased; its release
# will not re-add it.
EXCLUDE = HEADER + """
local d = ARGV[3]
local key = prefix .. d
local h = redis.call('HMGET', key, 'state', 'excluded')
redis.call('HSET', key, 'excluded', '1', 'excluded_reason', ARGV[4])
if h[1] == 'r' then
  redis.call('ZREM', ready, d)
  redis.call('HSET', key, 'state', '')
end
if h[2] ~= '1' then redis.call('HINCRBY', counters, 'domains_excluded', 1) end
return 1
"""

# ARGV: prefix, gate prefix, domain, now. Lifts an exclusion; the domain is ready again if
# it has URLs.
INCLUDE = HEADER + """
local d = ARGV[3]
local key = prefix .. d
local h = redis.call('HMGET', key, 'state', 'size', 'read_offset', 'next_fetch_at')
redis.call('HSET', key, 'excluded', '0', 'excluded_reason', '')
if (not h[1] or h[1] == '') and (tonumber(h[2]) or 0) > (tonumber(h[3]) or 0) then
  redis.call('ZADD', ready, h[4] or ARGV[4], d)
  redis.call('HSET', key, 'state', 'r')
  return 1
end
return 0
"""

# ARGV: prefix, gate prefix, worker. Ends every lease `worker` holds now (its process is
# known dead): the next claim re-queues those domains instead of waiting for the leases to
# run out, and other crawls may take their hosts (no sooner than the gates' next_at).
EXPIRE_LEASES_OF = HEADER + """
local me = gate_owner(ARGV[3])
local expired = {}
for _, d in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
  if redis.call('HGET', prefix .. d, 'lease_owner') == ARGV[3] then
    expired[#expired + 1] = '0'
    expired[#expired + 1] = d
    if gate ~= '' then gate_free(d, me, nil, nil) end
  end
end
each_chunk('ZADD', leases, expired)
return #expired / 2
"""
