-- The handler of examples/serve/nginx.conf.in: the digits CNN of
-- examples/train_digits.lua behind `POST /predict`, in OpenResty's
-- lua-nginx-module (docs/embedding.md).
--
--   init_worker_by_lua_block { require("digits_server").init { model = "/path/cnn.ember" } }
--   location = /predict { content_by_lua_block { require("digits_server").predict_handler() } }
--   location = /health  { content_by_lua_block { require("digits_server").health_handler() } }
--
-- Request: one image, a JSON array of 64 pixel values (0..16, row-major
-- 8x8), or a batch, an array of such arrays (1..max_batch of them).
-- Answer: {"classes": [7, ...], "probabilities": [[p0, ..., p9], ...]}: one
-- digit value (0..9) per image, and per image the probability of each digit
-- in digit order (in a 0-based client, probabilities[i][d] is digit d's).
-- A bad request is answered 400 (405 for a method other than POST, 413 for
-- a body over client_max_body_size) with {"error": "..."}; an error inside
-- ember is a Lua error, caught here, answered 500 and logged: no request
-- takes a worker down.
--
-- ember is loaded in init() (init_worker_by_lua*, once in every worker) and
-- never in the master: nginx forks its workers from the master, and an
-- OpenMP thread team started before a fork hangs the child's first
-- parallel op (docs/embedding.md).
local digits = require "digits_model"

local M = {}

local has_cjson, cjson = pcall(require, "cjson.safe")
if has_cjson then
  cjson = cjson.new()
  cjson.encode_number_precision(14)   -- the most lua-cjson 2.1.0 allows
else
  cjson = nil
end
local T                   -- ember, once init() ran
local model, ck           -- the model and its checkpoint
local max_batch = 256
local load_error = "init() was not called (init_worker_by_lua_block)"

local init_keys = { model = true, threads = true, max_batch = true }

-- opts: model (path of a checkpoint saved by examples/train_digits.lua),
-- threads (ember's threads in this worker, default 1: nginx runs one worker
-- per core), max_batch (images per request, default 256). Errors are logged
-- and remembered: /predict and /health then answer 503 with the reason.
function M.init(opts)
  local ok, err = pcall(function()
    if type(opts) ~= "table" then error("init: expected a table of options, got " .. type(opts), 0) end
    for k in pairs(opts) do
      if not init_keys[k] then error("init: unknown option '" .. tostring(k) .. "'", 0) end
    end
    if type(opts.model) ~= "string" then error("init: option 'model' (a checkpoint path) is required", 0) end
    local threads = opts.threads or 1
    local mb = opts.max_batch or 256
    if type(mb) ~= "number" or mb < 1 or mb % 1 ~= 0 then
      error("init: max_batch must be a positive integer, got " .. tostring(mb), 0)
    end
    max_batch = mb
    if not cjson then error("init: lua-cjson is not installed (require 'cjson.safe' failed)", 0) end
    T = require "ember"
    T.set_num_threads(threads)
    model, ck = digits.load(T, opts.model)
  end)
  if ok then
    load_error = nil
    if ngx then ngx.log(ngx.NOTICE, "digits_server: loaded ", opts.model, " in worker ", ngx.worker.pid()) end
  else
    model, load_error = nil, tostring(err)
    if ngx then ngx.log(ngx.ERR, "digits_server: ", load_error) end
  end
  return ok, err
end

local function finite(v)
  return type(v) == "number" and v == v and v > -math.huge and v < math.huge
end

-- A list: a table whose keys are exactly 1..n (what cjson makes of a JSON
-- array; a JSON object has string keys). Returns n, or nil.
local function list_length(t)
  if type(t) ~= "table" then return nil end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" then return nil end
    n = n + 1
  end
  if n ~= #t then return nil end
  return n
end

local function check_image(row, where)
  local n = list_length(row)
  if not n then
    return string.format("%s: expected an array of %d pixel values, got %s", where, digits.pixels,
      type(row) == "table" and "an object" or type(row))
  end
  if n ~= digits.pixels then
    return string.format("%s: expected %d pixel values (8x8), got %d", where, digits.pixels, n)
  end
  for j = 1, n do
    local v = row[j]
    if type(v) ~= "number" then
      return string.format("%s: pixel %d is not a number (%s)", where, j - 1,
        v == (cjson and cjson.null) and "null" or type(v))
    end
    if not finite(v) then
      return string.format("%s: pixel %d is not finite (%s)", where, j - 1,
        v ~= v and "NaN" or v > 0 and "Infinity" or "-Infinity")
    end
    if v < 0 or v > digits.pixel_max then
      return string.format("%s: pixel %d = %s is outside 0..%d", where, j - 1, tostring(v), digits.pixel_max)
    end
  end
  return nil
end

-- The decoded JSON body to a list of images (each a list of 64 numbers),
-- or nil and the message of the 400 answer. Pixels are named 0-based, as
-- the client's array is.
function M.parse_request(value)
  local n = list_length(value)
  if not n then
    return nil, "expected a JSON array: 64 pixel values, or an array of such arrays"
  end
  if n == 0 then return nil, "empty batch: expected 64 pixel values or 1.." .. max_batch .. " images" end
  if type(value[1]) ~= "table" then                      -- one image
    local err = check_image(value, "image")
    if err then return nil, err end
    return { value }
  end
  if n > max_batch then
    return nil, string.format("batch of %d images is over the limit of %d", n, max_batch)
  end
  for i = 1, n do
    local err = check_image(value[i], string.format("image %d", i - 1))
    if err then return nil, err end
  end
  return value
end

-- images (as parse_request returns them) to the answer's table.
function M.predict(images)
  local pixels = T.tensor(images, { dtype = T.float32 })
  local classes, probs = digits.predict(T, model, ck, pixels)
  return { classes = classes, probabilities = probs:tolist() }
end

-- -- nginx handlers -------------------------------------------------------

local function reply(status, value)
  ngx.status = status
  ngx.header.content_type = "application/json"
  local body = cjson and cjson.encode(value)
  if not body then   -- no cjson (the 503 says so), or a value it cannot encode
    local message = tostring(value.error or "internal error: could not encode the answer")
    body = '{"error":"' .. (message:gsub('[%c"\\]', " ")) .. '"}'
  end
  ngx.say(body)
end

local function fail(status, message) reply(status, { error = message }) end

local function read_body()
  ngx.req.read_body()   -- a body over client_max_body_size ends the request with 413 here
  local body = ngx.req.get_body_data()
  if body then return body end
  local file = ngx.req.get_body_file()   -- over client_body_buffer_size: nginx wrote it to a file
  if not file then return "" end
  local f, err = io.open(file, "rb")
  if not f then error("could not read the request body: " .. tostring(err)) end
  body = f:read("*a")
  f:close()
  return body
end

local function predict_request()
  local method = ngx.req.get_method()
  if method ~= "POST" then
    ngx.header["Allow"] = "POST"
    return fail(405, "method " .. method .. " is not allowed: use POST with a JSON body")
  end
  if not model then return fail(503, "model not loaded: " .. load_error) end
  local body = read_body()
  if body == "" then return fail(400, "empty body: expected JSON") end
  local value, err = cjson.decode(body)
  if value == nil then return fail(400, "body is not valid JSON: " .. tostring(err)) end
  local images, why = M.parse_request(value)
  if not images then return fail(400, why) end
  return reply(200, M.predict(images))
end

function M.predict_handler()
  local ok, err = xpcall(predict_request, debug.traceback)
  if not ok then
    ngx.log(ngx.ERR, "digits_server: ", err)
    if ngx.headers_sent then return ngx.exit(ngx.ERROR) end
    return fail(500, "internal error (logged)")
  end
end

function M.health_handler()
  if model then return reply(200, { status = "ok", threads = T.get_num_threads(), max_batch = max_batch }) end
  return fail(503, "model not loaded: " .. load_error)
end

return M
