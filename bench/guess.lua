-- Guessing from one address with a valid key hidden among the guesses: a wrk script.
--
--   wrk -t1 -c8 -d10s -s bench/guess.lua 'http://127.0.0.1:8080/v1/crm/leads/<lead id>/service-acceptance' -- <valid key>
--
-- Every 500th request carries the valid key, the others 43 random base64url characters. At the
-- end it prints how many valid-key requests were sent and the answers by status. Once the
-- address's failure burst is spent (20 with the defaults) the address is locked, and every answer
-- must be 429, the valid key's included (no 200 at all), unless that key succeeded from this
-- address before the lock (then each of them is 200). Run the server with GOMAXPROCS=1 on one core
-- and wrk on another (taskset), on loopback only. See docs/operations-guide.md (Limits).
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  valid = args[1]
  sent_valid, n = 0, 0
  statuses = {}
  math.randomseed(os.time() + math.random(1, 100000))
end
local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
local function randomkey()
  local t = {}
  for i = 1, 43 do local k = math.random(1, 64); t[i] = chars:sub(k, k) end
  return table.concat(t)
end
function request()
  n = n + 1
  local key
  if n % 500 == 0 then key = valid; sent_valid = sent_valid + 1 else key = randomkey() end
  return wrk.format("GET", wrk.path, {["Authorization"] = "Api-Key " .. key})
end
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
  local total_valid, all = 0, {}
  for _, t in ipairs(threads) do
    total_valid = total_valid + t:get("sent_valid")
    local s = t:get("statuses")
    for k, v in pairs(s) do all[k] = (all[k] or 0) + v end
  end
  io.write(string.format("valid-key requests sent: %d\n", total_valid))
  for k, v in pairs(all) do io.write(string.format("status %d: %d\n", k, v)) end
end
