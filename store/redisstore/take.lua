-- sluice take script, encoding version 1. Decides every hit of one request
-- atomically: reads and validates every key first, decides, and writes only
-- if the request is admitted, so an error part-way leaves nothing applied.
--
-- KEYS[i]   the bucket of hit i
-- ARGV[1]   '' to use the server clock (TIME), or a test clock in µs
-- ARGV[1+5(i-1)+1..5] for hit i: algorithm, interval µs, capacity, cost,
--           shadow (1 or 0)
--
-- Arithmetic is integer microseconds kept below 2^53, so Lua's doubles are
-- exact; it mirrors internal/algo line for line.
--
-- Returns, per hit: allowed (0/1), unsatisfiable (0/1), remaining,
-- reset-after µs, retry-after µs.

local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local n = #KEYS
local cur = {}   -- key -> state after the hits so far that passed
local orig = {}  -- key -> state as read
local out = {}
local admitted = true

for i = 1, n do
  local k = KEYS[i]
  local tat = cur[k]
  if tat == nil then
    local v = redis.call('GET', k) -- raises WRONGTYPE before anything is written
    if v then
      tat = tonumber(v)
      if tat == nil or tat ~= math.floor(tat) or tat < 0 then
        return redis.error_reply('SLUICECORRUPT key ' .. i .. ' does not hold a sluice state')
      end
    else
      tat = 0
    end
    cur[k] = tat
    orig[k] = tat
  end

  local a = 1 + (i - 1) * 5
  local interval = tonumber(ARGV[a + 2])
  local capacity = tonumber(ARGV[a + 3])
  local cost = tonumber(ARGV[a + 4])
  local shadow = ARGV[a + 5] == '1'

  -- token bucket (GCRA): tat is the theoretical arrival time
  local base = tat
  if base < now then base = now end
  local tau = capacity * interval
  local rem = now + tau - base
  if rem <= 0 then rem = 0 else rem = math.floor(rem / interval) end
  local r = {0, 0, rem, base - now, 0, 0, 0}
  if cost > capacity then
    r[2] = 1
  else
    local nxt = base + cost * interval
    if nxt - now > tau then
      r[5] = nxt - tau - now
    else
      r[1] = 1
      local remif = now + tau - nxt
      if remif <= 0 then remif = 0 else remif = math.floor(remif / interval) end
      r[6] = remif
      r[7] = nxt - now
      cur[k] = nxt
    end
  end
  if r[1] == 0 and not shadow then admitted = false end
  out[i] = r
end

if admitted then
  for i = 1, n do
    local k = KEYS[i]
    local tat = cur[k]
    if tat ~= orig[k] and tat > now then
      -- the TTL is the time until the bucket is full again: expiry never
      -- hands out anything the bucket had not refilled
      redis.call('SET', k, string.format('%d', tat), 'PX', string.format('%d', math.ceil((tat - now) / 1000)))
      orig[k] = tat
    end
  end
end

local reply = {}
for i = 1, n do
  local r = out[i]
  if admitted and r[1] == 1 then
    r[3] = r[6]
    r[4] = r[7]
  end
  local j = (i - 1) * 5
  reply[j + 1] = r[1]
  reply[j + 2] = r[2]
  reply[j + 3] = r[3]
  reply[j + 4] = r[4]
  reply[j + 5] = r[5]
end
return reply
