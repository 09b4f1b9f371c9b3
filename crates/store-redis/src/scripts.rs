//! The Lua scripts. Each runs atomically on the node that holds its keys (all of one hash tag),
//! so each is the single step that changes a record: nothing is ever half-written.

use redis::Script;

/// `KEYS`: num, byn, ctr, owner. `ARGV`: key, `[key, source_id]` JSON, ttl ms, touch (1/0).
/// Returns `{number, 1}` for a new number, `{number, 0}` for the key's existing one. With
/// `touch` 1, finding the key refreshes the TTLs too: a write, so that a `WAIT` after the
/// script also waits for the write (maybe another client's, not yet replicated) that gave the
/// key its number (see `RedisSettings::with_replica_acks`).
const ALLOCATE: &str = r"
local n = redis.call('HGET', KEYS[1], ARGV[1])
if n then
  if ARGV[4] == '1' then
    for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
  end
  return {tonumber(n), 0}
end
n = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], n)
redis.call('HSET', KEYS[2], n, ARGV[2])
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
return {n, 1}
";

/// A batch of allocations, each done as `ALLOCATE` does it, in order. `KEYS`: num, byn, ctr,
/// owner of each table in the batch. `ARGV`: ttl ms, touch (1/0), then per allocation: its
/// table's index (from 0), key, `[key, source_id]` JSON. Returns `{number, 1 or 0}` per
/// allocation, flattened. The TTLs of a table are refreshed once, after its allocations, when
/// one of them was new (or, with `touch` 1, found).
const ALLOCATE_MANY: &str = r"
local out = {}
local dirty = {}
for i = 3, #ARGV, 3 do
  local b = tonumber(ARGV[i]) * 4
  local n = redis.call('HGET', KEYS[b + 1], ARGV[i + 1])
  if n then
    out[#out + 1] = tonumber(n)
    out[#out + 1] = 0
    if ARGV[2] == '1' then dirty[b] = true end
  else
    n = redis.call('INCR', KEYS[b + 3])
    redis.call('HSET', KEYS[b + 1], ARGV[i + 1], n)
    redis.call('HSET', KEYS[b + 2], n, ARGV[i + 2])
    out[#out + 1] = n
    out[#out + 1] = 1
    dirty[b] = true
  end
end
for b = 0, #KEYS - 4, 4 do
  if dirty[b] then
    for j = 1, 4 do redis.call('PEXPIRE', KEYS[b + j], ARGV[1]) end
  end
end
return out
";

/// `KEYS`: session. `ARGV`: owner, sources, created_ms, last_used_ms, ttl ms.
/// Returns 1, or 0 when the id is taken.
const CREATE_SESSION: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'sources', ARGV[2], 'created_ms', ARGV[3],
  'last_used_ms', ARGV[4], 'ver', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
";

/// `KEYS`: an owner's session set. `ARGV`: session id (empty: none to add), ttl ms.
/// Drops the sessions that expired by the server's clock, adds the id (expiring in ttl ms), and
/// returns how many are left.
const OWNER_SESSIONS: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('ZCARD', KEYS[1])
";

/// `KEYS`: session, num, byn, ctr. `ARGV`: expected ver, sources, now_ms, ttl ms.
/// Returns 1 (written), 0 (another writer came first: read again), -1 (no session).
const UPDATE_SOURCES: &str = r"
local cur = redis.call('HMGET', KEYS[1], 'ver', 'last_used_ms')
if not cur[1] then return -1 end
if cur[1] ~= ARGV[1] then return 0 end
local last = tonumber(cur[2])
if tonumber(ARGV[3]) > last then last = ARGV[3] end
redis.call('HSET', KEYS[1], 'sources', ARGV[2], 'ver', tonumber(ARGV[1]) + 1, 'last_used_ms', last)
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[4]) end
return 1
";

/// `KEYS`: session, num, byn, ctr. `ARGV`: now_ms, ttl ms.
/// Returns the session's last use after the touch, or -1 (no session).
const TOUCH: &str = r"
local last = redis.call('HGET', KEYS[1], 'last_used_ms')
if not last then return -1 end
local now = tonumber(ARGV[1])
if now > tonumber(last) then
  redis.call('HSET', KEYS[1], 'last_used_ms', ARGV[1])
else
  now = tonumber(last)
end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return now
";

/// `KEYS`: session, num, byn, ctr. Returns 1 (deleted with its table) or 0 (no session).
const DELETE_SESSION: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 1
";

/// `KEYS`: stream. `ARGV`: owner, session_id, status, created_ms, server, epoch, ttl ms,
/// has_session (1/0). Returns 1, or 0 when the id is taken.
const CREATE_STREAM: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'status', ARGV[3], 'created_ms', ARGV[4],
  'last', 0, 'server', ARGV[5], 'epoch', ARGV[6])
if ARGV[8] == '1' then redis.call('HSET', KEYS[1], 'session_id', ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return 1
";

/// `KEYS`: stream, log, num, byn, ctr. `ARGV`: ttl ms, retry (1/0), then id, data pairs.
/// Returns `{'ok'}`, `{'nf'}`, `{'closed', status}` or `{'order', last, got}`; nothing is
/// written unless `ok`. A retry of a batch already in the log (its reply was lost) is `ok`.
const APPEND: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'last')
if not st[1] then return {'nf'} end
local last = tonumber(st[2])
if ARGV[2] == '1' and #ARGV >= 4 then
  local first = tonumber(ARGV[3])
  local final = tonumber(ARGV[#ARGV - 1])
  if first <= last and final <= last then return {'ok'} end
end
if st[1] ~= 'running' then return {'closed', st[1]} end
local expect = last
for i = 3, #ARGV, 2 do
  local id = tonumber(ARGV[i])
  if id ~= expect + 1 then return {'order', tostring(expect), ARGV[i]} end
  expect = id
end
for i = 3, #ARGV, 2 do
  redis.call('XADD', KEYS[2], ARGV[i] .. '-0', 'd', ARGV[i + 1])
end
redis.call('HSET', KEYS[1], 'last', expect)
for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return {'ok'}
";

/// A batch of appends (standalone only), each done as `APPEND` does it, in order. `KEYS`:
/// stream, log, num, byn, ctr of each append's stream. `ARGV`: ttl ms, retry (1/0), then per
/// append: its event count m, then m id, data pairs. Returns `APPEND`'s answer per append.
const APPEND_MANY: &str = r"
local out = {}
local a = 3
local b = 0
while a <= #ARGV do
  local m = tonumber(ARGV[a])
  local first = a + 1
  local final = a + 2 * m - 1
  local ans = nil
  local st = redis.call('HMGET', KEYS[b + 1], 'status', 'last')
  if not st[1] then
    ans = {'nf'}
  else
    local last = tonumber(st[2])
    if ARGV[2] == '1' and m >= 1 and tonumber(ARGV[first]) <= last
        and tonumber(ARGV[final]) <= last then
      ans = {'ok'}
    elseif st[1] ~= 'running' then
      ans = {'closed', st[1]}
    else
      local expect = last
      for i = first, final, 2 do
        local id = tonumber(ARGV[i])
        if id ~= expect + 1 then
          ans = {'order', tostring(expect), ARGV[i]}
          break
        end
        expect = id
      end
      if not ans then
        for i = first, final, 2 do
          redis.call('XADD', KEYS[b + 2], ARGV[i] .. '-0', 'd', ARGV[i + 1])
        end
        redis.call('HSET', KEYS[b + 1], 'last', expect)
        for j = 1, 5 do redis.call('PEXPIRE', KEYS[b + j], ARGV[1]) end
        ans = {'ok'}
      end
    end
  end
  out[#out + 1] = ans
  a = a + 1 + 2 * m
  b = b + 5
end
return out
";

/// `KEYS`: stream, log, num, byn, ctr. `ARGV`: status, ttl ms.
/// Returns `{'ok', created_ms}` or `{'nf'}`. Leaving `running` adds the end mark `last-1` to
/// the log, which wakes every `XREAD BLOCK` follower.
const FINISH: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'last', 'created_ms')
if not st[1] then return {'nf'} end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
if st[1] == 'running' and ARGV[1] ~= 'running' then
  redis.call('XADD', KEYS[2], st[2] .. '-1', 'end', ARGV[1])
end
for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return {'ok', st[3]}
";

/// `KEYS`: session, num, byn, ctr. `ARGV`: cutoff ms.
/// Returns -1 (gone already), -2 (deleted now) or the last use (kept).
const PURGE_SESSION: &str = r"
local last = redis.call('HGET', KEYS[1], 'last_used_ms')
if not last then return -1 end
if tonumber(last) < tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  return -2
end
return tonumber(last)
";

/// `KEYS`: stream, log, num, byn, ctr. `ARGV`: cutoff ms.
/// Returns -1 (gone already), -2 (deleted now), -3 (running: kept) or its creation (kept).
const PURGE_STREAM: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'created_ms')
if not st[1] then return -1 end
if st[1] == 'running' then return -3 end
if tonumber(st[2]) < tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
  return -2
end
return tonumber(st[2])
";

/// The scripts, hashed once (`EVALSHA`, loaded on `NOSCRIPT`).
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) allocate: Script,
    pub(crate) allocate_many: Script,
    pub(crate) create_session: Script,
    pub(crate) owner_sessions: Script,
    pub(crate) update_sources: Script,
    pub(crate) touch: Script,
    pub(crate) delete_session: Script,
    pub(crate) create_stream: Script,
    pub(crate) append: Script,
    pub(crate) append_many: Script,
    pub(crate) finish: Script,
    pub(crate) purge_session: Script,
    pub(crate) purge_stream: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Scripts {
            allocate: Script::new(ALLOCATE),
            allocate_many: Script::new(ALLOCATE_MANY),
            create_session: Script::new(CREATE_SESSION),
            owner_sessions: Script::new(OWNER_SESSIONS),
            update_sources: Script::new(UPDATE_SOURCES),
            touch: Script::new(TOUCH),
            delete_session: Script::new(DELETE_SESSION),
            create_stream: Script::new(CREATE_STREAM),
            append: Script::new(APPEND),
            append_many: Script::new(APPEND_MANY),
            finish: Script::new(FINISH),
            purge_session: Script::new(PURGE_SESSION),
            purge_stream: Script::new(PURGE_STREAM),
        }
    }
}
