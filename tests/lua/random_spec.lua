-- The random generator: reproducibility under T.manual_seed, the documented
-- algorithm (checked against an independent Philox4x32-10 written here in
-- Lua), distribution sanity with fixed seeds (so the bounds are
-- deterministic), ranges, dtypes, the generator state and the errors.
local T = require "ember"
-- LuaJIT's bit library; Lua 5.4's own operator (loaded as text: LuaJIT
-- cannot parse `~`)
local has_bit, bit = pcall(require, "bit")
if not has_bit then bit = { bxor = load("return function(a, b) return a ~ b end")() } end

local floor = math.floor
local TWO32 = 4294967296

-- Philox4x32-10 in plain Lua numbers (uint32 values as doubles).
local function u32(x) return x % TWO32 end
local function mulhilo(a, b)
  local al, ah = a % 65536, floor(a / 65536)
  local bl, bh = b % 65536, floor(b / 65536)
  local mid = al * bh + ah * bl
  local lo_full = al * bl + (mid % 65536) * 65536
  local hi = ah * bh + floor(mid / 65536) + floor(lo_full / TWO32)
  return hi % TWO32, lo_full % TWO32
end
local function bxor(a, b, c) return u32(bit.bxor(bit.bxor(a, b), c)) end
local function philox(c, k)
  c = { c[1], c[2], c[3], c[4] }
  k = { k[1], k[2] }
  for r = 1, 10 do
    if r > 1 then
      k[1] = u32(k[1] + 0x9E3779B9)
      k[2] = u32(k[2] + 0xBB67AE85)
    end
    local hi0, lo0 = mulhilo(0xD2511F53, c[1])
    local hi1, lo1 = mulhilo(0xCD9E8D57, c[3])
    c = { bxor(hi1, c[2], k[1]), lo1, bxor(hi0, c[4], k[2]), lo0 }
  end
  return c
end
local function block(seed, idx, draw)
  return philox({ idx % TWO32, floor(idx / TWO32), draw or 0, 0 },
    { seed % TWO32, floor(seed / TWO32) })
