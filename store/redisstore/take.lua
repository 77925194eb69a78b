-- sluice take script, state encoding version 1. Decides a batch of requests,
-- each atomically on its own and in order, as if each had its own call: it
-- reads every key of the batch first, decides request after request (a
-- later request sees what the earlier admitted ones consumed; a refused
-- request consumes nothing), and writes only at the end.
--
-- KEYS[i]  the bucket of hit i (the hits of every request, in order)
-- ARGV[1]  '' to use the server clock (TIME), or a clock in µs
-- then, hit after hit, four arguments, for a partial hit a fifth, for
-- a calendar hit four more, and for a penalty hit three more:
--   mode   algorithm (0 token bucket, 1 sliding window, 2 fixed window,
--          3 sliding log) + 4 shadow + 8 forced + 16 peek + 32 partial
--          + 64 for the last hit of its request + 128 calendar
--          + 256 penalty
--   p      the emission interval in µs (token bucket) or the period in µs
--          (for a calendar hit, 2^30 - 1: see below)
--   limit  the capacity
--   cost   the cost, at least 1
--   min    a partial hit's minimum cost: it takes what is there, up to
--          cost, provided that is at least min
--   b0..b3 a calendar hit's window boundaries in µs, consecutive, placed
--          by the caller's clock: the script counts in the window among
--          [b0, b1), [b1, b2), [b2, b3) that holds its own clock (the
--          first or last when outside them all). A calendar hit is a fixed
--          window (mode 2) whose index is its window's start in units of
--          15 minutes, packed as index × 2^30 + count; its key expires at
--          its window's end.
--   block, after, period  a penalty hit's penalty: once after refusals
--          of its own (hits that did not pass) fall within period µs of
--          the first, every hit of a penalty on its key is refused for
--          block µs, whatever its bucket holds, and consumes nothing. A
--          key with a penalty's record holds 'P' until ':' count ':' since
--          ';' then its state (empty for an empty bucket): the block's
--          end, the refusals counted and when their period began, in µs;
--          it lives until the block and the period end, at least. A hit
--          without a penalty reads such a key as one that holds something
--          else (the rule lost its penalty).
--
-- Returns a bare integer, or an array in one of two forms. The integer
-- answers one plain token-bucket hit (mode 64 or 68) that found its bucket
-- full and took its cost: it is the hit's mark (its arrival time after it);
-- its reset-after is cost × p, and the rest follows as in the short form.
-- The full form: h, the number of keys found holding something that is not
-- a bucket's state (another type, or a value that does not parse), which
-- were replaced; the 1-based indices
-- of h hits, one on each such key; then per hit: code, remaining,
-- reset-after µs, retry-after µs, mark, and for a sliding log hit its
-- sequence number. code is allowed (1) + 2 if unsatisfiable + 4 × the units
-- the hit took (0 for a forced hit and for one that took nothing), or 3
-- for a hit refused by its penalty's block (retry-after is then the time
-- left in it, and mark 1 if this refusal started it, else 0). mark and
-- the sequence number locate what it took: a token bucket's arrival time
-- after it, a window's index, a log entry's time.
--
-- The short form, when every hit is a plain token-bucket hit (mode 0, 4, 64
-- or 68: neither forced, a peek nor partial): -1, then per hit two
-- integers: reset-after µs and mark, the hit's arrival time after it if it
-- took its cost, else 0 (then reset-after is as if it took nothing). The
-- rest follows from the hit's own arguments, as the full form's: with
-- tau = limit × p, remaining is (tau − reset-after) / p rounded down (0 if
-- negative); a hit that took nothing is unsatisfiable if cost > limit, else
-- allowed if reset-after + cost × p <= tau, else refused with retry-after
-- reset-after + cost × p − tau.
--
-- A key holding something that is not a bucket's state is read as an empty
-- bucket and deleted, then written as any bucket is if a hit consumed.
-- Paths for the commonest calls (plain token-bucket hits: one, several in
-- one request, or coalesced requests of them; one plain window hit) come
-- first; the general path decides everything. A fast path that finds a key
-- it cannot read leaves the call to the general path, which replaces it.
--
-- Arithmetic is integer microseconds kept below 2^53, so Lua's doubles are
-- exact; each algorithm mirrors its twin in internal/algo line for line.
-- The script defines no functions: a function defined in the script body is
-- a closure created on every call.
--
-- Every write sets a TTL: the time until the state is an empty bucket's,
-- and at least MINPX ms, so a client that returns within a second updates
-- its key in place rather than creating it anew (keys recreated on every
-- request keep Redis's expiry cycle busy). Stale state reads as empty
-- anyway; a sliding window's index recovery relies on MINPX spanning fewer
-- than 500,000 periods (see below). The fast paths set it as an absolute
-- time (PXAT: Redis rewrites a relative one for propagation) unless the
-- clock is given; Redis before 6.2, which lacks PXAT, gets it relative.
local MINPX = 1000
local WINDOWMOD = 1000000 -- a sliding window's stored index is kept mod this
local BIG = 9007199254740992 -- 2^53: no state holds a number this large
local CALUNIT = 900000000 -- a calendar window's index counts 15 minutes

local now, pad = 0, 0
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  -- A given clock: keys expire in real time, which must not overtake it,
  -- so they live ten minutes longer.
  now = tonumber(ARGV[1])
  pad = 600000000
end

local n = #KEYS
local single = ARGV[2]

-- One plain token-bucket hit (mode 64, or 68 for a shadow hit): the
-- commonest call. Strings become numbers by arithmetic (no tonumber), and
-- numbers go to redis.call formatted by string.format: Redis 7.0 prints a
-- number it is given in %.17g, which costs more. A hit that found its
-- bucket full (its arrival time at most now) and took its cost is answered
-- with its mark alone, a bare integer: its reset-after is then its cost
-- times p, which the caller knows; a table reply costs Redis more.
if n == 1 and (single == '64' or single == '68') then
  local k = KEYS[1]
  local x = 0
  local v = redis.pcall('GET', k)
  if v then x = tonumber(v) end -- nil for an error (another type) too
  if x and x >= 0 and x < BIG and x % 1 == 0 then
    local p, limit, c = ARGV[3] + 0, ARGV[4] + 0, ARGV[5] + 0
    local full = x <= now
    if full then x = now end
    local nxt = x + c * p
    if c > limit or nxt - now > limit * p then return {-1, x - now, 0} end
    local w = string.format('%d', nxt)
    if pad == 0 then
      local rel = math.max(MINPX, math.ceil((nxt - now) / 1000))
      local e = (now - now % 1000) / 1000 + rel
      local r = redis.pcall('SET', k, w, 'PXAT', string.format('%d', e))
      if type(r) == 'table' and r.err then -- Redis before 6.2 has no PXAT
        redis.call('SET', k, w, 'PX', string.format('%d', rel))
      end
    else
      redis.call('SET', k, w, 'PX', string.format('%d', math.max(MINPX, math.ceil((nxt - now + pad) / 1000))))
    end
    if full then return nxt end
    return {-1, nxt - now, nxt}
  end
end

-- Requests of plain token-bucket hits (every mode 0 or 4, the last of each
-- request 64 or 68), several in one call: a request of several rules, or
-- coalesced requests. Decided hit after hit against tentative arrival
-- times; a refused request's are put back. Answered in the short form.
local plain = n > 1 and n <= 500 -- the keys are unpacked onto Lua's stack
if plain then
  for i = 1, n do
    local m = ARGV[4 * i - 2]
    if m ~= '0' and m ~= '64' and m ~= '4' and m ~= '68' then
      plain = false
      break
    end
  end
  plain = plain and (ARGV[4 * n - 2] == '64' or ARGV[4 * n - 2] == '68')
end
if plain then
  local vals = redis.call('MGET', unpack(KEYS))
  local tats, orig, missing = {}, {}, nil -- by key
  for i = 1, n do
    local k = KEYS[i]
    if orig[k] == nil then
      local x = 0
      if vals[i] then
        x = tonumber(vals[i])
        if x == nil or x < 0 or x >= BIG or x % 1 ~= 0 then
          plain = false
          break
        end
      else
        missing = missing or {}
        missing[#missing + 1] = k
      end
      orig[k], tats[k] = x, x
    end
  end
  -- MGET answers false for a key of another type as for a missing one.
  if plain and missing and redis.call('EXISTS', unpack(missing)) > 0 then plain = false end
  if plain then
    local reply = {-1}
    local admitted, first = true, 1 -- the request so far, and its first hit
    local uk, uv, nu = {}, {}, 0 -- the arrival times the request changed, as they were
    for i = 1, n do
      local k, a = KEYS[i], 4 * i - 1
      local p, limit, c = ARGV[a] + 0, ARGV[a + 1] + 0, ARGV[a + 2] + 0
      local b = tats[k]
      if b < now then b = now end
      local x = b + c * p
      if c <= limit and x - now <= limit * p then
        nu = nu + 1
        uk[nu], uv[nu] = k, tats[k]
        tats[k] = x
        reply[2 * i], reply[2 * i + 1] = x - now, x
      else
        reply[2 * i], reply[2 * i + 1] = b - now, 0
        local m = ARGV[a - 1]
        if m == '0' or m == '64' then admitted = false end
      end
      local m = ARGV[a - 1]
      if m == '64' or m == '68' then
        if not admitted then
          -- Refused: nothing taken. Put the arrival times back, last
          -- change first; report each hit as if it had taken nothing.
          for j = nu, 1, -1 do tats[uk[j]] = uv[j] end
          for j = first, i do
            if reply[2 * j + 1] > 0 then
              local aj = 4 * j - 1
              reply[2 * j], reply[2 * j + 1] = reply[2 * j] - ARGV[aj + 2] * ARGV[aj], 0
            end
          end
        end
        admitted, first, nu = true, i + 1, 0
      end
    end
    for i = 1, n do
      local k = KEYS[i]
      local x = tats[k]
      if x ~= orig[k] then
        if pad == 0 then
          local rel = math.max(MINPX, math.ceil((x - now) / 1000))
          local e = (now - now % 1000) / 1000 + rel
          local w = string.format('%d', x)
          local r = redis.pcall('SET', k, w, 'PXAT', string.format('%d', e))
          if type(r) == 'table' and r.err then -- Redis before 6.2 has no PXAT
            redis.call('SET', k, w, 'PX', string.format('%d', rel))
          end
        else
          redis.call('SET', k, string.format('%d', x), 'PX', string.format('%d', math.max(MINPX, math.ceil((x - now + pad) / 1000))))
        end
        orig[k] = x
      end
    end
    return reply
  end
end

-- Single hits of a sliding window or a fixed window, taking exactly their
-- cost, neither forced nor a peek (mode 65 or 66, or 69 or 70 for a shadow
-- hit): decided here without the tables of the general path below.
if n == 1 and (single == '65' or single == '66' or single == '69' or single == '70') then
  local k = KEYS[1]
  local p, limit, c = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  local v = redis.pcall('GET', k)
  local healed = 0
  if type(v) == 'table' then
    -- Another type; any other error (a command the user's ACL refuses) is
    -- raised, as redis.call would: never read as an empty bucket.
    if string.sub(v.err, 1, 9) ~= 'WRONGTYPE' then error(v.err) end
    healed, v = 1, false
  end
  if single == '66' or single == '70' then
    -- A fixed window: see the general path below.
    local idx = math.floor(now / p)
    local st, count = idx, 0
    if v then
      local x = tonumber(v)
      if x == nil or x < 0 or x >= BIG or x ~= math.floor(x) then
        healed = 1
        redis.call('DEL', k)
      else
        st, count = math.floor(x / (p + 1)), x % (p + 1)
      end
    end
    if st > idx then idx = st end
    if idx ~= st then count = 0 end
    local el = now - idx * p
    if el < 0 then el = 0 end
    local left = p - el
    if c > limit or count + c > limit then
      local unsat, retry = 0, left
      if c > limit then unsat, retry = 2, 0 end
      local reset = 0
      if count > 0 then reset = left end
      local rem = limit - count
      if rem < 0 then rem = 0 end
      if healed == 1 then return {1, 1, unsat, rem, reset, retry, 0} end
      return {0, unsat, rem, reset, retry, 0}
    end
    local cap = math.min(2 * limit, p)
    count = math.min(count + math.min(c, cap), cap)
    redis.call('SET', k, string.format('%d', idx * (p + 1) + count), 'PX', string.format('%d', math.max(MINPX, math.ceil((left + pad) / 1000))))
    local rem = limit - count
    if rem < 0 then rem = 0 end
    if healed == 1 then return {1, 1, 1 + 4 * c, rem, left, 0, idx} end
    return {0, 1 + 4 * c, rem, left, 0, idx}
  end
  -- A sliding window counter: see the general path below.
  local idx = math.floor(now / p)
  local cur, prev, st = 0, 0, idx
  if v then
    local lo, hi = tonumber(string.sub(v, -6)), 0
    if #v > 6 then hi = tonumber(string.sub(v, 1, -7)) end
    if lo and hi and lo >= 0 and lo < 1000000 and lo == math.floor(lo) and hi >= 0 and hi < 1000000000000 and hi == math.floor(hi) then
      cur, prev = lo, hi % 1000000
      local d = (idx - math.floor(hi / 1000000)) % WINDOWMOD
      if d > WINDOWMOD / 2 then d = d - WINDOWMOD end
      st = idx - d
    else
      healed = 1
      redis.call('DEL', k)
    end
  end
  if st > idx then idx = st end
  local el = now - idx * p
  if el < 0 then el = 0 end
  if idx == st + 1 then
    prev = cur
    cur = 0
  elseif idx ~= st then
    cur = 0
    prev = 0
  end
  local left = p - el
  local weighted = 0
  if prev * left > 0 then weighted = math.ceil(prev * left / p) end
  if c > limit or cur + c + weighted > limit then
    local unsat, retry = 0, -1
    if c > limit then
      unsat, retry = 2, 0
    else
      local room = limit - cur - c
      if room >= 0 then
        local e = p - math.floor(room * p / prev)
        if e < p then retry = e - el end
      end
      if retry < 0 then
        room = limit - c
        retry = left
        if cur > room then retry = left + p - math.floor(room * p / cur) end
      end
    end
    local reset = 0
    if cur > 0 then reset = left + p elseif prev > 0 then reset = left end
    local rem = limit - cur - weighted
    if rem < 0 then rem = 0 end
    if healed == 1 then return {1, 1, unsat, rem, reset, retry, 0} end
    return {0, unsat, rem, reset, retry, 0}
  end
  cur = math.min(cur + c, 2 * limit)
  local mod = idx % WINDOWMOD
  local packed
  if mod > 0 then
    packed = string.format('%d%06d%06d', mod, prev, cur)
  elseif prev > 0 then
    packed = string.format('%d%06d', prev, cur)
  else
    packed = string.format('%d', cur)
  end
  redis.call('SET', k, packed, 'PX', string.format('%d', math.max(MINPX, math.ceil((left + p + pad) / 1000))))
  local rem = limit - cur - weighted
  if rem < 0 then rem = 0 end
  if healed == 1 then return {1, 1, 1 + 4 * c, rem, left + p, 0, idx} end
  return {0, 1 + 4 * c, rem, left + p, 0, idx}
end

-- The general path. Read every argument, and every key's state, first.
local mode, per, lim, cost, minc = {}, {}, {}, {}, {}
local alg, kper = {}, {} -- by key: its algorithm and p
local cal, wend = {}, {} -- by hit: a calendar hit's boundaries; by key: its window's end
local pen, pst, pwin, pchanged = {}, {}, {}, {} -- by hit: a penalty; by key: its record {until, count, since}, period, changed
local sa, sb, sc = {}, {}, {} -- by key: token bucket tat; window index, count, previous count
local logs = {} -- by key: a sliding log's live entries and what this call adds
local healed = {} -- by key: 1 if it held something else
local strk = {} -- the keys holding strings (every algorithm but the log)
local a = 2
for i = 1, n do
  local m = tonumber(ARGV[a])
  mode[i], per[i], lim[i], cost[i] = m, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  a = a + 4
  if m % 64 >= 32 then
    minc[i] = tonumber(ARGV[a])
    a = a + 1
  end
  if m % 256 >= 128 then
    cal[i] = {tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])}
    a = a + 4
  end
  local k = KEYS[i]
  if m >= 256 then
    pen[i] = {tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])}
    a = a + 3
    pst[k], pwin[k] = pst[k] or {0, 0, 0}, pen[i][3]
  end
  if alg[k] == nil then
    local al = m % 4
    alg[k], kper[k] = al, per[i]
    sa[k], sb[k], sc[k] = 0, 0, 0
    if al == 3 then
      -- A sliding log is a sorted set of "time:cost:seq" members scored by
      -- time; only the live ones (time > now - period) are read.
      local lg = {ts = {}, co = {}, n = 0, sum = 0, newest = 0, seq = 0, an = 0, asum = 0, aco = {}, asq = {}}
      local raw = redis.pcall('ZRANGEBYSCORE', k, '(' .. string.format('%d', now - per[i]), '+inf')
      if raw.err then
        if string.sub(raw.err, 1, 9) ~= 'WRONGTYPE' then error(raw.err) end
        healed[k] = 1
      else
        for j = 1, #raw do
          local ts, co, sq = string.match(raw[j], '^(%d+):(%d+):(%d+)$')
          ts, co, sq = tonumber(ts), tonumber(co), tonumber(sq)
          if ts == nil or ts >= BIG or co >= BIG or sq >= BIG then
            healed[k] = 1
            break
          end
          lg.ts[j], lg.co[j] = ts, co
          lg.sum = lg.sum + co
          if ts > lg.newest then lg.newest = ts end
          if sq + 1 > lg.seq then lg.seq = sq + 1 end
        end
        if healed[k] then
          lg = {ts = {}, co = {}, n = 0, sum = 0, newest = 0, seq = 0, an = 0, asum = 0, aco = {}, asq = {}}
        else
          lg.n = #raw
        end
      end
      logs[k] = lg
    else
      strk[#strk + 1] = k
    end
  end
end

-- The string keys: one GET, or MGET in chunks (it answers false for a key
-- of another type as for a missing one: one EXISTS tells them apart).
local vals = {}
if #strk == 1 then
  local v = redis.pcall('GET', strk[1])
  if type(v) == 'table' then
    if string.sub(v.err, 1, 9) ~= 'WRONGTYPE' then error(v.err) end
    healed[strk[1]], v = 1, false
  end
  vals[1] = v
else
  for from = 1, #strk, 500 do
    local to = math.min(from + 499, #strk)
    local got = redis.call('MGET', unpack(strk, from, to))
    local missing = {}
    for j = from, to do
      vals[j] = got[j - from + 1]
      if not vals[j] then missing[#missing + 1] = strk[j] end
    end
    if #missing > 0 and redis.call('EXISTS', unpack(missing)) > 0 then
      for j = 1, #missing do
        if redis.call('EXISTS', missing[j]) > 0 then healed[missing[j]] = 1 end
      end
    end
  end
end
for j = 1, #strk do
  local k, v = strk[j], vals[j]
  if v and pst[k] then
    -- A penalty's record before the state.
    local pu, pc, ps, rest = string.match(v, '^P(%d+):(%d+):(%d+);(.*)$')
    if pu then
      pst[k] = {tonumber(pu), tonumber(pc), tonumber(ps)}
      v = rest
      if v == '' then v = false end
    end
  end
  if v then
    local al, p = alg[k], kper[k]
    if al == 1 then
      -- A sliding window counter: decimal digits [window index mod 10^6]
      -- [previous count, 6 digits][count, 6 digits], no leading zeros, read
      -- as the last six digits and the (at most twelve) before them. The
      -- index is recovered from the clock: only the current and previous
      -- windows matter, and a bucket expires two windows after its last
      -- write or MINPX after it, at most 1000 windows of the shortest
      -- period (1 ms), far fewer than the WINDOWMOD / 2 told apart.
      local lo, hi = tonumber(string.sub(v, -6)), 0
      if #v > 6 then hi = tonumber(string.sub(v, 1, -7)) end
      if lo and hi and lo >= 0 and lo < 1000000 and lo == math.floor(lo) and hi >= 0 and hi < 1000000000000 and hi == math.floor(hi) then
        local idx = math.floor(now / p)
        local d = (idx - math.floor(hi / 1000000)) % WINDOWMOD
        if d > WINDOWMOD / 2 then d = d - WINDOWMOD end -- a window ahead: the clock went back
        sa[k], sb[k], sc[k] = idx - d, lo, hi % 1000000
      else
        healed[k] = 1
      end
    else
      local x = tonumber(v)
      if x == nil or x < 0 or x >= BIG or x ~= math.floor(x) then
        healed[k] = 1
      elseif al == 2 then
        -- A fixed window: index × (period + 1) + count.
        sa[k], sb[k] = math.floor(x / (p + 1)), x % (p + 1)
      else
        sa[k] = x
      end
    end
  end
end

-- Decide request after request, hit after hit, against the states the
-- earlier hits left. A refused request's states are rolled back.
local nheal = 0
local reply = {0}
local hpos = {} -- by hit: where its results start in reply
for i = 1, n do
  local k = KEYS[i]
  if healed[k] == 1 then
    healed[k] = 2
    nheal = nheal + 1
    reply[nheal + 1] = i
  end
end
reply[1] = nheal
local ri = nheal + 1 -- reply's length
local q = 1 -- the request
local first = 1 -- its first hit
local admitted = true
local savedq, va, vb, vc, vch, van, vas = {}, {}, {}, {}, {}, {}, {} -- by key: the state at the request's start
local changed = {} -- by key
local r0, s0 = {}, {} -- by hit: remaining and reset-after if it takes nothing
for i = 1, n do
  local k, m = KEYS[i], mode[i]
  local al = m % 4
  local force, peek = m % 16 >= 8, m % 32 >= 16
  local p, limit, c, mc = per[i], lim[i], cost[i], minc[i]
  local lg = logs[k]
  if savedq[k] ~= q then
    savedq[k] = q
    va[k], vb[k], vc[k], vch[k] = sa[k], sb[k], sc[k], changed[k]
    if lg then van[k], vas[k] = lg.an, lg.asum end
  end
  local allowed, unsat, iv = false, false, 1
  local slack, reset, retry, slackif, resetif = 0, 0, 0, 0, 0
  local na, nb, nc = 0, 0, 0 -- the state if it takes
  local mark, seq = 0, 0
  -- The state before the hit: slack (capacity left, in µs for a token
  -- bucket, else units) and reset-after; then a partial hit's cost: what
  -- is left, up to its cost, if that is at least its minimum, else the
  -- minimum (which is refused).
  local tat, base, tau = 0, 0, 0
  local idx, el, left, count, prev, weighted = 0, 0, 0, 0, 0, 0
  local sum, newest = 0, 0
  if al == 0 then
    tat = sa[k]
    base = tat
    if base < now then base = now end
    tau = limit * p
    iv, slack, reset = p, now + tau - base, base - now
  elseif al == 3 then
    sum, newest, seq = lg.sum + lg.asum, lg.newest, lg.seq
    if lg.an > 0 then
      if now > newest then newest = now end
      seq = lg.asq[lg.an] + 1
    end
    slack = limit - sum
    if lg.n > 0 or lg.an > 0 then reset = newest + p - now end
  elseif cal[i] then
    -- A calendar window: the one of the boundaries holding now; a later
    -- stored window (the clock went back) stays current, as a fixed
    -- window's does, until the end of the window after now's.
    local b = cal[i]
    local j = 1
    if now >= b[3] then j = 3 elseif now >= b[2] then j = 2 end
    idx = math.floor(b[j] / CALUNIT)
    left = math.min(b[j + 1] - now, b[j + 1] - b[j])
    if sa[k] > idx then
      idx = sa[k]
      left = b[math.min(j + 2, 4)] - now
    end
    if left < 1 then left = 1 end
    wend[k] = now + left
    count = sb[k]
    if idx ~= sa[k] then count = 0 end
    if count > 0 then reset = left end
    slack = limit - count
  else
    idx = math.floor(now / p)
    if sa[k] > idx then idx = sa[k] end
    el = now - idx * p
    if el < 0 then el = 0 end
    left = p - el
    count = sb[k]
    if al == 2 then
      if idx ~= sa[k] then count = 0 end
      if count > 0 then reset = left end
    else
      prev = sc[k]
      if idx == sa[k] + 1 then
        prev = count
        count = 0
      elseif idx ~= sa[k] then
        count = 0
        prev = 0
      end
      if prev * left > 0 then weighted = math.ceil(prev * left / p) end
      if count > 0 then reset = left + p elseif prev > 0 then reset = left end
    end
    slack = limit - count - weighted
  end
  if mc then
    local avail = 0
    if slack > 0 then avail = math.floor(slack / iv) end
    if avail >= mc then c = math.min(c, avail) else c = mc end
  end
  -- The decision, and the state to keep if the hit takes.
  if al == 0 then
    local nxt
    if c > limit then
      unsat = true
      nxt = base + math.min(c, 2 * limit) * p -- c × p could leave the exact range
    else
      nxt = base + c * p
      if nxt - now > tau then retry = nxt - tau - now else allowed = true end
    end
    nxt = math.max(math.min(nxt, now + 2 * tau), tat) -- a debt is capped; a clock gone back changes nothing
    na, mark = nxt, nxt
    slackif, resetif = now + tau - nxt, nxt - now
  elseif al == 3 then
    if c > limit then
      unsat = true
    elseif sum + c > limit then
      -- Until enough of the oldest entries leave the window. Walked in time
      -- order: this call's own entries are all at now.
      local need = sum + c - limit
      local own = lg.an == 0
      for j = 1, lg.n do
        local ts = lg.ts[j]
        if not own and ts > now then
          own, need = true, need - lg.asum
          if need <= 0 then
            retry = p
            break
          end
        end
        need = need - lg.co[j]
        if need <= 0 then
          retry = ts + p - now
          break
        end
      end
      if need > 0 then retry = p end
    else
      allowed = true
    end
    if force then c = math.min(c, 2 * limit - sum) end
    slackif, resetif = limit - sum - math.max(c, 0), reset
    if c > 0 then resetif = math.max(newest, now) + p - now end
    mark = now
  elseif al == 2 then
    if c > limit then
      unsat = true
    elseif count + c > limit then
      retry = left
    else
      allowed = true
    end
    local cap = math.min(2 * limit, p)
    na, nb, mark = idx, math.min(count + math.min(c, cap), cap), idx
    slackif = limit - nb
    if nb > 0 then resetif = left end
  else
    if c > limit then
      unsat = true
    elseif count + c + weighted > limit then
      local room = limit - count - c
      retry = -1
      if room >= 0 then
        -- Later in this window, once enough of prev has slid out.
        local e = p - math.floor(room * p / prev)
        if e < p then retry = e - el end
      end
      if retry < 0 then
        -- In the next window, where this count becomes the previous one.
        room = limit - c
        retry = left
        if count > room then retry = left + p - math.floor(room * p / count) end
      end
    else
      allowed = true
    end
    na, nb, nc, mark = idx, math.min(count + math.min(c, 2 * limit), 2 * limit), prev, idx
    slackif = limit - nb - weighted
    if nb > 0 then resetif = left + p elseif prev > 0 then resetif = left end
  end
  -- A penalty: a running block refuses the hit; a refusal of its own
  -- counts toward the next.
  local blocked = 0
  local ps_started = false
  local pn = pen[i]
  if pn and not force then
    local ps = pst[k]
    if ps[1] > now then
      blocked = ps[1] - now
    elseif not allowed and not peek then
      if ps[2] == 0 or now - ps[3] >= pn[3] then ps[2], ps[3] = 0, now end
      ps[2] = ps[2] + 1
      if ps[2] >= pn[2] then
        ps[1], ps[2] = now + pn[1], 0
        blocked = pn[1]
        ps_started = true
      end
      pchanged[k] = true
    end
    if blocked > 0 then
      allowed, unsat, retry = false, false, blocked
      if reset < blocked then reset = blocked end
      slack = 0
    end
  end
  local rem = 0
  if slack > 0 then rem = math.floor(slack / iv) end
  r0[i], s0[i] = rem, reset
  local takes = force or (allowed and not peek)
  if takes then
    if al == 3 then
      if c > 0 then
        lg.an, lg.asum = lg.an + 1, lg.asum + c
        lg.aco[lg.an], lg.asq[lg.an] = c, seq
        changed[k] = true
      end
    elseif na ~= sa[k] or nb ~= sb[k] or nc ~= sc[k] then
      sa[k], sb[k], sc[k] = na, nb, nc
      changed[k] = true
    end
    rem, reset = 0, resetif
    if slackif > 0 then rem = math.floor(slackif / iv) end
  end
  local code = 0
  if allowed then code = 1 end
  if unsat then code = code + 2 end
  if takes and not force then code = code + 4 * c end
  if blocked > 0 then
    code = 3
    mark = 0
    if ps_started then mark = 1 end
  end
  hpos[i] = ri + 1
  reply[ri + 1], reply[ri + 2], reply[ri + 3], reply[ri + 4], reply[ri + 5] = code, rem, reset, retry, mark
  ri = ri + 5
  if al == 3 then
    ri = ri + 1
    reply[ri] = seq
  end
  if not allowed and not force and not peek and m % 8 < 4 then admitted = false end
  if m % 128 >= 64 then
    if not admitted then
      -- Refused: nothing taken. Put the states back; report each hit as
      -- if it had taken nothing.
      for j = first, i do
        local kj = KEYS[j]
        if savedq[kj] == q then
          sa[kj], sb[kj], sc[kj], changed[kj] = va[kj], vb[kj], vc[kj], vch[kj]
          if logs[kj] then logs[kj].an, logs[kj].asum = van[kj], vas[kj] end
        end
        local h = hpos[j]
        reply[h] = reply[h] % 4
        reply[h + 1], reply[h + 2] = r0[j], s0[j]
      end
    end
    q, first, admitted = q + 1, i + 1, true
  end
end

-- Writes: a key found holding something else is deleted; then every bucket
-- an admitted request (or a forced charge) changed is written (a sliding
-- log pruned of the entries that left the window first, which changes no
-- decision and keeps the set small).
local done = {}
for i = 1, n do
  local k = KEYS[i]
  if not done[k] then
    done[k] = true
    local al, p = alg[k], kper[k]
    if healed[k] then redis.call('DEL', k) end
    if al == 3 then
      local lg = logs[k]
      if changed[k] then
        redis.call('ZREMRANGEBYSCORE', k, '-inf', string.format('%d', now - p))
        local args = {}
        for j = 1, lg.an do
          args[2 * j - 1] = string.format('%d', now)
          args[2 * j] = string.format('%d:%d:%d', now, lg.aco[j], lg.asq[j])
        end
        redis.call('ZADD', k, unpack(args))
        redis.call('PEXPIRE', k, string.format('%d', math.max(MINPX, math.ceil((math.max(lg.newest, now) + p - now + pad) / 1000))))
      end
    elseif changed[k] or pchanged[k] then
      local ttl, v = 0, nil
      if al == 0 then
        ttl, v = sa[k] - now, string.format('%d', sa[k])
      else
        local el = now - sa[k] * p
        if el < 0 then el = 0 end
        local left = p - el
        if wend[k] then left = wend[k] - now end
        if al == 2 then
          if sb[k] > 0 then ttl = left end
          v = string.format('%d', sa[k] * (p + 1) + sb[k])
        else
          if sb[k] > 0 then ttl = left + p elseif sc[k] > 0 then ttl = left end
          local mod = sa[k] % WINDOWMOD
          if mod > 0 then
            v = string.format('%d%06d%06d', mod, sc[k], sb[k])
          elseif sc[k] > 0 then
            v = string.format('%d%06d', sc[k], sb[k])
          else
            v = string.format('%d', sb[k])
          end
        end
      end
      local ps = pst[k]
      if ps then
        -- The record lives until the block and the counting period end.
        local pend = ps[1]
        if ps[2] > 0 and ps[3] + pwin[k] > pend then pend = ps[3] + pwin[k] end
        if pend > now then
          if ttl <= 0 then v = '' end
          v = string.format('P%d:%d:%d;', ps[1], ps[2], ps[3]) .. v
          if pend - now > ttl then ttl = pend - now end
        end
      end
      if ttl > 0 then
        redis.call('SET', k, v, 'PX', string.format('%d', math.max(MINPX, math.ceil((ttl + pad) / 1000))))
      end
    end
  end
end
return reply
