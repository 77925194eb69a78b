-- sluice take script, encoding version 1. Decides a batch of requests, each
-- atomically on its own and in order, as if each had its own call: it
-- reads and validates every key of the batch first, decides request after
-- request (a later request sees what the earlier admitted ones consumed; a
-- refused request consumes nothing), and writes only at the end, so an
-- error part-way leaves nothing applied.
--
-- KEYS[i]  the bucket of hit i (the hits of all requests, in order)
-- ARGV[1]  '' to use the server clock (TIME), or a test clock in µs
-- ARGV[2]  R, the number of requests
-- ARGV[2+q] for q = 1..R: the number of hits of request q
-- ARGV[3+R+7(i-1) ..] for hit i: algorithm (0 token bucket, 1 sliding
--          window, 2 fixed window, 3 sliding log), period µs, limit
--          (capacity), emission interval µs, cost, flags (1 shadow, 2 force,
--          4 peek), minimum cost (0, or a partial hit's: it takes what is
--          there, up to cost, if that is at least the minimum)
--
-- Returns five integers per hit: allowed (0/1), unsatisfiable (0/1),
-- remaining, reset-after µs, retry-after µs.
--
-- Token-bucket form, for the most common calls: one request whose hits are
-- all token buckets, none forced, none shadow unless it is alone (a single
-- hit's shadow flag changes nothing: it cannot refuse the request for
-- another). For n hits:
-- KEYS[i]  the bucket of hit i
-- ARGV[3i-2 .. 3i] its emission interval µs, limit (capacity) and cost
-- ARGV[3n+1] absent to use the server clock, or a test clock in µs
-- Returns one integer per hit (a bare integer for one hit, else an array):
-- the bucket's reset-after µs before the hit's decision (max(tat - now, 0),
-- tat as the earlier hits of the request left it), or -1 minus it if the
-- hit did not pass. The request is admitted when every hit passed. Every
-- other field of a result follows from its integer, its arguments and
-- whether the request was admitted, as a token bucket's decision depends
-- on tat - now alone: the caller works them out with
-- internal/algo.TokenBucket(0, reset-after, ...). The batch form has at
-- least 3 + 7n arguments (one request), more than this form's 3n + 1.
--
-- Arithmetic is integer microseconds kept below 2^53, so Lua's doubles are
-- exact; every function mirrors its twin in internal/algo line for line.

-- Every write sets a TTL: the time until the state is an empty bucket's,
-- and at least MINPX ms. The floor keeps the key of a client that returns
-- within a second, to be updated in place: under a limit that refills in
-- milliseconds, keys would otherwise expire between a client's requests and
-- be created anew each time, and Redis's expiry cycle would delay every
-- client (measured: p99 2.3 ms against 1.8 ms, redis-benchmark, 64 clients
-- over 10k keys). Stale state reads as empty anyway (a sliding window's
-- index recovery relies on MINPX spanning fewer than 500,000 periods: see
-- parse).
local MINPX = 1000