end

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for i = 1, #v do walk(v[i]) end
    else out[#out + 1] = v == true and 1 or v == false and 0 or v end
  end
  walk(t:tolist())
  return out
end

local function mean_var(v)
  local s, s2 = 0, 0
  for i = 1, #v do s = s + v[i] end
  local m = s / #v
  for i = 1, #v do s2 = s2 + (v[i] - m) ^ 2 end
  return m, s2 / (#v - 1)
end

describe("the generator", function()
  it("matches Random123's Philox4x32-10 known answer (the Lua reference here)", function()
    local o = philox({ 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 })
    assert.same({ 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 }, o)
  end)

  it("makes uniforms from bits as docs/random.md says", function()
    T.manual_seed(1234)
    local d = flat(T.rand(5, { dtype = T.float64 })) -- blocks 0..2, two lanes each
    local f = flat(T.rand(9, { dtype = T.float32 })) -- blocks 3..5, four lanes each
    for i = 0, 4 do
      local w = block(1234, floor(i / 2))
      local l = 2 * (i % 2)
      assert.equal((w[l + 1] * 2 ^ 21 + floor(w[l + 2] / 2 ^ 11)) * 2 ^ -53, d[i + 1])
    end
    for i = 0, 8 do
      local w = block(1234, 3 + floor(i / 4))
      assert.equal(floor(w[i % 4 + 1] / 256) * 2 ^ -24, f[i + 1])
    end
    assert.same({ seed = 1234, offset = 6 }, T.get_rng_state())
  end)

  it("makes normals by Box-Muller and integers by multiply-shift", function()
    T.manual_seed(99)
    local n = flat(T.randn(4, { dtype = T.float64 }))
    local r = flat(T.randint(0, 10, { 6 }))
    for i = 0, 3 do
      local w = block(99, floor(i / 2))
      local u1 = 1 - (w[1] * 2 ^ 21 + floor(w[2] / 2 ^ 11)) * 2 ^ -53
      local u2 = (w[3] * 2 ^ 21 + floor(w[4] / 2 ^ 11)) * 2 ^ -53
      local rad, th = math.sqrt(-2 * math.log(u1)), 6.283185307179586 * u2
      local z = i % 2 == 0 and rad * math.cos(th) or rad * math.sin(th)
      assert.is_true(math.abs(z - n[i + 1]) <= 1e-15 * math.max(1, math.abs(z)))
    end
    for i = 0, 5 do
      local w = block(99, 2 + i)
      -- high 64 bits of (w1 * 2^32 + w2) * 10
      local hi = floor((w[1] * 10 + floor(w[2] * 10 / TWO32)) / TWO32)
      assert.equal(hi, r[i + 1])
    end
  end)

  it("gives the same numbers for the same seed, and different ones after", function()
    T.manual_seed(7)
    local a = { flat(T.rand(3, 4)), flat(T.randn(5)), flat(T.randint(-5, 5, { 7 })),
      flat(T.randperm(9)), flat(T.multinomial(T.tensor{ 0.2, 0.3, 0.5 }, 6, true)),
      flat(T.bernoulli(T.full({ 8 }, 0.5))), flat(T.empty(4):uniform_(2, 3)),
      flat(T.empty(4):normal_(1, 2)), flat(T.empty(4):exponential_(3)) }
    T.manual_seed(7)
    local b = { flat(T.rand(3, 4)), flat(T.randn(5)), flat(T.randint(-5, 5, { 7 })),
      flat(T.randperm(9)), flat(T.multinomial(T.tensor{ 0.2, 0.3, 0.5 }, 6, true)),
      flat(T.bernoulli(T.full({ 8 }, 0.5))), flat(T.empty(4):uniform_(2, 3)),
      flat(T.empty(4):normal_(1, 2)), flat(T.empty(4):exponential_(3)) }
    assert.same(a, b)
    assert.are_not.same(flat(T.rand(3, 4)), a[1])
  end)

  it("saves and restores its state as a Lua value", function()
    T.manual_seed(5)
    T.rand(10) -- float32: four elements per block, so 3 blocks
    local s = T.get_rng_state()
    assert.same({ seed = 5, offset = 3 }, s)
    local x = flat(T.randn(6))
    T.rand(3)
    T.set_rng_state(s)
    assert.same(x, flat(T.randn(6)))
    assert.has_error(function() T.set_rng_state(5) end,
      "set_rng_state: expected a state table {seed = s, offset = o} (from get_rng_state), got number")
    assert.has_error(function() T.set_rng_state { seed = 1, offset = -1 } end)
  end)

  it("seeds itself from the OS on T.seed(), reported by initial_seed", function()
    local s = T.seed()
    assert.equal(floor(s), s)
    assert.is_true(s >= 0 and s < 2 ^ 53)
    assert.equal(s, T.initial_seed())
    T.manual_seed(12)
    assert.equal(12, T.initial_seed())
    assert.has_error(function() T.manual_seed(1.5) end)
    assert.has_error(function() T.manual_seed("x") end, "manual_seed: expected an integer seed, got string")
  end)
end)

describe("random tensors", function()
  before_each(function() T.manual_seed(2024) end)

  it("rand is uniform on [0, 1)", function()
    local v = flat(T.rand(100000, { dtype = T.float64 }))
    local m, var = mean_var(v)
    local lo, hi = math.huge, -math.huge
    for i = 1, #v do lo = math.min(lo, v[i]); hi = math.max(hi, v[i]) end
    assert.is_true(lo >= 0 and hi < 1)
    assert.is_true(math.abs(m - 0.5) < 0.005)
    assert.is_true(math.abs(var - 1 / 12) < 0.002)
    -- ten equal bins each hold about a tenth
    local bins = {}
    for i = 1, #v do local b = floor(v[i] * 10); bins[b] = (bins[b] or 0) + 1 end
    for b = 0, 9 do assert.is_true(math.abs(bins[b] - 10000) < 500) end
  end)

  it("rand in half precision never reaches 1", function()
    for _, dt in ipairs { T.float16, T.bfloat16, T.float32 } do
      local v = flat(T.rand(20000, { dtype = dt }))
      for i = 1, #v do assert(v[i] >= 0 and v[i] < 1, tostring(dt) .. " " .. v[i]) end
    end
  end)

  it("randn has mean 0 and variance 1; normal_ shifts and scales", function()
    local m, var = mean_var(flat(T.randn(100000)))
    assert.is_true(math.abs(m) < 0.015)
    assert.is_true(math.abs(var - 1) < 0.02)
    local m2, var2 = mean_var(flat(T.empty(50000, { dtype = T.float64 }):normal_(3, 2)))
    assert.is_true(math.abs(m2 - 3) < 0.04)
    assert.is_true(math.abs(var2 - 4) < 0.1)
  end)

  it("uniform_ and exponential_ have the right means", function()
    local u = flat(T.empty(50000):uniform_(-2, 6))
    local m = mean_var(u)
    assert.is_true(math.abs(m - 2) < 0.05)
    for i = 1, #u do assert(u[i] >= -2 and u[i] < 6) end
    local e = flat(T.empty(50000, { dtype = T.float64 }):exponential_(2))
    local me, ve = mean_var(e)
    assert.is_true(math.abs(me - 0.5) < 0.01)
    assert.is_true(math.abs(ve - 0.25) < 0.015)
    for i = 1, #e do assert(e[i] >= 0) end
  end)

  it("randint stays in [low, high) and hits every value evenly", function()
    local v = flat(T.randint(-3, 7, { 50000 }))
    local counts = {}
    for i = 1, #v do
      assert(v[i] >= -3 and v[i] < 7 and v[i] == floor(v[i]))
      counts[v[i]] = (counts[v[i]] or 0) + 1
    end
    for k = -3, 6 do assert.is_true(math.abs(counts[k] - 5000) < 300) end
    local h = flat(T.randint(5, { 1000 }))
    for i = 1, #h do assert(h[i] >= 0 and h[i] < 5) end
  end)

  it("randint, randperm and the *_like forms have PyTorch's dtypes", function()
    assert.equal(T.int64, T.randint(0, 3, { 2 }).dtype)
    assert.equal(T.float32, T.randint(0, 3, { 2 }, { dtype = T.float32 }).dtype)
    assert.equal(T.Size{ 2, 3 }, T.randint(3, T.Size{ 2, 3 }).shape)
    assert.equal(T.float32, T.rand(2).dtype)
    assert.equal(T.float64, T.rand(2, { dtype = T.float64 }).dtype)
    assert.equal(T.Size{ 2, 3 }, T.rand{ 2, 3 }.shape)
    assert.equal(T.Size{}, T.rand().shape)
    local d = T.zeros(2, 2, { dtype = T.float64 })
    assert.equal(T.float64, T.rand_like(d).dtype)
    assert.equal(T.float64, T.randn_like(d).dtype)
    assert.equal(T.Size{ 2, 2 }, T.randn_like(d).shape)
    assert.equal(T.int32, T.randint_like(T.zeros(3, { dtype = T.int32 }), 10).dtype)
    local r = flat(T.randint_like(T.zeros(100), 4, 6))
    for i = 1, #r do assert(r[i] == 4 or r[i] == 5) end
    assert.equal(T.int64, T.randperm(4).dtype)
    assert.equal(T.float32, T.randperm(4, { dtype = T.float32 }).dtype)
    assert.is_true(T.rand(2, { requires_grad = true }).requires_grad)
  end)

  it("randperm is a permutation of the 1-based positions 1..n", function()
    local p = flat(T.randperm(500))
    local seen = {}
    for i = 1, #p do
      assert(p[i] >= 1 and p[i] <= 500 and not seen[p[i]])
      seen[p[i]] = true
    end
    assert.equal(500, #p)
    assert.same({}, flat(T.randperm(0)))
    assert.same({ 1 }, flat(T.randperm(1)))
  end)

  it("bernoulli into float32 views (rows of odd length) draws what float64 and a contiguous tensor draw", function()
    -- element i (row-major) is lane i % 2 of block i / 2 whatever the layout:
    -- rows of 3 start at odd elements, which float32's own loop handles apart
    for _, p in ipairs { 0.3, 0.5 } do
      T.manual_seed(9)
      local a = T.zeros(5, 7):narrow(2, 2, 3):bernoulli_(p)
      T.manual_seed(9)
      local b = T.zeros(5, 7, { dtype = T.float64 }):narrow(2, 2, 3):bernoulli_(p)
      T.manual_seed(9)
      local c = T.zeros(15):bernoulli_(p)
      assert.is_true(T.equal(a:double(), b))
      assert.is_true(T.equal(a:reshape(-1), c))
    end
  end)
  it("bernoulli draws 1 with the given probability", function()
    local v = flat(T.bernoulli(T.full({ 40000 }, 0.3)))
    local m = mean_var(v)
    assert.is_true(math.abs(m - 0.3) < 0.01)
    assert.same({ 0, 1, 0, 1 }, flat(T.bernoulli(T.tensor({ 0, 1, 0, 1 }, { dtype = T.float32 }))))
    local t = T.zeros(20000, { dtype = T.int64 }):bernoulli_(0.75)
    assert.equal(T.int64, t.dtype)
    assert.is_true(math.abs(mean_var(flat(t)) - 0.75) < 0.015)
    local b = T.zeros(3, { dtype = T.bool }):bernoulli_(1)
    assert.same({ true, true, true }, b:tolist())
    -- probabilities broadcast to the destination
    local rows = T.zeros(2, 1000):bernoulli_(T.tensor({ { 0 }, { 1 } }, { dtype = T.float32 })):tolist()
    assert.equal(0, rows[1][500])
    assert.equal(1, rows[2][500])
    assert.equal(T.float64, T.tensor({ 0.5 }, { dtype = T.float64 }):bernoulli().dtype)
  end)

  it("multinomial samples 1-based categories in proportion", function()
    local v = flat(T.multinomial(T.tensor{ 1, 2, 7 , 0 }:double(), 20000, true))
    local c = { 0, 0, 0, 0 }
    for i = 1, #v do c[v[i]] = c[v[i]] + 1 end
    assert.is_true(math.abs(c[1] / 20000 - 0.1) < 0.01)
    assert.is_true(math.abs(c[2] / 20000 - 0.2) < 0.015)
    assert.is_true(math.abs(c[3] / 20000 - 0.7) < 0.015)
    assert.equal(0, c[4])
    -- without replacement: distinct, all categories when n = size
    local w = flat(T.multinomial(T.tensor{ 0.1, 0.2, 0.3, 0.4 }, 4))
    table.sort(w)
    assert.same({ 1, 2, 3, 4 }, w)
    -- the likeliest category comes first most often
    local first = 0
    for _ = 1, 200 do
      if T.multinomial(T.tensor{ 0.05, 0.05, 0.9 }, 2):tolist()[1] == 3 then first = first + 1 end
    end
    assert.is_true(first > 160)
    -- rows
    local m = T.multinomial(T.tensor{ { 1, 0, 0 }, { 0, 0, 1 } }:float(), 3, { replacement = true })
    assert.same({ { 1, 1, 1 }, { 3, 3, 3 } }, m:tolist())
    -- a transposed probability tensor is read by its rows, as its contiguous copy
    local pt = T.tensor{ { 1, 0 }, { 1, 0 }, { 0, 1 } }:double():t()
    local st = T.get_rng_state()
    local a = T.multinomial(pt, 50, true):tolist()
    T.set_rng_state(st)
    assert.same(T.multinomial(pt:contiguous(), 50, true):tolist(), a)
    for _, c in ipairs(a[1]) do assert.is_true(c == 1 or c == 2) end
    -- zero-probability categories come last, as in PyTorch
    assert.same({ 2, 1, 3 }, T.multinomial(T.tensor{ 0, 1, 0 }:float(), 3):tolist())
  end)

  it("rejects bad arguments with clear errors", function()
    assert.has_error(function() T.rand(2, { dtype = T.int64 }) end,
      "rand: expected a floating-point or complex dtype, got ember.int64")
    assert.has_error(function() T.randn_like(T.zeros(2, { dtype = T.int32 })) end,
      "randn_like: expected a floating-point or complex dtype, got ember.int32")
    assert.has_error(function() T.rand(-1) end, "rand: negative dimension -1 in size [-1]")
    assert.has_error(function() T.randint(5, 3, { 2 }) end,
      "random_: expects 'from' to be less than 'to', but got from=5 >= to=3")
    assert.has_error(function() T.randint(10, 3, 3) end,
      "randint: expected ([low,] high, size[, options]) with size a table, e.g. T.randint(0, 10, {2, 3})")
    assert.has_error(function() T.randint(0, 300, { 3 }, { dtype = T.uint8 }) end,
      "random_: to - 1 = 299 is out of bounds for ember.uint8")
    assert.has_error(function() T.randint(0, 2.5, { 3 }) end, "randint: expected an integer for high, got 2.5")
    assert.has_error(function() T.randperm(-1) end, "randperm: n must be non-negative, got -1")
    assert.has_error(function() T.zeros(3, { dtype = T.int64 }):uniform_() end,
      "uniform_: expects a floating-point tensor, got ember.int64")
    assert.has_error(function() T.zeros(3):uniform_(2, 1) end,
      "uniform_: expects to return a [from, to) range, but found from=2 > to=1")
    assert.has_error(function() T.zeros(3):normal_(0, -1) end,
      "normal_: expects std >= 0.0, but found std -1")
    assert.has_error(function() T.zeros(3):exponential_(-1) end,
      "exponential_: expects lambda >= 0.0, but found lambda=-1")
    assert.has_error(function() T.zeros(3):bernoulli_(1.5) end,
      "bernoulli_: expects p to be in [0, 1], but got p=1.5")
    assert.has_error(function() T.bernoulli(T.tensor{ 0.5, 2.0 }) end,
      "bernoulli_: expects all probabilities to be in [0, 1], got 2")
    assert.has_error(function() T.multinomial(T.zeros(2), 1) end,
      "multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    assert.has_error(function() T.multinomial(T.tensor({ 1, -1 }, { dtype = T.float32 }), 1) end,
      "multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    assert.has_error(function() T.multinomial(T.tensor{ 0.5, 0.5 }, 3) end,
      "multinomial: cannot sample n_sample (3) > prob_dist.size(-1) (2) samples without replacement")
    assert.has_error(function() T.multinomial(T.tensor{ 1, 2 }, 1) end,
      "multinomial: only supports floating-point dtypes for input, got ember.int64")
    assert.has_error(function() T.multinomial(T.tensor{ 0.5, 0.5 }, 0) end,
      "multinomial: cannot sample n_sample <= 0 samples (got 0)")
    assert.has_error(function() T.multinomial(T.zeros(2, 2, 2), 1) end,
      "multinomial: prob_dist must be 1 or 2 dim, got 3 dims")
  end)
end)
