"""Lua for several machines crawling one frontier: the slot map, appends by a slot's owner,
and moving a machine's unfetched lines to whoever owns their domains now.

A domain's hash names the machine whose frontier file its `size` and `read_offset` measure
(`m`; absent: the one machine of a crawl that never ran with `--machine`). Only the owner of
a domain's slot appends to it or claims it. When the slot went to another machine after its
owner died, that file is out of reach: the first append or claim there notes the holder's
range (`ro@{holder}` = `read_offset size`) and the domain starts afresh on the new owner's
file; the holder, when it comes back, sends those lines on (DETACH_SEND). A machine that never
comes back has lost them: `{name}:orphaned` counts their bytes per machine.
"""

from __future__ import annotations

from frontier_service.frontier.lua_domain import HEADER, ORPHAN
from frontier_service.frontier.slots import LUA_SLOT_OF, LUA_SLOT_OWNER

# KEYS: machines, slotmap, slot count, counters. ARGV: me, now, lease_seconds, slots.
# Renews `me`'s lease, takes free slots and those of machines whose lease ran out, up to a
# fair share (slots / live machines, rounded up). Returns {mine, leaving (`>me`), give, live}:
# `give` slots `me` should hand over because a live machine holds fewer than its share and
# no slot is free.
HEARTBEAT = """
local machines, slotmap, slot_count, counters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local me, now, lease, nslots = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local fixed = redis.call('GET', slot_count)
if not fixed then
  redis.call('SET', slot_count, ARGV[4])
elseif tonumber(fixed) ~= nslots then
  return redis.error_reply('SLOTS this crawl has ' .. fixed .. ' slots, not ' .. ARGV[4])
end
redis.call('HSET', machines, me, tostring(now + lease))
local live, nlive = {}, 0
local all = redis.call('HGETALL', machines)
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) > now then live[all[i]] = true; nlive = nlive + 1 end
end
local owners = {}
local map = redis.call('HGETALL', slotmap)
for i = 1, #map, 2 do owners[tonumber(map[i])] = map[i + 1] end
local counts, mine, leaving, takeable = {}, {}, {}, {}
for s = 0, nslots - 1 do
  local o = owners[s] or ''
  local holder = o
  if string.sub(o, 1, 1) == '>' then holder = string.sub(o, 2) end
  if o == me then
    mine[#mine + 1] = s
  elseif holder == me then
    leaving[#leaving + 1] = s
  elseif holder ~= '' and live[holder] then
    counts[holder] = (counts[holder] or 0) + 1
  else
    takeable[#takeable + 1] = s
  end
end
local fair = math.ceil(nslots / nlive)
local taken = 0
while #mine < fair and taken < #takeable do
  taken = taken + 1
  local s = takeable[taken]
  if owners[s] and owners[s] ~= '' then redis.call('HINCRBY', counters, 'slots_taken_over', 1) end
  redis.call('HSET', slotmap, s, me)
  mine[#mine + 1] = s
end
local give = 0
if taken == #takeable and #mine > fair then
  local floor = math.floor(nslots / nlive)
  for m, _ in pairs(live) do
    if m ~= me and (counts[m] or 0) < floor then give = give + floor - (counts[m] or 0) end
  end
  give = math.min(give, #mine - fair)
end
return {mine, leaving, give, nlive}
"""

# KEYS: slotmap. ARGV: me, then slots. Marks those of the slots `me` owns as being handed
# over (`>me`): nobody appends to or claims their domains until FREE. Returns them.
LEAVE = """
local out = {}
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then
    redis.call('HSET', KEYS[1], ARGV[i], '>' .. ARGV[1])
    out[#out + 1] = ARGV[i]
  end
end
return out
"""

# KEYS: slotmap. ARGV: me, then slots. Frees the slots `me` was handing over.
FREE = """
local freed = 0
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == '>' .. ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    freed = freed + 1
  end
end
return freed
"""

