-- The bad-input matrix (issue 8): every public function of T, of
-- T.nn.functional (as F.name), T.linalg, T.fft and T.special, the
-- distributions constructors, and every tensor method (enumerated at
-- runtime by matrix_cases.lua, so new ops are covered when added) is called with wrong types, nil, NaN, +-Inf,
-- negative and huge sizes, out-of-range dims, empty and 0-d tensors,
-- non-contiguous and expanded tensors and mixed dtypes. Each call must
-- either succeed or raise a Lua error whose message names the operation
-- (its name, or a documented alias in matrix_cases.aliases). After each
-- function the process must still be healthy (a sanity computation), and
-- at the end the live storage bytes must be back near their start.
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack
local C = require "matrix_cases"

local function label_of(a) return a[1] end

local function describe_call(prefix, name, args)
  local parts = {}
  for i = 1, #args do parts[i] = label_of(args[i]) end
  return ("%s%s(%s)"):format(prefix, name, table.concat(parts, ", "))
end

local function names_error(msg, name)
  for _, n in ipairs(C.names_for(name)) do
    if msg:find(n, 1, true) then return true end
  end
  for _, e in ipairs(C.allocation_errors) do
    if msg:find(e, 1, true) then
      for _, a in ipairs(C.allocators) do
        if msg:find(a .. ":", 1, true) then return true end
      end
    end
  end
  return false
end

local function healthy()
  local s = T.arange(10, { dtype = T.float64 }):reshape(2, 5):t():sum():item()
  return s == 45
end

-- Saves and restores the process-wide settings the matrix may change.
local function snapshot()
  return {
    dtype = T.get_default_dtype(),
    print = T.get_printoptions(),
    threads = T.get_num_threads(),
    det = T.are_deterministic_algorithms_enabled(),
    rng = T.get_rng_state(),
  }
end
local function restore(s)
  T.set_default_dtype(s.dtype)
  T.set_printoptions(s.print)
  T.set_num_threads(s.threads)
  T.use_deterministic_algorithms(s.det)
  T.set_rng_state(s.rng)
end

local stats = { calls = 0, errors = 0, ok = 0 }
local TRACE = os.getenv("EMBER_MATRIX_TRACE") -- print each call first (to find a crash)

-- Runs f(unpack(args)) and returns a failure description or nil.
local function try(what, name, f, self, args)
  local n = #args
  local vals = {}
  for i = 1, n do vals[i] = args[i][2] end
  local ok, err
  if TRACE then io.stderr:write(what, "\n") io.stderr:flush() end
  if self ~= nil then
    ok, err = pcall(f, self, unpack(vals, 1, n))
  else
    ok, err = pcall(f, unpack(vals, 1, n))
  end
  stats.calls = stats.calls + 1
  if ok then stats.ok = stats.ok + 1 return nil end
  stats.errors = stats.errors + 1
  local msg = tostring(err)
  if type(err) ~= "string" and type(err) ~= "table" then
    return what .. " raised a non-string error: " .. msg
  end
  if not names_error(msg, name) then return what .. " -> " .. msg end
  return nil
end

