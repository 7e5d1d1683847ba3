-- many.lua: wrk's requests spread over every principal of the dataset, each drawn at random, for
-- bench/load.sh's decrypt_many case:
--
--   wrk -s bench/many.lua URL -- service PRINCIPALS   GET /v1/crm/leads/LEAD/principals/P/decrypt/ssn
--   wrk -s bench/many.lua URL -- limit PRINCIPALS     GET /decrypt_many/P (bench/durable's row names P)
--
-- PRINCIPALS is bench/gen's -principals file ("LEAD PRINCIPAL" lines). wrk's -H headers (the
-- credential) go with every request.
local paths = {}

function init(args)
  local form, file = args[1], args[2]
  if (form ~= "service" and form ~= "limit") or not file then
    error("many.lua: want -- service|limit PRINCIPALS, got " .. tostring(form) .. " " .. tostring(file))
  end
  for line in io.lines(file) do
    local lead, principal = line:match("^(%S+) (%S+)$")
    if not principal then
      error("many.lua: " .. file .. ": not a \"LEAD PRINCIPAL\" line: " .. line)
    end
    if form == "service" then
      paths[#paths + 1] = "/v1/crm/leads/" .. lead .. "/principals/" .. principal .. "/decrypt/ssn"
    else
      paths[#paths + 1] = "/decrypt_many/" .. principal
    end
  end
  if #paths == 0 then
    error("many.lua: " .. file .. " lists no principal")
  end
  -- Each thread draws its own sequence.
  math.randomseed(os.time() + tonumber(tostring(paths):match("0x(%x+)") or "0", 16))
end

function request()
  return wrk.format(nil, paths[math.random(#paths)])
end