# ARGV: prefix, gate prefix, now, blob of `domain start_offset end_offset urls` lines, URLs
# offered or '', me, slotmap key, slots, orphaned key, orphans key prefix, blob of `inbox
# entry-id` lines to acknowledge, '' (unused), the inboxes' consumer group. As
# RECORD_APPENDS, for the owner of the domains' slots: a domain whose slot `me` does not own
# (nor is handing over) is refused (nothing changes);
# one whose hash measures another machine's file starts afresh on ours at start_offset.
# Acknowledges (and deletes) the stream entries when nothing was refused.
# Returns {domains readied, refused domains}.
RECORD_OWNED_APPENDS = HEADER + LUA_SLOT_OF + LUA_SLOT_OWNER + ORPHAN + """
local now, me, slotmap, nslots = ARGV[3], ARGV[6], ARGV[7], tonumber(ARGV[8])
local orphaned, orphans = ARGV[9], ARGV[10]
local offered = tonumber(ARGV[5])
if offered and offered > 0 then redis.call('HINCRBY', counters, 'urls_offered', offered) end
local grown, added, readied, refused = 0, 0, 0, {}
for d, start_offset, end_offset, urls in string.gmatch(ARGV[4], '(%S+) (%S+) (%S+) (%S+)\\n') do
  -- A slot being handed over (`>me`) is still ours until freed (once none of its domains
  -- is leased here): refused, the lines would stay in our file past the size Redis records,
  -- where our worker still leasing the domain reads them, and go to the new owner as well
  -- (fetched twice).
  local owner = slot_owner(slotmap, d, nslots)
  if owner ~= me and owner ~= '>' .. me then
    refused[#refused + 1] = d
  else
    local key = prefix .. d
    local h = redis.call('HMGET', key, 'size', 'read_offset', 'state', 'excluded',
                         'next_fetch_at', 'm')
    local size, ro, state = tonumber(h[1]) or 0, tonumber(h[2]) or 0, h[3]
    if h[6] and h[6] ~= me then  -- another machine's file, or moving ('')
      orphan(d, key, h[6], ro, size, orphaned, orphans)
      if state == 'l' then redis.call('ZREM', leases, d); state = '' end
      size = tonumber(start_offset); ro = size
      redis.call('HSET', key, 'm', me, 'size', size, 'read_offset', ro, 'lease_owner', '',
                 'lease_until', '0', 'state', state or '')
    elseif not h[6] then
      redis.call('HSET', key, 'm', me)
    end
    local e = tonumber(end_offset)
    added = added + tonumber(urls)
    local grew = e > size
    if grew then grown = grown + e - size; size = e end
    if (not state or state == '') and h[4] ~= '1' and size > ro then
      redis.call('ZADD', ready, h[5] or now, d)
      readied = readied + 1
      redis.call('HSET', key, 'size', size, 'state', 'r')
    elseif grew then
      redis.call('HSET', key, 'size', size)
    end
  end
end
if added > 0 then redis.call('HINCRBY', counters, 'urls_added', added) end
if grown > 0 then redis.call('HINCRBY', counters, 'bytes_appended', grown) end
if #refused == 0 then
  for stream, entry in string.gmatch(ARGV[11], '(%S+) (%S+)\\n') do
    redis.call('XACK', stream, ARGV[13], entry)
    redis.call('XDEL', stream, entry)
  end
end
return {readied, refused}
"""

# ARGV: prefix, gate prefix, me, domain, from, to, lines, inbox stream, orphaned key,
# orphans key prefix. Sends d's unfetched lines [from, to) of `me`'s file to the inbox of
# its slot and lets go of the domain, in one step: 1 sent, 0 leased (try later), -1 the
# range is not what Redis holds (read again), 2 nothing of `me`'s is left (the file is stale).
DETACH_SEND = HEADER + ORPHAN + """
local me, d, from, to, lines = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local key = prefix .. d
local h = redis.call('HMGET', key, 'm', 'read_offset', 'size', 'state', 'ro@' .. me)
if h[1] == me or (not h[1] and h[3]) then
  if h[4] == 'l' then return 0 end
  if (tonumber(h[2]) or 0) ~= from or (tonumber(h[3]) or 0) ~= to then return -1 end
  if #lines > 0 then redis.call('XADD', ARGV[8], '*', d, lines) end
  redis.call('ZREM', ready, d)
  redis.call('HSET', key, 'm', '', 'size', '0', 'read_offset', '0', 'state', '')
  if to > from then redis.call('HINCRBY', counters, 'bytes_consumed', to - from) end
  redis.call('HINCRBY', counters, 'domains_handed_over', 1)
  return 1
elseif h[5] then
  local f, t = string.match(h[5], '(%S+) (%S+)')
  if tonumber(f) ~= from or tonumber(t) ~= to then return -1 end
  if #lines > 0 then redis.call('XADD', ARGV[8], '*', d, lines) end
  redis.call('HDEL', key, 'ro@' .. me)
  redis.call('SREM', ARGV[10] .. me, d)
  redis.call('HINCRBY', ARGV[9], me, from - to)
  redis.call('HINCRBY', counters, 'domains_recovered', 1)
  return 1
end
return 2
"""

# ARGV: domain prefix, me, blob of domain lines. The domains whose hash names no machine (a
# crawl that ran on one machine, or was migrated, before machines) become `me`'s: their
# files are on `me`'s disk. Returns how many.
ADOPT = """
local n = 0
for d in string.gmatch(ARGV[3], '(%S+)\\n') do
  local key = ARGV[1] .. d
  if redis.call('EXISTS', key) == 1 and redis.call('HEXISTS', key, 'm') == 0 then
    redis.call('HSET', key, 'm', ARGV[2])
    n = n + 1
  end
end
return n
"""