describe("bad-input matrix", function()
  local start = snapshot()
  collectgarbage() collectgarbage()
  local live0 = T.memory_stats().live_bytes
  local values = C.values(T)
  local arglists = C.arglists(T, values)
  local failures = {}

  local known_seen = {}
  local function record(f, name)
    if not f then return end
    if C.known[name] then
      known_seen[name] = (known_seen[name] or 0) + 1
    elseif #failures < 10000 then
      failures[#failures + 1] = f
    end
  end

  it("the function list is enumerated at runtime and the exclusions are real functions", function()
    local fns = C.functions(T)
    assert.is_true(#fns > 200)
    for name in pairs(C.excluded) do
      assert.is_truthy(T[name] ~= nil or T.Tensor_methods[name] ~= nil, name)
    end
  end)

  it("every module function raises errors naming it, and the process stays healthy", function()
    for _, name in ipairs(C.functions(T)) do
      local f = T[name]
      for _, args in ipairs(arglists) do
        record(try(describe_call("T.", name, args), name, f, nil, args), name)
      end
      if C.global_state[name] then restore(start) end
      assert.is_true(healthy(), "unhealthy after T." .. name)
    end
  end)

  it("every function of T.nn.functional, T.linalg, T.fft, T.special and the distributions "
    .. "constructors raises errors naming it", function()
    local fns = C.namespace_functions(T)
    assert.is_true(#fns > 200)
    for q in pairs(C.excluded_qualified) do
      local prefix, k = q:match("^([%w_]+)%.([%w_]+)$")
      local ns
      for _, n in ipairs(C.namespaces(T)) do if n[1] == prefix then ns = n[2] end end
      assert.is_truthy(ns and ns[k] ~= nil, q)
    end
    -- fresh values: the T functions above write into some of theirs
    local lists = C.namespace_arglists(T, C.values(T))
    for _, e in ipairs(fns) do
      local name, f = e[1], e[2]
      for _, args in ipairs(lists) do
        record(try(describe_call("", name, args), name, f, nil, args), name)
      end
      restore(start)
      assert.is_true(healthy(), "unhealthy after " .. name)
    end
  end)

  it("every tensor method on every kind of self raises errors naming it", function()
    for _, name in ipairs(C.methods(T)) do
      for _, s in ipairs(C.selves(T)) do
        local self = s[2]
        local f = self[name]
        for _, args in ipairs(arglists) do
          record(try(describe_call(s[1] .. ":", name, args), name, f, self, args), name)
        end
      end
      assert.is_true(healthy(), "unhealthy after :" .. name)
    end
  end)

  it("memory is back near its start once the garbage is collected", function()
    restore(start)
    values, arglists = nil, nil
    collectgarbage() collectgarbage()
    local live = T.memory_stats().live_bytes
    assert.is_true(live - live0 < 2 ^ 20,
      ("live bytes grew from %d to %d"):format(live0, live))
  end)

  it("errors found by the matrix name the op (regressions)", function()
    -- chunk/tensor_split/split with more pieces than a Lua array holds
    local ok, err = pcall(T.tensor_split, T.zeros(3), 2 ^ 40)
    assert.is_false(ok)
    assert.matches("^tensor_split: too many pieces", tostring(err))
    -- index_put_ with something other than a table of indices
    ok, err = pcall(function() return T.zeros(2):index_put_(5, T.ones(1)) end)
    assert.is_false(ok)
    -- (Lua 5.4 keeps the caller of a tail-called C function: a position first)
    assert.matches("^index_put_: expected a table", (tostring(err):gsub("^[^:]*:%d+: ", "")))
  end)

  it("errors found by the matrix in the namespaces name the op, and nothing hangs (regressions)", function()
    local F = T.nn.functional
    local function raises(pat, f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok)
      assert.matches(pat, (tostring(err):gsub("^[^:]*:%d+: ", "")))
    end
    raises("^relu: expected a tensor for the input, got nil", F.relu)
    raises("^scaled_dot_product_attention: expected value to be a tensor, got nil",
      F.scaled_dot_product_attention, T.ones(2, 2), T.ones(2, 2))
    raises("^softmin: dimension 9 out of range", F.softmin, T.ones(2, 3), 9)
    raises("^upsample: expected a tensor input", F.upsample)
    raises("^avg_pool3d: expected kernel_size to be integers, got inf", F.avg_pool3d, T.ones(1, 1, 2, 2, 2), math.huge)
    raises("^linalg.matrix_power: expected an integer exponent, got inf", T.linalg.matrix_power, T.eye(2), math.huge)
    raises("^linalg.vecdot: expected a tensor for y, got nil", T.linalg.vecdot, T.ones(3))
    raises("^linalg.cond: linalg.svdvals: Expected a floating point", T.linalg.cond, T.ones(2, 2, { dtype = T.int64 }))
    raises("^special_legendre_polynomial_p: n = .* is too large", T.special.legendre_polynomial_p, T.zeros(1), 2 ^ 62)
    raises("^expit: ", T.special.expit, "abc")
    raises("^fftn: Invalid number of data points %(inf%)", T.fft.fftn, T.ones(2, 3), math.huge)
    raises("^Normal: expected a tensor or a number for a parameter, got nil", T.distributions.Normal)
    raises("^LogNormal: expected a tensor or a number", T.distributions.LogNormal, true)
    raises("^Independent: expected a distribution for base_distribution, got number", T.distributions.Independent, 1, 0)
    raises("^kl_divergence: no KL", T.distributions.kl_divergence, 1, true)
  end)

  it("no call failed without naming its operation", function()
    for name, why in pairs(C.known) do
      if known_seen[name] then
        print(("known (not this branch's file): %s: %d calls: %s"):format(name, known_seen[name], why))
      end
    end
    print(("\nbad-input matrix: %d calls, %d succeeded, %d raised; %d errors did not name the op"):format(
      stats.calls, stats.ok, stats.errors, #failures))
    if #failures > 0 then
      local seen, shown = {}, {}
      for _, f in ipairs(failures) do
        local key = f:match("^[^(]*") .. " " .. (f:match("%-> (.*)$") or f):gsub("%d+", "N")
        if not seen[key] then
          seen[key] = true
          shown[#shown + 1] = f
        end
      end
      error(("%d calls (%d distinct) raised errors that do not name the op:\n%s"):format(
        #failures, #shown, table.concat(shown, "\n")), 0)
    end
  end)
end)
