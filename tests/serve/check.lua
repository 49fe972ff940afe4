-- tests/serve/check.lua: the reference side of tests/serve/run.sh, run by
-- bin/ember (plain LuaJIT, no nginx) with lua-cjson.
--
--   bin/ember tests/serve/check.lua requests DIR
--       writes the request bodies (good ones from data/digits.csv.gz, bad ones)
--   bin/ember tests/serve/check.lua compare MODEL DIR RESPONSES NAME...
--       for each NAME: DIR/NAME.json was posted, RESPONSES/NAME.json is the
--       server's answer; runs the same model here and prints one line
--       "PASS name" or "FAIL name: why" per check
local here = ((arg and arg[0] or ""):match("^(.*)/tests/serve/[^/]*$")) or "."
package.path = here .. "/examples/?.lua;" .. package.path
local T = require "ember"
local cjson = require "cjson"
local digits = require "digits_model"

local mode = arg[1]
local unpack = table.unpack or unpack

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- rows of the data set: pixels (lists of 64 numbers) and labels (digits)
local function dataset(n)
  local raw = T.data.read_csv(here .. "/data/digits.csv.gz")
  local rows = raw:narrow(1, 1, n):tolist()
  local images, labels = {}, {}
  for i, r in ipairs(rows) do
    labels[i] = r[65]
    r[65] = nil
    images[i] = r
  end
  return images, labels
end

-- a JSON array of numbers, each written so that it reads back exactly
local function array(values)
  local parts = {}
  for i, v in ipairs(values) do parts[i] = string.format("%.17g", v) end
  return "[" .. table.concat(parts, ",") .. "]"
end

local function batch(images)
  local parts = {}
  for i, img in ipairs(images) do parts[i] = array(img) end
  return "[" .. table.concat(parts, ",") .. "]"
end

if mode == "requests" then
  local dir = assert(arg[2], "requests DIR")
  local images, labels = dataset(300)
  -- good requests
  write(dir .. "/single.json", array(images[1]))
  write(dir .. "/batch1.json", batch { images[2] })
  write(dir .. "/batch64.json", batch { unpack(images, 1, 64) })
  local max = {}
  for i = 1, 256 do max[i] = images[i] end
  write(dir .. "/batch256.json", batch(max))
  write(dir .. "/labels256.json", cjson.encode { labels = { unpack(labels, 1, 256) } })
  local frac = {}
  for j, v in ipairs(images[3]) do frac[j] = v * 0.937 + 0.01 * (j % 7) end
  write(dir .. "/fractional.json", array(frac))
  -- bad requests
  local img = images[1]
  local function with(j, text)   -- image 1 with pixel j written as text
    local parts = {}
    for k, v in ipairs(img) do parts[k] = k == j and text or string.format("%g", v) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local short, long = {}, {}
  for j = 1, 63 do short[j] = img[j] end
  for j = 1, 65 do long[j] = img[j % 64 + 1] end
  local bad = {
    not_json = "this is not json",
    truncated = array(img):sub(1, 40),
    len63 = array(short), len65 = array(long),
    nan = with(5, "NaN"), infinity = with(5, "Infinity"), minus_inf = with(64, "-Infinity"),
    overflow = with(1, "1e999"), hex = with(1, "0x10ffff"),
    string = with(2, '"3"'), null = with(2, "null"), bool = with(2, "true"), nested = with(2, "[1]"),
    object = '{"pixels":' .. array(img) .. '}', scalar = "5",
    empty_batch = "[]", empty_row = "[[]]",
    ragged = "[" .. array(img) .. "," .. array(short) .. "]",
    mixed = "[" .. array(img) .. ",3]",
    above_range = with(7, "16.5"), negative = with(7, "-1"),
    deep = string.rep("[", 2000) .. string.rep("]", 2000),
  }
  local over = {}
  for i = 1, 257 do over[i] = images[(i - 1) % 300 + 1] end
  bad.batch257 = batch(over)
  for name, body in pairs(bad) do write(dir .. "/bad_" .. name .. ".json", body) end
  -- over client_max_body_size (1m): 2 MiB of a valid-looking array
  write(dir .. "/huge.json", "[" .. string.rep("0,", 1024 * 1024) .. "0]")
  os.exit(0)
end

if mode == "compare" then
  local model_path, dir, resp_dir = arg[2], arg[3], arg[4]
  T.set_num_threads(1)
  local model, ck = digits.load(T, model_path)
  local pass, fail = 0, 0
  local function result(ok, name, why)
    if ok then
      print("PASS " .. name)
      pass = pass + 1
    else
      print("FAIL " .. name .. ": " .. why)
      fail = fail + 1
    end
  end
  for i = 5, #arg do
    local name = arg[i]
    local req = cjson.decode(read(dir .. "/" .. name .. ".json"))
    local images = type(req[1]) == "number" and { req } or req
    local want_classes, want_probs = digits.predict(T, model, ck, T.tensor(images, { dtype = T.float32 }))
    want_probs = want_probs:tolist()
    local ok, got = pcall(cjson.decode, read(resp_dir .. "/" .. name .. ".json"))
    if not ok or type(got) ~= "table" or type(got.classes) ~= "table" or type(got.probabilities) ~= "table" then
      result(false, name, "the answer is not {classes, probabilities}: " .. read(resp_dir .. "/" .. name .. ".json"):sub(1, 200))
    else
      local n = #images
      result(#got.classes == n and #got.probabilities == n, name .. " (" .. n .. " answers)",
        string.format("expected %d classes and rows, got %d and %d", n, #got.classes, #got.probabilities))
      local same, worst, where = true, 0, ""
      for r = 1, math.min(n, #got.classes) do
        if got.classes[r] ~= want_classes[r] then
          same = false
          where = string.format("image %d: got %s, expected %s", r - 1, tostring(got.classes[r]), want_classes[r])
        end
        local row = got.probabilities[r]
        if type(row) ~= "table" or #row ~= 10 then
          worst = math.huge
        else
          for k = 1, 10 do
            local d = math.abs(row[k] - want_probs[r][k])
            if not (d <= worst) then worst = d end
          end
        end
      end
      result(same, name .. " classes equal bin/ember's", where)
      result(worst <= 1e-6, name .. " probabilities within 1e-6 of bin/ember's",
        string.format("largest difference %g", worst))
      if name == "batch256" then   -- the digit values, not class ids: against the labels
        local labels = cjson.decode(read(dir .. "/labels256.json")).labels
        local right = 0
        for r = 1, n do if got.classes[r] == labels[r] then right = right + 1 end end
        result(right >= 0.8 * n, name .. " classes are the digits (" .. right .. "/" .. n .. " match the labels)",
          "fewer than 80% match")
      end
    end
  end
  io.stderr:write(string.format("compare: %d passed, %d failed\n", pass, fail))
  os.exit(fail == 0 and 0 or 1)
end

io.stderr:write("usage: check.lua requests DIR | compare MODEL DIR RESPONSES NAME...\n")
os.exit(2)
