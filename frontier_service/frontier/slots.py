"""Which slot a domain is in: the same hash here and in the Lua scripts (lua_machines.py).

A crawl's domains are split into a fixed number of slots; each slot is owned by one
machine at a time (the slot map in Redis). The hash differs from the process-shard hash of
the claim script (lua_domain.py), so the processes of one machine still share its domains.
"""

from __future__ import annotations

import functools

DEFAULT_SLOTS = 64
MAX_SLOTS = 4096
_MOD = 1000033


@functools.lru_cache(maxsize=1 << 16)  # a crawl's busy domains: hashed once
def slot_of(domain: str, slots: int) -> int:
    """The slot of a domain key (its UTF-8 bytes hashed as the Lua `slot_of` does)."""
    h = 0
    for byte in domain.encode():
        h = (h * 33 + byte) % _MOD
    return h % slots


LUA_SLOT_OF = f"""
local function slot_of(d, slots)
  local h = 0
  for i = 1, #d do h = (h * 33 + string.byte(d, i)) % {_MOD} end
  return h % slots
end
"""


# A slot's owner in the slot map (false when free), read once per slot per script call: a
# script that passes many domains of one slot reads the map once for them.
LUA_SLOT_OWNER = """
local slot_owners = {}
local function slot_owner(slotmap, d, slots)
  local s = slot_of(d, slots)
  local o = slot_owners[s]
  if o == nil then
    o = redis.call('HGET', slotmap, s)
    slot_owners[s] = o
  end
  return o
end
"""
