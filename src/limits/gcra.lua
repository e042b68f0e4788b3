-- GCRA over several budgets at once: either every budget takes its share, or none does.
-- KEYS[i] is a budget; ARGV[3i-2] its emission interval (microseconds per unit, may be
-- fractional), ARGV[3i-1] its burst and ARGV[3i] what this call takes from it, in units (1
-- for a call; a read's estimated cost for a cost budget). Time is the server's, so replicas
-- with skewed clocks agree. Returns {0, 0} when allowed, else {i, wait} for the first budget
-- i that refuses and the microseconds until it would allow.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
for i, key in ipairs(KEYS) do
  local emission = tonumber(ARGV[3 * i - 2])
  local burst = tonumber(ARGV[3 * i - 1])
  local weight = tonumber(ARGV[3 * i])
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local over = tat + emission * weight - now - emission * burst
  if over > 0 then
    return {i, math.ceil(over)}
  end
  tats[i] = tat + emission * weight
end
for i, key in ipairs(KEYS) do
  local ttl_ms = math.ceil((tats[i] - now) / 1000) + 1000
  redis.call('SET', key, string.format('%.0f', tats[i]), 'PX', ttl_ms)
end
return {0, 0}