-- The token-bucket form comes first and returns before anything else is
-- created: a script call's cost is mostly Lua work and argument and reply
-- handling, not Redis commands.
local n = #KEYS
if #ARGV <= 3 * n + 1 then
  local now, pad = 0, 0
  if #ARGV > 3 * n then
    now, pad = tonumber(ARGV[3 * n + 1]), 600000000 -- a test clock: see below
  else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  if n == 1 then
    -- One hit, the commonest call: the loop below without its tables (they
    -- cost a one-hit call about 6 % more Redis CPU).
    local v = redis.call('GET', KEYS[1]) -- raises WRONGTYPE itself
    local tat = 0
    if v then
      tat = tonumber(v)
      if tat == nil or tat < 0 or tat ~= math.floor(tat) then
        return redis.error_reply('SLUICECORRUPT key 1 does not hold a sluice state')
      end
    end
    local interval = tonumber(ARGV[1])
    local base = tat
    if base < now then base = now end
    local nxt = base + tonumber(ARGV[3]) * interval
    if nxt - now > tonumber(ARGV[2]) * interval then return -1 - (base - now) end
    if nxt ~= tat and nxt > now then
      redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', string.format('%d', math.max(MINPX, math.ceil((nxt - now + pad) / 1000))))
    end
    return base - now
  end
  -- MGET answers false for a key of another type too, so the missing ones
  -- are checked with one EXISTS.
  local vals = redis.call('MGET', unpack(KEYS, 1, n))
  local missing = {}
  for i = 1, n do
    if not vals[i] then missing[#missing + 1] = KEYS[i] end
  end
  if #missing > 0 and redis.call('EXISTS', unpack(missing)) > 0 then
    return redis.error_reply('WRONGTYPE a bucket key holds another type')
  end
  -- Read every key, deciding hit after hit against the tentative states;
  -- write only if every hit passed. gcra below, for unforced hits: a cost
  -- above the capacity fails the test too (the product need not be exact
  -- to exceed it).
  local tats, orig, reply = {}, {}, {}
  local admitted = true
  for i = 1, n do
    local k = KEYS[i]
    local tat = tats[k]
    if tat == nil then
      tat = 0
      local v = vals[i]
      if v then
        tat = tonumber(v)
        if tat == nil or tat < 0 or tat ~= math.floor(tat) then
          return redis.error_reply('SLUICECORRUPT key ' .. i .. ' does not hold a sluice state')
        end
      end
      orig[k] = tat
    end
    local a = 3 * i
    local interval = tonumber(ARGV[a - 2])
    local base = tat
    if base < now then base = now end
    local nxt = base + tonumber(ARGV[a]) * interval
    if nxt - now > tonumber(ARGV[a - 1]) * interval then
      reply[i] = -1 - (base - now)
      admitted = false
    else
      reply[i] = base - now
      tats[k] = nxt
    end
  end
  if admitted then
    for i = 1, n do
      local k = KEYS[i]
      local tat = tats[k]
      if tat ~= orig[k] and tat > now then
        redis.call('SET', k, string.format('%d', tat), 'PX', string.format('%d', math.max(MINPX, math.ceil((tat - now + pad) / 1000))))
        orig[k] = tat
      end
    end
  end
  return reply
end

local now
local pad = 0 -- extra TTL in µs
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
  -- A test clock: keys expire in real time, which must not overtake the
  -- test's clock, so they live ten minutes longer. Stale state reads as
  -- empty anyway.
  pad = 600000000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function pexpire(us)
  return string.format('%d', math.max(MINPX, math.ceil((us + pad) / 1000)))
end

-- gcra decides a cost on a token bucket whose theoretical arrival time is
-- tat (0 when never used), as internal/algo.TokenBucket does. It returns
-- allowed and unsat (0/1), slack and reset (if nothing is consumed),
-- retry, and, when the hit consumes (allowed or forced), the arrival time
-- to keep and the slack and reset after it (nil otherwise). The
-- token-bucket form above inlines it for unforced hits.
local function gcra(tat, interval, capacity, cost, force)
  local base = tat
  if base < now then base = now end
  local tau = capacity * interval
  local allowed, unsat, retry, nxt = 0, 0, 0, 0
  if cost > capacity then
    unsat = 1
    nxt = base + math.min(cost, 2 * capacity) * interval
  else
    nxt = base + cost * interval
    if nxt - now > tau then retry = nxt - tau - now else allowed = 1 end
  end
  local slack, reset = now + tau - base, base - now
  if allowed == 0 and not force then
    return allowed, unsat, slack, reset, retry
  end
  nxt = math.max(math.min(nxt, now + 2 * tau), tat)
  return allowed, unsat, slack, reset, retry, nxt, now + tau - nxt, nxt - now
end

local TB, SW, FW, SL = 0, 1, 2, 3
local WINDOWMOD = 1000000 -- a sliding window's stored index is kept mod this

-- packsliding encodes a sliding window counter's state as an int-encoded
-- string of at most 18 digits (no leading zeros): the index mod 10^6, then
-- prev and cur in 6 digits each. Counts stay below 10^6 (the limit is
-- capped at 499,999 and a count at twice the limit).
local function packsliding(idx, cur, prev)
  local mod = idx % WINDOWMOD
  if mod > 0 then return string.format('%d%06d%06d', mod, prev, cur) end
  if prev > 0 then return string.format('%d%06d', prev, cur) end
  return string.format('%d', cur)
end

local function corrupt(i)
  return redis.error_reply('SLUICECORRUPT key ' .. i .. ' does not hold a sluice state')
end

local function int(s)
  local n = tonumber(s)
  if n == nil or n < 0 or n ~= math.floor(n) then return nil end
  return n
end

local function ceildiv(a, b)
  if a <= 0 then return 0 end
  return math.ceil(a / b)
end

-- parse turns the value v of string key i (false when missing) into the
-- state of algorithm alg, or nil and an error reply.
local function parse(i, v, alg, period)
  if not v then return {a = 0, b = 0, c = 0} end
  if alg == SW then
    -- Decimal digits [window index mod 10^6][prev, 6 digits][cur, 6
    -- digits], an int-encoded string (see packsliding). The window index
    -- is recovered from the clock: only the current and previous windows
    -- matter, and a bucket expires two windows after its last write, or
    -- MINPX after it: at most 1000 windows of the shortest period, 1 ms,
    -- far fewer than the WINDOWMOD / 2 the recovery tells apart.
    if not string.match(v, '^%d+$') or #v > 18 then return nil, corrupt(i) end
    local cur = tonumber(string.sub(v, -6))
    local prev = tonumber(string.sub(v, -12, -7)) or 0
    local mod = tonumber(string.sub(v, 1, -13)) or 0
    local idx = math.floor(now / period)
    local d = (idx - mod) % WINDOWMOD
    if d > WINDOWMOD / 2 then d = d - WINDOWMOD end -- a window ahead: the clock went back
    return {a = idx - d, b = cur, c = prev}
  end
  local n = int(v)
  if n == nil then return nil, corrupt(i) end
  if alg == FW then
    return {a = math.floor(n / (period + 1)), b = n % (period + 1), c = 0}
  end
  return {a = n, b = 0, c = 0}
end

-- readlog returns the live entries of sliding log k (index i). A key of
-- another type raises WRONGTYPE, which aborts the script before anything is
-- written.
local function readlog(i, k, period)
  local raw = redis.call('ZRANGEBYSCORE', k, '(' .. string.format('%d', now - period), '+inf')
  local log = {}
  for j = 1, #raw do
    local ts, cost, seq = string.match(raw[j], '^(%d+):(%d+):(%d+)$')
    if ts == nil then return nil, corrupt(i) end
    log[j] = {tonumber(ts), tonumber(cost), tonumber(seq)}
  end
  table.sort(log, function(x, y) return x[1] < y[1] end)
  return {log = log}
end

-- Each decide function returns r = {allowed, unsat, slack, reset, retry,
-- slackIf, resetIf} (slack in units, or µs for the token bucket, divided by
-- r.interval) and the state to keep if the hit consumes.

local function tokenbucket(st, interval, capacity, cost, force)
  local allowed, unsat, slack, reset, retry, nxt, slackif, resetif = gcra(st.a, interval, capacity, cost, force)
  local r = {allowed = allowed, unsat = unsat, slack = slack, reset = reset, retry = retry, interval = interval}
  if not nxt then return r, st end
  r.slackIf, r.resetIf = slackif, resetif
  return r, {a = nxt, b = 0, c = 0}
end

local function windowindex(period, stored)
  local idx = math.floor(now / period)
  if stored > idx then idx = stored end
  local el = now - idx * period
  if el < 0 then el = 0 end
  return idx, el
end

local function fixedwindow(st, period, limit, cost, force)
  local idx, elapsed = windowindex(period, st.a)
  local count = st.b
  if idx ~= st.a then count = 0 end
  local left = period - elapsed
  local r = {allowed = 0, unsat = 0, slack = limit - count, reset = 0, retry = 0, interval = 1}
  if count > 0 then r.reset = left end
  if cost > limit then
    r.unsat = 1
  elseif count + cost > limit then
    r.retry = left
  else
    r.allowed = 1
  end
  if r.allowed == 0 and not force then return r, st end
  local n = math.min(count + cost, math.min(2 * limit, period))
  r.slackIf = limit - n
  r.resetIf = 0
  if n > 0 then r.resetIf = left end
  return r, {a = idx, b = n, c = 0}
end

local function slidingreset(cur, prev, left, period)
  if cur > 0 then return left + period end
  if prev > 0 then return left end
  return 0
end

local function slidingretry(cur, prev, elapsed, period, limit, cost)
  local room = limit - cur - cost
  if room >= 0 then
    local e = period - math.floor(room * period / prev)
    if e < period then return e - elapsed end
  end
  local untilnext = period - elapsed
  room = limit - cost
  if cur <= room then return untilnext end
  return untilnext + period - math.floor(room * period / cur)
end

local function slidingwindow(st, period, limit, cost, force)
  local idx, elapsed = windowindex(period, st.a)
  local cur, prev = st.b, st.c
  if idx == st.a + 1 then
    -- (not "cur, prev = 0, cur": miniredis's Lua assigns left to right)
    prev = cur
    cur = 0
  elseif idx ~= st.a then
    cur = 0
    prev = 0
  end
  local left = period - elapsed
  local weighted = ceildiv(prev * left, period)
  local r = {allowed = 0, unsat = 0, slack = limit - cur - weighted, reset = slidingreset(cur, prev, left, period), retry = 0, interval = 1}
  if cost > limit then
    r.unsat = 1
  elseif cur + cost + weighted > limit then
    r.retry = slidingretry(cur, prev, elapsed, period, limit, cost)
  else
    r.allowed = 1
  end
  if r.allowed == 0 and not force then return r, st end
  local n = math.min(cur + cost, 2 * limit)
  r.slackIf = limit - n - weighted
  r.resetIf = slidingreset(n, prev, left, period)
  return r, {a = idx, b = n, c = prev}
end

local function slidinglog(st, period, limit, cost, force)
  local log = st.log
  local sum, newest, seq = 0, 0, 0
  for j = 1, #log do
    local x = log[j]
    if x[1] > now - period then
      sum = sum + x[2]
      if x[1] > newest then newest = x[1] end
      if x[3] + 1 > seq then seq = x[3] + 1 end
    end
  end
  local r = {allowed = 0, unsat = 0, slack = limit - sum, reset = 0, retry = 0, interval = 1}
  if sum > 0 or #log > 0 then
    local live = false
    for j = 1, #log do if log[j][1] > now - period then live = true end end
    if live then r.reset = newest + period - now end
  end
  if cost > limit then
    r.unsat = 1
  elseif sum + cost > limit then
    local need = sum + cost - limit
    for j = 1, #log do
      local x = log[j]
      if x[1] > now - period then
        need = need - x[2]
        if need <= 0 then
          r.retry = x[1] + period - now
          break
        end
      end
    end
  else
    r.allowed = 1
  end
  if r.allowed == 0 and not force then return r, st end
  if force then cost = math.min(cost, 2 * limit - sum) end
  local c = cost
  if c < 0 then c = 0 end
  r.slackIf = limit - sum - c
  r.resetIf = r.reset
  if cost <= 0 then return r, st end
  r.resetIf = math.max(newest, now) + period - now
  local nlog = {}
  for j = 1, #log do nlog[j] = log[j] end
  local e = {now, cost, seq}
  local pos = #nlog + 1
  while pos > 1 and nlog[pos - 1][1] > now do pos = pos - 1 end
  table.insert(nlog, pos, e)
  local added = {}
  for j = 1, #(st.added or {}) do added[j] = st.added[j] end
  added[#added + 1] = e
  return r, {log = nlog, added = added}
end

local function decidehit(al, st, p, limit, interval, cost, force)
  if al == TB then
    return tokenbucket(st, interval, limit, cost, force)
  elseif al == SW then
    return slidingwindow(st, p, limit, cost, force)
  elseif al == FW then
    return fixedwindow(st, p, limit, cost, force)
  end
  return slidinglog(st, p, limit, cost, force)
end

local nreq = tonumber(ARGV[2])
local first = 3 + nreq -- ARGV index of the first hit's arguments
local cur, alg, period = {}, {}, {}

-- Read every key first. String buckets come in one MGET; MGET answers
-- false for a key of another type too, so the missing ones are checked
-- with one EXISTS.
local strkeys, stridx = {}, {}
for i = 1, #KEYS do
  local k = KEYS[i]
  if alg[k] == nil then
    local a = first + (i - 1) * 7
    alg[k], period[k] = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
    if alg[k] == SL then
      local st, err = readlog(i, k, period[k])
      if st == nil then return err end
      cur[k] = st
    else
      strkeys[#strkeys + 1] = k
      stridx[#stridx + 1] = i
    end
  end
end
if #strkeys == 1 then
  -- One bucket: GET, which raises WRONGTYPE itself (no TYPE call).
  local st, err = parse(stridx[1], redis.call('GET', strkeys[1]), alg[strkeys[1]], period[strkeys[1]])
  if st == nil then return err end
  cur[strkeys[1]] = st
  strkeys = {}
end
for from = 1, #strkeys, 500 do
  local to = math.min(from + 499, #strkeys)
  local vals = redis.call('MGET', unpack(strkeys, from, to))
  local missing = {}
  for j = from, to do
    local k, v = strkeys[j], vals[j - from + 1]
    if not v then missing[#missing + 1] = k end
    local st, err = parse(stridx[j], v, alg[k], period[k])
    if st == nil then return err end
    cur[k] = st
  end
  -- MGET answers false for a key of another type too: one EXISTS tells.
  if #missing > 0 and redis.call('EXISTS', unpack(missing)) > 0 then
    return redis.error_reply('WRONGTYPE a bucket key holds another type')
  end
end

-- Decide request after request. A refused request's tentative states are
-- rolled back, so it consumes nothing.
local out = {}
local i = 0
for q = 1, nreq do
  local saved = {}
  local admitted = true
  local from = i + 1
  for _ = 1, tonumber(ARGV[2 + q]) do
    i = i + 1
    local k = KEYS[i]
    local a = first + (i - 1) * 7
    local al, p = alg[k], period[k]
    local limit = tonumber(ARGV[a + 2])
    local interval = tonumber(ARGV[a + 3])
    local cost = tonumber(ARGV[a + 4])
    local flags = tonumber(ARGV[a + 5])
    local mincost = tonumber(ARGV[a + 6])
    local shadow, force, peek = flags % 2 == 1, math.floor(flags / 2) % 2 == 1, flags >= 4
    local st = cur[k]
    local r, nxt
    if mincost > 0 then
      -- A partial hit: decided for its minimum, then takes what is left,
      -- up to its cost.
      r, nxt = decidehit(al, st, p, limit, interval, mincost, false)
      if r.allowed == 1 then
        local avail = 0
        if r.slack > 0 then avail = math.floor(r.slack / r.interval) end
        r, nxt = decidehit(al, st, p, limit, interval, math.min(cost, avail), false)
      else
        nxt = st
      end
    else
      r, nxt = decidehit(al, st, p, limit, interval, cost, force)
    end
    local takes = force or (r.allowed == 1 and not peek)
    if takes and nxt ~= st then
      if saved[k] == nil then saved[k] = st end
      cur[k] = nxt
      nxt.changed = true
    end
    if r.allowed == 0 and not shadow and not force and not peek then admitted = false end
    r.force = force
    r.taken = takes
    out[i] = r
  end
  if not admitted then
    for k, st in pairs(saved) do cur[k] = st end
    for j = from, i do out[j].taken = out[j].force end
  end
end


-- Writes. Pruning a sliding log of entries that left the window changes no
-- decision, so it happens on every call; the rest only for buckets an
-- admitted request (or a forced charge) changed.
local done = {}
for i = 1, #KEYS do
  local k = KEYS[i]
  if not done[k] then
    done[k] = true
    local st, al, p = cur[k], alg[k], period[k]
    if al == SL then
      redis.call('ZREMRANGEBYSCORE', k, '-inf', string.format('%d', now - p))
    end
    if st.changed then
      if al == TB then
        if st.a > now then
          redis.call('SET', k, string.format('%d', st.a), 'PX', pexpire(st.a - now))
        end
      elseif al == FW then
        if st.b > 0 then
          local left = p - (now - st.a * p)
          if left > p then left = p end
          redis.call('SET', k, string.format('%d', st.a * (p + 1) + st.b), 'PX', pexpire(left))
        end
      elseif al == SW then
        local elapsed = now - st.a * p
        if elapsed < 0 then elapsed = 0 end
        local reset = slidingreset(st.b, st.c, p - elapsed, p)
        if reset > 0 then
          redis.call('SET', k, packsliding(st.a, st.b, st.c), 'PX', pexpire(reset))
        end
      else
        local newest = 0
        local added = st.added or {}
        for j = 1, #added do
          local e = added[j]
          redis.call('ZADD', k, string.format('%d', e[1]), string.format('%d:%d:%d', e[1], e[2], e[3]))
        end
        for j = 1, #st.log do if st.log[j][1] > newest then newest = st.log[j][1] end end
        redis.call('PEXPIRE', k, pexpire(math.max(newest, now) + p - now))
      end
    end
  end
end

local reply = {}
for i = 1, #KEYS do
  local r = out[i]
  local rem, reset = r.slack, r.reset
  if r.taken then
    rem, reset = r.slackIf, r.resetIf
  end
  if rem <= 0 then rem = 0 else rem = math.floor(rem / r.interval) end
  local j = (i - 1) * 5
  reply[j + 1] = r.allowed
  reply[j + 2] = r.unsat
  reply[j + 3] = rem
  reply[j + 4] = reset
  reply[j + 5] = r.retry
end
return reply
