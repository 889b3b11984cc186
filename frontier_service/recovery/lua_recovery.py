"""Lua for rebuilding and auditing a crawl's Redis state from disk (see rebuild.py, audit.py).

Both take batches as one blob of space-separated lines (domain keys hold no whitespace;
exclusion reasons travel percent-escaped, '-' for none), like the domain scripts.
"""

from __future__ import annotations

_UNESCAPE = """
local function unescape(text)
  return (string.gsub(text, '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end))
end
"""

# KEYS: ready. ARGV: domain prefix, now, blob of `domain size read_offset pages state reason`
# lines (state 'r' or '-' for idle). Writes each domain hash whole, queues the ready ones.
REBUILD_DOMAINS = _UNESCAPE + """
local prefix, now = ARGV[1], ARGV[2]
local queued = {}
for d, size, ro, pages, state, reason in
    string.gmatch(ARGV[3], '(%S+) (%S+) (%S+) (%S+) (%S+) (%S+)\\n') do
  local key = prefix .. d
  if state == '-' then state = '' end
  redis.call('HSET', key, 'size', size, 'read_offset', ro, 'next_fetch_at', now,
             'lease_owner', '', 'lease_until', '0', 'state', state)
  if pages ~= '0' then redis.call('HSET', key, 'pages_fetched', pages) end
  if reason ~= '-' then
    redis.call('HSET', key, 'excluded', '1', 'excluded_reason', unescape(reason))
  end
  if state == 'r' then
    queued[#queued + 1] = now
    queued[#queued + 1] = d
  end
end
for i = 1, #queued, 4000 do
  redis.call('ZADD', KEYS[1], unpack(queued, i, math.min(i + 3999, #queued)))
end
return #queued / 2
"""

# Bits of the per-domain code the script returns.
MISSING, SIZE, OFFSET, EXCLUDED, REQUEUED, UNFETCHED = 1, 2, 4, 8, 16, 32

# KEYS: ready, leases, counters, epoch. ARGV: domain prefix, now, crawl id ('' = do not
# check), blob of `domain size checkpoint_offset pages excluded(0/1) reason|-` lines.
# Returns one code per domain (bits above), or -1 if the epoch is not the crawl id.
AUDIT = _UNESCAPE + """
local ready, leases, counters, epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, now, crawl_id = ARGV[1], ARGV[2], ARGV[3]
if crawl_id ~= '' and redis.call('GET', epoch) ~= crawl_id then return -1 end
local codes, grown, consumed, newly_excluded = {}, 0, 0, 0
for d, fsize, ckpt, pages, exc, reason in
    string.gmatch(ARGV[4], '(%S+) (%S+) (%S+) (%S+) (%S+) (%S+)\\n') do
  local key = prefix .. d
  repeat  -- (`break` is the loop's `continue`)
  -- several machines (ARGV[5]): a domain whose hash measures another machine's file (or
  -- none: it is moving) is not this file's to repair
  local m = ARGV[5] and ARGV[5] ~= '' and redis.call('HGET', key, 'm')
  if m and m ~= ARGV[5] then codes[#codes + 1] = 0; break end
  local h = redis.call('HMGET', key, 'size', 'read_offset', 'state', 'excluded',
                       'next_fetch_at', 'pages_fetched', 'lease_until')
  local code = 0
  local size, ro, state = tonumber(h[1]), tonumber(h[2]) or 0, h[3] or ''
  if not size then code = 1; size = 0 end
  fsize, ckpt = tonumber(fsize), math.min(tonumber(ckpt), tonumber(fsize))
  -- The counters of a lost hash were counted before it was lost: only a surviving hash's
  -- repairs add to them.
  if fsize > size then
    if code == 0 then grown = grown + fsize - size; code = code + 2 end
    size = fsize
    redis.call('HSET', key, 'size', fsize)
  end
  if ckpt > ro then
    if code % 2 == 0 then consumed = consumed + ckpt - ro; code = code + 4 end
    ro = ckpt
    redis.call('HSET', key, 'read_offset', ckpt)
  elseif code == 1 then
    redis.call('HSET', key, 'read_offset', ro)
  end
  if tonumber(pages) > (tonumber(h[6]) or 0) then redis.call('HSET', key, 'pages_fetched', pages) end
  local excluded = h[4] == '1'
  if exc == '1' and not excluded then
    excluded = true
    newly_excluded = newly_excluded + 1
    redis.call('HSET', key, 'excluded', '1', 'excluded_reason', unescape(reason))
    if state == 'r' then
      redis.call('ZREM', ready, d)
      state = ''
      redis.call('HSET', key, 'state', '')
    end
    code = code + 8
  end
  if state == 'l' then
    if not redis.call('ZSCORE', leases, d) then  -- the leases queue lost it: it expires again
      redis.call('ZADD', leases, tonumber(h[7]) or 0, d)
      code = code + 16
    end
  elseif state == 'r' then
    if not redis.call('ZSCORE', ready, d) then
      redis.call('ZADD', ready, h[5] or now, d)
      code = code + 16
    end
  elseif not excluded and size > ro then
    local lease = redis.call('ZSCORE', leases, d)
    if lease then  -- its hash was lost while leased: the lease expires as usual
      redis.call('HSET', key, 'state', 'l', 'lease_until', lease)
    else
      redis.call('ZADD', ready, 'NX', h[5] or now, d)
      redis.call('HSET', key, 'state', 'r')
    end
    if code % 2 == 0 then code = code + 16 end
  end
  if code % 2 == 1 then
    if ARGV[5] and ARGV[5] ~= '' then redis.call('HSET', key, 'm', ARGV[5]) end
    redis.call('HSETNX', key, 'next_fetch_at', now)
    redis.call('HSETNX', key, 'lease_owner', '')
    redis.call('HSETNX', key, 'lease_until', '0')
    redis.call('HSETNX', key, 'state', '')
  end
  if not excluded and size > ro then code = code + 32 end
  codes[#codes + 1] = code
  until true
end
if grown > 0 then redis.call('HINCRBY', counters, 'bytes_appended', grown) end
if consumed > 0 then redis.call('HINCRBY', counters, 'bytes_consumed', consumed) end
if newly_excluded > 0 then redis.call('HINCRBY', counters, 'domains_excluded', newly_excluded) end
return codes
"""
