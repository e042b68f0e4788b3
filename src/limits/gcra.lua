-- GCRA over several budgets at once: either every budget takes one call, or none does.
-- KEYS[i] is a budget; ARGV[2i-1] its emission interval and ARGV[2i] its burst, in
-- microseconds and calls. Time is the server's, so replicas with skewed clocks agree.
-- Returns {0, 0} when the call is allowed, else {i, wait} for the first budget i that
-- refuses and the microseconds until it would allow.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
for i, key in ipairs(KEYS) do
  local emission = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local over = tat - now - emission * (burst - 1)
  if over > 0 then
    return {i, math.ceil(over)}
  end
  tats[i] = tat + emission
end
for i, key in ipairs(KEYS) do
  local ttl_ms = math.ceil((tats[i] - now) / 1000) + 1000
  redis.call('SET', key, string.format('%.0f', tats[i]), 'PX', ttl_ms)
end
return {0, 0}
