-- tests/serve/load.lua: the wrk script of tests/serve/run.sh.
--   SERVE_BODY=file SERVE_REQUESTS=n SERVE_WRK_THREADS=T wrk -t T -c C -d LIMIT -s tests/serve/load.lua URL
-- POSTs the body of SERVE_BODY on every request; each of wrk's T threads
-- (SERVE_WRK_THREADS=T) stops after its share of SERVE_REQUESTS responses
-- and then writes a file named after it in SERVE_DONE_DIR: wrk's main
-- thread waits for -d regardless, so the caller sends it SIGINT once
-- every thread's file is there.
-- Prints one line: the responses counted, those not 200, wrk's socket
-- errors, the time and the rate.
local total = tonumber(os.getenv("SERVE_REQUESTS")) or 20000
local nthreads = tonumber(os.getenv("SERVE_WRK_THREADS")) or 1   -- wrk's -t
local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("id", #threads)
end

function init(args)
  local f = assert(io.open(assert(os.getenv("SERVE_BODY"), "SERVE_BODY is not set"), "rb"))
  wrk.body = f:read("*a")
  f:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  responses, not_ok = 0, 0
  limit = math.floor(total / nthreads) + ((id <= total % nthreads) and 1 or 0)
end

function response(status, headers, body)
  responses = responses + 1
  if status ~= 200 then not_ok = not_ok + 1 end
  if responses == limit then
    -- the answers already in flight are still counted
    wrk.thread:stop()
    local dir = os.getenv("SERVE_DONE_DIR")
    if dir then assert(io.open(dir .. "/" .. id, "w")):close() end
  end
end

function done(summary, latency, requests)
  local got, bad = 0, 0
  for _, t in ipairs(threads) do
    got = got + t:get("responses")
    bad = bad + t:get("not_ok")
  end
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "wrk: responses=%d not_200=%d socket_errors=%d (connect %d read %d write %d timeout %d) " ..
    "seconds=%.2f requests_per_s=%.0f latency_p50_ms=%.2f latency_p99_ms=%.2f\n",
    got, bad, e.connect + e.read + e.write + e.timeout, e.connect, e.read, e.write, e.timeout,
    seconds, got / seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
