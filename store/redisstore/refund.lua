-- sluice refund script, state encoding version 1 (see take.lua). Gives back
-- what takes consumed, exactly: never more than a take still holds in its
-- bucket. Each refund is applied on its own, in order.
--
-- KEYS[i]  the bucket of refund i
-- ARGV[1]  '' to use the server clock (TIME), or a clock in µs
-- then five arguments per refund: algorithm (0 token bucket, 1 sliding
--          window, 2 fixed window, 3 sliding log), the emission interval
--          µs (token bucket) or the period µs, the units to give back, and
--          the take's receipt: mark and sequence number; or, to refresh a
--          concurrency slot (an entry of a sliding log): 4, the period µs
--          (the hold), the slot's next mark, and its receipt
--
-- Returns how many refunds changed their bucket. A bucket that is missing,
-- or holds something that is not a bucket's state, is left as it is (the
-- next take replaces what does not parse). A penalty's record before the
-- state (see take.lua) is kept as it is, and so is the key's TTL then.
local MINPX = 1000
local WINDOWMOD = 1000000
local BIG = 9007199254740992

local now, pad = 0, 0
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
  pad = 600000000
end

local applied = 0
for i = 1, #KEYS do
  local k = KEYS[i]
  local a = 2 + (i - 1) * 5
  local al, p, units, mark, seq = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  if al == 4 then
    -- A concurrency slot's hold restarts: the entry the take added moves
    -- to the next mark (units), if it is still held and the next mark is
    -- not ahead of the clock.
    local raw = redis.pcall('ZRANGEBYSCORE', k, string.format('%d', mark), string.format('%d', mark))
    if raw.err and string.sub(raw.err, 1, 9) ~= 'WRONGTYPE' then error(raw.err) end
    if not raw.err and mark > now - p and units > mark and units <= now then
      for j = 1, #raw do
        local _, co, sq = string.match(raw[j], '^(%d+):(%d+):(%d+)$')
        if sq and tonumber(sq) == seq then
          redis.call('ZREM', k, raw[j])
          redis.call('ZADD', k, string.format('%d', units), string.format('%d:%s:%d', units, co, seq))
          -- The key lives until its newest entry's hold ends.
          local newest = units
          for _, m in ipairs(redis.call('ZRANGEBYSCORE', k, '-inf', '+inf')) do
            local ts = tonumber(string.match(m, '^(%d+):'))
            if ts and ts > newest then newest = ts end
          end
          redis.call('PEXPIRE', k, string.format('%d', math.max(MINPX, math.ceil((newest + p - now + pad) / 1000))))
          applied = applied + 1
          break
        end
      end
    end
  elseif al == 3 then
    -- The entry the take added, its cost shrunk by units, or removed.
    local raw = redis.pcall('ZRANGEBYSCORE', k, string.format('%d', mark), string.format('%d', mark))
    -- Another type is left as it is; any other error (a command the user's
    -- ACL refuses) is raised, as redis.call would.
    if raw.err and string.sub(raw.err, 1, 9) ~= 'WRONGTYPE' then error(raw.err) end
    if not raw.err then
      for j = 1, #raw do
        local _, co, sq = string.match(raw[j], '^(%d+):(%d+):(%d+)$')
        if sq and tonumber(sq) == seq then
          redis.call('ZREM', k, raw[j])
          co = tonumber(co)
          if co > units then
            redis.call('ZADD', k, string.format('%d', mark), string.format('%d:%d:%d', mark, co - units, seq))
          end
          applied = applied + 1
          break
        end
      end
    end
  else
    local v = redis.pcall('GET', k)
    if type(v) == 'table' and string.sub(v.err, 1, 9) ~= 'WRONGTYPE' then error(v.err) end
    local pre = ''
    if type(v) == 'string' then
      local pr, rest = string.match(v, '^(P%d+:%d+:%d+;)(.*)$')
      if pr then pre, v = pr, rest end
    end
    if type(v) == 'string' then
      if al == 1 then
        local cur, hi = tonumber(string.sub(v, -6)), 0
        if #v > 6 then hi = tonumber(string.sub(v, 1, -7)) end
        if cur and hi and cur >= 0 and cur < 1000000 and cur == math.floor(cur) and hi >= 0 and hi < 1000000000000 and hi == math.floor(hi) then
          local prev = hi % 1000000
          local idx = math.floor(now / p)
          local d = (idx - math.floor(hi / 1000000)) % WINDOWMOD
          if d > WINDOWMOD / 2 then d = d - WINDOWMOD end
          idx = idx - d
          local ok = true
          if idx == mark and cur > 0 then
            cur = cur - math.min(units, cur)
          elseif idx == mark + 1 and prev > 0 then
            prev = prev - math.min(units, prev)
          else
            ok = false
          end
          if ok then
            local mod = idx % WINDOWMOD
            local packed
            if mod > 0 then
              packed = string.format('%d%06d%06d', mod, prev, cur)
            elseif prev > 0 then
              packed = string.format('%d%06d', prev, cur)
            else
              packed = string.format('%d', cur)
            end
            redis.call('SET', k, pre .. packed, 'KEEPTTL')
            applied = applied + 1
          end
        end
      else
        local x = tonumber(v)
        if x ~= nil and x >= 0 and x < BIG and x == math.floor(x) then
          if al == 0 then
            -- The take still holds mark − now µs of the bucket, what has
            -- not refilled yet: at most that much comes back, and the
            -- bucket ends no fuller than full.
            if x > now then
              local sub = math.min(units * p, mark - now)
              if sub > 0 then
                local nxt = math.max(x - sub, now)
                if pre ~= '' then
                  redis.call('SET', k, pre .. string.format('%d', nxt), 'KEEPTTL')
                else
                  redis.call('SET', k, string.format('%d', nxt), 'PX', string.format('%d', math.max(MINPX, math.ceil((nxt - now + pad) / 1000))))
                end
                applied = applied + 1
              end
            end
          else
            local idx, count = math.floor(x / (p + 1)), x % (p + 1)
            if idx == mark and count > 0 then
              count = count - math.min(units, count)
              redis.call('SET', k, pre .. string.format('%d', idx * (p + 1) + count), 'KEEPTTL')
              applied = applied + 1
            end
          end
        end
      end
    end
  end
end
return applied
