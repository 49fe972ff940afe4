-- The CUDA backend (issue 15; docs/cuda.md).
-- Part 1 runs everywhere: a build without CUDA, or with CUDA on a machine
-- without a driver or device, says so clearly from every entry point.
-- Part 2 is parametrised by device: each case runs on "cpu" and, where a
-- device is present, again on "cuda" with the same expected values. Without
-- a device the cuda cases are busted `pending` ("cuda: no device"), so they
-- are counted in busted's "N pending" (and in tools/cuda-check.sh's summary).
local T = require "ember"

local available = T.cuda.is_available()
local built = T.cuda.is_built()

-- needle: a string, or a list of strings the error must all contain
local function raises(f, needle)
  local ok, err = pcall(f)
  local needles = type(needle) == "table" and needle or { needle }
  assert.is_false(ok, "expected an error containing: " .. table.concat(needles, " ... "))
  err = tostring(err)
  for _, n in ipairs(needles) do
    assert(err:find(n, 1, true), "expected an error containing '" .. n .. "', got: " .. err)
  end
  return err
end

-- the reason every cuda entry gives without a device
local function why(op)
  -- without CUDA built in, an op names the device it cannot reach first
  -- ("zeros: device cuda:0 is not available: ember was built without
  -- CUDA ..."), a T.cuda function says it directly
  return built and (op .. ": CUDA is not available (") or { op .. ": ", "ember was built without CUDA" }
end

describe("cuda without a device", function()
  if available then
    -- a machine with a device: its messages are the device cases' business
    it("sees a device", function()
      assert.is_true(T.cuda.device_count() > 0)
      assert.is_true(T.cuda.is_built())
    end)
    return
  end

  it("is_available is false and device_count 0; is_built tells the build", function()
    assert.is_false(T.cuda.is_available())
    assert.equal(0, T.cuda.device_count())
    assert.equal("boolean", type(T.cuda.is_built()))
  end)

  it("making a cuda tensor names the op and why", function()
    local reason = built and "CUDA is not available (" or "ember was built without CUDA"
    raises(function() return T.zeros(2, 2, { device = "cuda" }) end, built and "zeros: " .. reason or { "zeros: ", reason })
    raises(function() return T.empty(0, { device = "cuda" }) end, built and "empty: " .. reason or { "empty: ", reason })
    raises(function() return T.ones(3, { device = "cuda:1" }) end, built and "ones: " .. reason or { "ones: ", reason })
    raises(function() return T.arange(4, { device = "cuda" }) end, reason)
    raises(function() return T.ones(2):to("cuda") end, reason)
    raises(function() return T.ones(2):cuda() end, reason)
    if built then
      -- the driver's own words are kept: cudaGetDeviceCount and its reason
      raises(function() return T.zeros(1, { device = "cuda" }) end, "cudaGetDeviceCount: ")
    end
  end)

  it("to and cuda take non_blocking (a boolean): honoured on the host, cuda says why it cannot", function()
    local x = T.ones(3)
    assert.equal(x, x:to("cpu", { non_blocking = true }))     -- nothing to copy: the same tensor
    assert.equal(x, x:to({ device = "cpu", non_blocking = false }))
    raises(function() return x:to({ non_blocking = "yes" }) end, "non_blocking")
    raises(function() return x:to({ nonblocking = true }) end, "unknown option 'nonblocking'")
    local reason = built and "CUDA is not available (" or "ember was built without CUDA"
    raises(function() return x:cuda({ non_blocking = true }) end, reason)
    raises(function() return x:cuda(0, { non_blocking = true }) end, reason)
    raises(function() return x:cuda({ blocking = true }) end, "unknown option 'blocking'")
    raises(function() return x:to("cuda", { non_blocking = true }) end, why("to"))
  end)

  it("every T.cuda function that needs a device raises, naming itself", function()
    local calls = {
      synchronize = function() T.cuda.synchronize() end,
      current_stream = function() return T.cuda.current_stream() end,
      default_stream = function() return T.cuda.default_stream() end,
      current_device = function() return T.cuda.current_device() end,
      Stream = function() return T.cuda.Stream() end,
      Event = function() return T.cuda.Event { enable_timing = true } end,
      memory_allocated = function() return T.cuda.memory_allocated() end,
      max_memory_allocated = function() return T.cuda.max_memory_allocated(0) end,
      memory_reserved = function() return T.cuda.memory_reserved("cuda") end,
      max_memory_reserved = function() return T.cuda.max_memory_reserved("cuda:0") end,
      memory_stats = function() return T.cuda.memory_stats() end,
      reset_peak_memory_stats = function() T.cuda.reset_peak_memory_stats() end,
      empty_cache = function() T.cuda.empty_cache() end,
      manual_seed = function() T.cuda.manual_seed(7) end,
      manual_seed_all = function() T.cuda.manual_seed_all(7) end,
    }
    for op, f in pairs(calls) do raises(f, why(op)) end
  end)

  it("pin_memory refuses clearly; is_pinned is false", function()
    local x = T.ones(2, 3)
    raises(function() return x:pin_memory() end, why("pin_memory"))
    assert.is_false(x:is_pinned())
    assert.is_false(T.empty(0):is_pinned())
  end)
end)

describe("cuda arguments are checked before the device", function()
  it("refuses unknown options and bad devices", function()
    raises(function() return T.cuda.Event { bogus = 1 } end, "Event: unknown option 'bogus'")
    raises(function() return T.cuda.Stream { bogus = 1 } end, "Stream: unknown option 'bogus'")
    raises(function() return T.cuda.Event { interprocess = true } end, "Event: interprocess events are not supported")
    raises(function() return T.cuda.memory_allocated("cpu") end,
      "memory_allocated: expected a cuda device (an index, 'cuda', 'cuda:N' or a device), got 'cpu'")
    raises(function() return T.cuda.memory_allocated(-1) end, "memory_allocated: invalid device -1")
    raises(function() return T.cuda.is_available({ zz = 1 }) end, "is_available: unknown option 'zz'")
    raises(function() return T.cuda.stream(1, function() end) end, "stream: expected a T.cuda.Stream, got number")
    raises(function() return T.cuda.set_stream("x") end, "set_stream: expected a T.cuda.Stream, got string")
    raises(function() return T.ones(2):pin_memory({ zz = 1 }) end, "pin_memory: unknown option 'zz'")
  end)
end)

describe("T.backends.cuda.matmul", function()
  it("allow_tf32 is off by default, settable, and checked", function()
    assert.is_false(T.backends.cuda.matmul.allow_tf32)
    T.backends.cuda.matmul.allow_tf32 = true
    assert.is_true(T.backends.cuda.matmul.allow_tf32)
    T.backends.cuda.matmul.allow_tf32 = false
    assert.is_false(T.backends.cuda.matmul.allow_tf32)
    raises(function() T.backends.cuda.matmul.allow_tf32 = 1 end, "allow_tf32: expected a boolean, got number")
    raises(function() T.backends.cuda.matmul.allow_fp16 = true end, "unknown setting 'allow_fp16' (expected allow_tf32)")
    raises(function() return T.backends.cuda.matmul.allow_bf16 end, "unknown setting 'allow_bf16'")
  end)
end)

describe("T.backends.cudnn", function()
  it("enabled, allow_tf32, deterministic and benchmark: PyTorch's names, ember's defaults, checked", function()
    local B = T.backends.cudnn
    assert.is_true(B.enabled)
    assert.is_false(B.allow_tf32)
    assert.is_false(B.deterministic)
    assert.is_false(B.benchmark)
    for _, k in ipairs { "enabled", "allow_tf32", "deterministic", "benchmark" } do
      local was = B[k]
      B[k] = not was
      assert.equal(not was, B[k])
      B[k] = was
      assert.equal(was, B[k])
      raises(function() B[k] = 1 end, "T.backends.cudnn." .. k .. ": expected a boolean, got number")
    end
    raises(function() B.benchmark_limit = 10 end, "unknown setting 'benchmark_limit'")
    raises(function() return B.fastest end, "unknown setting 'fastest'")
    local v = B.version()
    assert.equal(v ~= nil, B.is_available())
    if v then assert.is_true(math.type == nil or math.type(v) == "integer") end
  end)
end)

-- Part 2: the same cases on every device present.
local devices = { "cpu", "cuda" }
local function on(device, name, fn)
  if device == "cuda" and not available then
    pending("cuda: no device: " .. name)
  else
    it(device .. ": " .. name, function() fn(device) end)
  end
end
local function back(t) return t.device.type == "cpu" and t or t:cpu() end
-- complex tensors are compared through their (re, im) views
local function same(want, got, tol)
  got = back(got)
  assert.same(want.shape, got.shape)
  assert.equal(tostring(want.dtype), tostring(got.dtype))
  if want:is_complex() then want, got = T.view_as_real(want), T.view_as_real(got) end
  if tol then assert.is_true(T.allclose(got, want, tol, tol, true), debug.traceback())
  else assert.is_true(T.equal(got, want)) end
end

for _, dev in ipairs(devices) do
  describe("device " .. dev, function()
    on(dev, "copies to and from the host keep every dtype's values", function(d)
      for _, dt in ipairs { T.float32, T.float64, T.float16, T.bfloat16, T.int64, T.int32,
                            T.int16, T.int8, T.uint8, T.bool } do
        local x = T.tensor { { 1, 0, 3 }, { 4, 5, 0 } }:to(dt)
        same(x, x:to(d))
      end
      -- non_blocking (PyTorch's): from pinned memory the copy stays queued
      -- until the stream is waited for; without it the host waits at once
      local src = T.arange(1, 1000001):float()
      if d ~= "cpu" then src = src:pin_memory() end
      local y = src:to(d, { non_blocking = true })
      if d ~= "cpu" then T.cuda.synchronize() end
      same(src, y)
      same(src, src:to({ device = d, non_blocking = false }))
      if d ~= "cpu" then same(src, src:cuda({ non_blocking = true })) end
    end)
    on(dev, "T.save of device tensors writes host bytes: T.load gives CPU tensors, views still share", function(d)
      local path = os.tmpname()
      local base = T.arange(1, 13):float():to(d)
      local w = T.randn(3, 4, { dtype = T.float64 }):to(d):requires_grad_()
      local tree = { a = base:view(3, 4), row = base:view(3, 4)[2], col = base:view(3, 4):t(), w = w,
        ids = T.tensor { 5, 6 }:to(d), n = 7 }
      T.save(path, tree)
      local back = T.load(path)
      os.remove(path)
      assert.equal("cpu", back.a.device.type)
      same(tree.a:cpu(), back.a)
      same(tree.row:cpu(), back.row)
      same(tree.col:cpu(), back.col)
      same(w:detach():cpu(), back.w:detach())
      assert.is_true(back.w.requires_grad)
      same(T.tensor { 5, 6 }, back.ids)
      assert.equal(7, back.n)
      back.a[1][1] = 100                       -- the views share one storage, as on the device
      assert.equal(100, back.col[1][1]:item())
      local m = T.nn.Linear(4, 2):to(d)
      T.save(path, m:state_dict())
      local m2 = T.nn.Linear(4, 2)
      m2:load_state_dict(T.load(path))
      os.remove(path)
      same(m.weight:detach():cpu(), m2.weight:detach())
      local m3 = T.nn.Linear(4, 2):to(d)
      m3:load_state_dict(m2:state_dict())   -- and back to the device
      same(m.weight:detach(), m3.weight:detach())
      -- PyTorch's format too: host bytes, views still sharing
      T.save_torch(path, { a = tree.a, col = tree.col, w = w })
      local pt = T.load_torch(path)
      os.remove(path)
      same(tree.col:cpu(), pt.col)
      same(w:detach():cpu(), pt.w:detach())
      pt.a[1][1] = 100
      assert.equal(100, pt.col[1][1]:item())
    end)
    on(dev, "casts on the device follow docs/dtypes.md", function(d)
      local x = T.tensor { -1.75, 2.5, 300.25, 0 }:to(d)
      same(T.tensor { -1, 2, 300, 0 }, x:long())
      same(T.tensor { true, true, true, false }, x:bool())
      same(T.tensor { -1, 2, 127, 0 }:to(T.int8), x:to(T.int8))  -- saturates
      -- float64 to float16/bfloat16 rounds through float32, as the CPU and
      -- PyTorch do (a direct rounding differs near a tie)
      local tie = T.tensor({ 1 + 2 ^ -11 + 2 ^ -40, 1 + 2 ^ -8 + 2 ^ -40, -3.0000001 }, { dtype = T.float64 })
      same(tie:half(), tie:to(d):half())
      same(tie:bfloat16(), tie:to(d):bfloat16())
    end)
    on(dev, "strided copies, fills and zeros", function(d)
      local x = T.arange(12):view(3, 4):float():to(d)
      same(T.arange(12):view(3, 4):float():t():contiguous(), x:t():contiguous())
      local z = T.zeros(2, 3, { device = d })
      same(T.zeros(2, 3), z)
      z:fill_(2.5)
      same(T.full({ 2, 3 }, 2.5), z)
    end)
    on(dev, "ranges", function(d)
      same(T.arange(0, 10, 3), T.arange(0, 10, 3, { device = d }))
      same(T.linspace(0, 1, 5), T.linspace(0, 1, 5, { device = d }), 1e-6)
      -- start + i * step rounds twice on both (no fused multiply-add): the
      -- CPU's bits
      local f64 = { dtype = T.float64 }
      same(T.arange(0.5, 10.5, 0.1, f64), T.arange(0.5, 10.5, 0.1, { dtype = T.float64, device = d }))
      same(T.linspace(-3.7, 11.2, 1000, f64), T.linspace(-3.7, 11.2, 1000, { dtype = T.float64, device = d }))
      same(T.logspace(-2, 3, 77, f64), T.logspace(-2, 3, 77, { dtype = T.float64, device = d }))
      -- the alpha forms likewise
      local x, y = T.linspace(-3, 5, 101, f64), T.linspace(2, -7, 101, f64)
      same(T.add(x, y, { alpha = 0.3 }), T.add(x:to(d), y:to(d), { alpha = 0.3 }))
      same(T.lerp(x, y, 0.37), T.lerp(x:to(d), y:to(d), 0.37))
      -- relu keeps -0.0 (1 / -0.0 is -inf), as the CPU and torch
      local z = T.tensor({ -0.5, 0.5, 2 }, f64):mul(T.tensor({ 0, -0.0, 1 }, f64)) -- -0, -0, 2
      same(z:relu():reciprocal(), z:to(d):relu():reciprocal())
    end)
    on(dev, "elementwise ops with broadcasting and promotion", function(d)
      local a = T.tensor { { 1, -2, 3 }, { 4, 5, -6 } }:float()
      local b = T.tensor { 0.5, 2, -1 }
      local ad, bd = a:to(d), b:to(d)
      same(a + b, ad + bd, 1e-6)
      same(a * b, ad * bd, 1e-6)
      same(a:sub(b, { alpha = 2 }), ad:sub(bd, { alpha = 2 }), 1e-6)
      same(a / b, ad / bd, 1e-6)
      same(T.maximum(a, b), T.maximum(ad, bd))
      same(a:gt(b), ad:gt(bd))
      same(a:abs():sqrt(), ad:abs():sqrt(), 1e-6)
      same(a:exp(), ad:exp(), 1e-5)
      same(a:relu(), ad:relu())
      same(a:clamp(-1, 2), ad:clamp(-1, 2))
      same(T.where(a:gt(0), a, b), T.where(ad:gt(0), ad, bd))
    end)
    on(dev, "matrix products: transposed operands, batches, broadcasting, float64", function(d)
      local a, b = T.randn(5, 7), T.randn(7, 3)
      local ad, bd = a:to(d), b:to(d)
      same(a:matmul(b), ad:matmul(bd), 1e-4)
      same(a:t():t():matmul(b:t():contiguous():t()), ad:matmul(bd:t():contiguous():t()), 1e-4)
      same(b:t():matmul(a:t()), bd:t():matmul(ad:t()), 1e-4)
      local x, y = T.randn(4, 5, 6), T.randn(6, 2)
      same(x:matmul(y), x:to(d):matmul(y:to(d)), 1e-4)
      local p, q = T.randn(3, 4, 5):double(), T.randn(3, 5, 2):double()
      same(T.bmm(p, q), T.bmm(p:to(d), q:to(d)), 1e-10)
      local c = T.randn(5, 3)
      same(T.addmm(c, a, b, { beta = 0.5, alpha = 2 }), T.addmm(c:to(d), ad, bd, { beta = 0.5, alpha = 2 }), 1e-4)
      same(a:half():matmul(b:half()), ad:half():matmul(bd:half()), 1e-2)
    end)
    on(dev, "reductions over all and over some dims, strided inputs, every kind", function(d)
      local x = T.randn(6, 5, 4)
      local xs = x:transpose(1, 3)            -- (4, 5, 6), not contiguous
      local xd, xsd = x:to(d), x:to(d):transpose(1, 3)
      same(x:sum(), xd:sum(), 1e-4)
      same(x:sum(2), xd:sum(2), 1e-5)
      same(xs:sum({ 1, 3 }, { keepdim = true }), xsd:sum({ 1, 3 }, { keepdim = true }), 1e-5)
      same(x:mean(3), xd:mean(3), 1e-5)
      same(x:prod(1), xd:prod(1), 1e-4)
      same(x:amax(2), xd:amax(2))
      same(xs:amin(3), xsd:amin(3))
      same(x:var(2), xd:var(2), 1e-5)
      same(x:std(1, { correction = 0 }), xd:std(1, { correction = 0 }), 1e-5)
      same(x:norm(), xd:norm(), 1e-5)
      same(x:norm(1, 2), xd:norm(1, 2), 1e-5)
      same(x:gt(0):all(3), xd:gt(0):all(3))
      same(x:gt(0):any(1), xd:gt(0):any(1))
      same(x:gt(0.5):count_nonzero(2), xd:gt(0.5):count_nonzero(2))
      local i = T.arange(1, 25):view(4, 6)
      same(i:sum(1), i:to(d):sum(1))
      same(i:prod(2), i:to(d):prod(2))
      local n = T.tensor { 1, 0 / 0, 3 }
      same(n:nansum(), n:to(d):nansum(), 1e-6)
      same(n:amax(), n:to(d):amax(), 0)     -- NaN propagates (allclose with equal_nan)
      same(T.zeros(0, 3):sum(1), T.zeros(0, 3, { device = d }):sum(1))
      -- few outputs over many inputs: the device splits each output's
      -- inputs across blocks (cuda/kernels.cu reduce_part_kernel)
      local big = T.randn(3, 200003, { dtype = T.float64 })
      local bd = big:to(d)
      same(big:sum(), bd:sum(), 1e-9)
      same(big:sum(2), bd:sum(2), 1e-9)
      same(big:mean(2), bd:mean(2), 1e-12)
      same(big:var(2), bd:var(2), 1e-12)
      same(big:std(), bd:std(), 1e-12)
      same(big:amax(2), bd:amax(2))
      same(big:norm(3, 2), bd:norm(3, 2), 1e-12)
      same(big:gt(0):sum(2), bd:gt(0):sum(2))
      same(big:t():sum(1), bd:t():sum(1), 1e-9)      -- strided inputs
    end)
    on(dev, "lane ops: max/min with indices, softmax, log_softmax, cumulative sums and extremes", function(d)
      local x = T.tensor { { 3, 1, 3, -2 }, { 0 / 0, 5, 0 / 0, 5 }, { -1, -1, 4, 4 } }
      local xd = x:to(d)
      local v, i = xd:max(2)
      same(T.tensor { 3, 0 / 0, 4 }, v, 0)            -- NaN is the max (allclose, equal_nan)
      same(T.tensor { 1, 1, 3 }, i)                   -- the first extreme wins (1-based)
      local mv, mi = xd:min(2)
      same(T.tensor { -2, 0 / 0, -1 }, mv, 0)
      same(T.tensor { 4, 1, 1 }, mi)
      same(T.tensor { 2, 1, 2 }, T.tensor { { 1, 9, 2 }, { 7, 0, 8 } }:to(d):argmax(1))
      local y = T.tensor { { 1, 2, 3 }, { 0, 0, 0 }, { 1000, 1000, -1 / 0 } }
      local yd = y:to(d)
      local e = math.exp
      local s1 = e(1) + e(2) + e(3)
      same(T.tensor { { e(1) / s1, e(2) / s1, e(3) / s1 }, { 1 / 3, 1 / 3, 1 / 3 }, { 0.5, 0.5, 0 } },
        yd:softmax(2), 1e-6)
      same(T.tensor { { 1 - math.log(s1), 2 - math.log(s1), 3 - math.log(s1) } },
        yd:narrow(1, 1, 1):log_softmax(2), 1e-5)
      local z = T.randn(5, 7, 3)
      same(z:softmax(2), z:to(d):softmax(2), 1e-6)                       -- a strided lane
      same(z:transpose(1, 3):log_softmax(1), z:to(d):transpose(1, 3):log_softmax(1), 1e-5)
      same(z:double():softmax(3), z:double():to(d):softmax(3), 1e-12)
      same(T.tensor { { 1, 3, 6 }, { 4, 9, 15 } }, T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }:to(d):cumsum(2))
      same(T.tensor { { 1, 2, 3 }, { 4, 10, 18 } }, T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }:to(d):cumprod(1))
      same(z:cumsum(1), z:to(d):cumsum(1), 1e-5)
      -- few long lanes: a block per lane (cuda/kernels.cu lane_scan_block_kernel)
      local long = T.randn(3, 10007, { dtype = T.float64 })
      same(long:cumsum(2), long:to(d):cumsum(2), 1e-9)
      same(long:t():cumsum(1), long:to(d):t():cumsum(1), 1e-9)   -- strided lanes
      local near1 = T.rand(2, 9001, { dtype = T.float64 }):mul(1e-3):add(1)
      same(near1:cumprod(2), near1:to(d):cumprod(2), 1e-9)
      local ints = T.randint(-1000, 1000, { 2, 20000 })
      same(ints:cumsum(2), ints:to(d):cumsum(2))                   -- exact
      same(ints:cumprod(2), ints:to(d):cumprod(2))                 -- wraps modulo 2^64, exact
      local c = T.tensor { 1, 3, 2, 3, 0 / 0, 5 }
      local cv, ci = c:to(d):cummax(1)
      same(T.tensor { 1, 3, 3, 3, 0 / 0, 0 / 0 }, cv, 0)
      same(T.tensor { 1, 2, 2, 4, 5, 5 }, ci)        -- the last of equal values; NaN stays
      local nv, ni = T.tensor { 2, 1, 1, 4 }:to(d):cummin(1)
      same(T.tensor { 2, 1, 1, 1 }, nv)
      same(T.tensor { 1, 2, 3, 3 }, ni)
      -- cummax/cummin of few long lanes: a block per lane (lane_ext_block_kernel):
      -- ties (the last of equals) and NaN (the last NaN) as the serial scan
      local tied = T.randint(0, 50, { 3, 10007 }):double()
      tied[2][5000] = 0 / 0
      tied[2][7000] = 0 / 0
      for _, f in ipairs { "cummax", "cummin" } do
        local wv, wi = tied[f](tied, 2)
        local gv, gi = tied:to(d)[f](tied:to(d), 2)
        same(wv, gv, 0)
        same(wi, gi)
        wv, wi = tied:t()[f](tied:t(), 1)                       -- strided lanes
        gv, gi = tied:to(d):t()[f](tied:to(d):t(), 1)
        same(wv, gv, 0)
        same(wi, gi)
        local iv, ii = ints[f](ints, 2)
        local jv, ji = ints:to(d)[f](ints:to(d), 2)
        same(iv, jv)
        same(ii, ji)
      end
      same(T.tensor { math.log(e(1) + e(2)), math.log(2) + 1000 },
        T.tensor { { 1, 2 }, { 1000, 1000 } }:to(d):logsumexp(2), 1e-6)
      same(z:logsumexp({ 1, 3 }), z:to(d):logsumexp({ 1, 3 }), 1e-5)
    end)
    on(dev, "comparisons: equal, isclose, allclose", function(d)
      local a = T.tensor { 1, 2, 0 / 0, 1 / 0 }
      local b = T.tensor { 1, 2.0001, 0 / 0, 1 / 0 }
      local ad, bd = a:to(d), b:to(d)
      assert.is_true(T.equal(ad, ad:clone()) == false)  -- NaN equals nothing
      assert.is_true(T.equal(ad:narrow(1, 1, 2), T.tensor { 1, 2 }:to(d)))
      assert.is_false(T.equal(ad:narrow(1, 1, 2), bd:narrow(1, 1, 2)))
      same(T.tensor { true, true, false, true }, T.isclose(ad, bd, 1e-3, 0))
      same(T.tensor { true, true, true, true }, T.isclose(ad, bd, 1e-3, 0, true))
      same(T.tensor { true, false, false, true }, T.isclose(ad, bd, 1e-6, 0))
      assert.is_true(T.allclose(ad, bd, 1e-3, 0, true))
      assert.is_false(T.allclose(ad, bd, 1e-6, 0, true))
    end)
    on(dev, "random numbers: the CPU's Philox streams, bit for bit where the arithmetic is exact", function(d)
      local function twice(f)
        T.manual_seed(1234)
        local a = f("cpu")
        T.manual_seed(1234)
        return a, f(d)
      end
      for _, dt in ipairs { T.float32, T.float64, T.float16, T.bfloat16 } do
        local a, b = twice(function(dv) return T.rand(1001, { dtype = dt, device = dv }) end)
        same(a, b)
        assert.is_true(a:min():item() >= 0 and a:max():item() < 1)
        -- from + u * (to - from) rounds twice on both (no FMA on the device)
        local c, e = twice(function(dv) return T.empty(1001, { dtype = dt, device = dv }):uniform_(2, 5) end)
        same(c, e)
      end
      local a, b = twice(function(dv) return T.randint(-5, 7, { 3, 333 }, { device = dv }) end)
      same(a, b)
      assert.equal(-5, a:min():item())
      assert.equal(6, a:max():item())
      a, b = twice(function(dv) return T.randn(4, 257, { device = dv, dtype = T.float64 }) end)
      same(a, b, 1e-12)                               -- log/sin/cos of the device
      a, b = twice(function(dv) return T.empty(999, { device = dv }):exponential_(2) end)
      same(a, b, 1e-6)
      a, b = twice(function(dv) return T.empty(999, { device = dv }):bernoulli_(0.3) end)
      same(a, b)
      local p = T.linspace(0, 1, 500):double()
      a, b = twice(function(dv) return T.bernoulli(p:to(dv)) end)
      same(a, b)
      a, b = twice(function(dv) return T.randperm(1000, { device = dv }) end)
      same(a, b)
      same(T.arange(1, 1001), (a:sort()))              -- a permutation of 1..n
      assert.has_error(function() T.bernoulli(T.tensor { 0.5, 1.5 }:double():to(d)) end)
      -- multinomial: the CPU's algorithms at the same counters
      local probs = T.rand(5, 40, { dtype = T.float64 })
      probs[{ 2, { 3, 40 } }] = 0                      -- a row with two categories
      a, b = twice(function(dv) return T.multinomial(probs:to(dv), 30, true) end)
      same(a, b)
      a, b = twice(function(dv) return T.multinomial(probs:float():to(dv), 2) end)
      same(a, b)
      a, b = twice(function(dv) return T.multinomial(probs[1]:to(dv), 40) end)
      same(a, b)
      same(T.arange(1, 41), (a:sort()))                -- without replacement: all of them
      assert.has_error(function() T.multinomial(T.tensor { 0.5, -1 }:to(d), 1) end,
        "multinomial: probability tensor contains either `inf`, `nan` or element < 0")
      assert.has_error(function() T.multinomial(T.tensor { { 1, 1 }, { 0, 0 } }:double():to(d), 1) end,
        "multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    end)
    on(dev, "selecting and indexing: index_select, gather, scatter and its reductions, masked_fill, t[key]", function(d)
      local x = T.tensor { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }
      local xd = x:to(d)
      same(T.tensor { { 7, 8, 9 }, { 1, 2, 3 }, { 7, 8, 9 } }, xd:index_select(1, T.tensor { 3, 1, -1 }:to(d)))
      same(T.tensor { { 3, 1 }, { 6, 4 }, { 9, 7 } }, xd:index_select(2, T.tensor { 3, 1 }:to(d)))
      same(T.tensor { { 2.5, 1.5 } }:double(), T.tensor { { 1.5, 2.5 } }:double():to(d):index_select(2, T.tensor { 2, 1 }:to(d)))
      same(T.tensor { { 3, 1 }, { 5, 5 }, { 7, 9 } }, xd:gather(2, T.tensor { { 3, 1 }, { 2, 2 }, { 1, 3 } }:to(d)))
      local z = T.zeros(3, 3, { device = d })
      same(T.tensor { { 0, 0, 1 }, { 0, 2, 0 }, { 3, 0, 0 } }:float(),
        z:scatter(2, T.tensor { { 3 }, { 2 }, { 1 } }:to(d), T.tensor { { 1 }, { 2 }, { 3 } }:float():to(d)))
      local idx = T.tensor { 1, 2, 1, 1, 3 }:to(d)
      local src = T.tensor { 1, 2, 3, 4, 5 }
      same(T.tensor { 8, 2, 5 }, T.zeros(3, { dtype = T.int64, device = d }):scatter_add(1, idx, src:to(d)))
      same(T.tensor { 8, 2, 5 }:float(), T.zeros(3, { device = d }):scatter_add(1, idx, src:float():to(d)))
      same(T.tensor { 12, 2, 5 }, T.ones(3, { dtype = T.int64, device = d }):scatter_reduce(1, idx, src:to(d), "prod"))
      same(T.tensor { 4, 2, 5 }, T.zeros(3, { dtype = T.int64, device = d }):scatter_reduce(1, idx, src:to(d), "amax"))
      same(T.tensor { 1, 2, 5 }, T.full({ 3 }, 10, { dtype = T.int64, device = d }):scatter_reduce(1, idx, src:to(d), "amin"))
      same(T.tensor { 2, 1, 2 }, T.zeros(3, { dtype = T.int64, device = d }):scatter_reduce(1, idx, src:to(d), "mean"))
      same(T.tensor { 8, 2, 5 }:to(T.int8), T.zeros(3, { dtype = T.int8, device = d }):scatter_add(1, idx, src:to(T.int8):to(d)))
      same(T.tensor { 8, 2, 5 }:half(), T.zeros(3, { dtype = T.float16, device = d }):scatter_add(1, idx, src:half():to(d)))
      local a = T.zeros(3, 2, { device = d })
      a:index_add_(1, T.tensor { 1, 3, 1 }:to(d), T.ones(3, 2, { device = d }), { alpha = 2 })
      same(T.tensor { { 4, 4 }, { 0, 0 }, { 2, 2 } }:float(), a)
      same(T.tensor { { 1, -1, 3 }, { -1, 5, -1 }, { 7, -1, 9 } },
        xd:masked_fill(T.tensor { { false, true, false }, { true, false, true }, { false, true, false } }:to(d), -1))
      same(T.tensor { 4, 5, 6 }, xd[2])
      same(T.tensor { { 7, 8, 9 }, { 1, 2, 3 } }, xd[{ T.tensor { 3, 1 }:to(d) }])
      same(T.tensor { 2, 9 }, xd[{ T.tensor { 1, 3 }:to(d), T.tensor { 2, 3 }:to(d) }])
      same(T.tensor { { 2, 3 }, { 8, 9 } }, xd[{ T.tensor { 1, 3 }:to(d), { 2, 3 } }])
      local w = x:clone():to(d)
      w[{ T.tensor { 3, 1 }:to(d) }] = T.tensor { 0, -1, 0 }:to(d)
      same(T.tensor { { 0, -1, 0 }, { 4, 5, 6 }, { 0, -1, 0 } }, w)
      local acc = T.zeros(3, { device = d })
      acc:index_put_({ T.tensor { 1, 1, 3, 1 }:to(d) }, T.tensor { 1, 2, 3, 4 }:float():to(d), true)
      same(T.tensor { 7, 0, 3 }:float(), acc)
      local ok, err = pcall(function() return xd:index_select(1, T.tensor { 1, 4 }:to(d)) end)
      assert.is_false(ok)
      assert.matches("4", tostring(err))
      ok, err = pcall(function() return xd[{ T.tensor { 0 }:to(d) }] end)
      assert.is_false(ok)
    end)
    on(dev, "masks and repeats: masked_select, t[mask], masked_scatter_, nonzero, repeat_interleave", function(d)
      local x = T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
      local m = T.tensor { { true, false, true }, { false, true, false } }
      local xd, md = x:to(d), m:to(d)
      same(T.tensor { 1, 3, 5 }, xd:masked_select(md))
      same(T.tensor { 1, 3, 5 }, xd[md])
      same(T.tensor { { 1, 3 }, { 4, 6 } }, xd:t():contiguous():t()[{ {}, T.tensor { true, false, true }:to(d) }])
      local w = x:clone():to(d)
      w[md] = 0
      same(T.tensor { { 0, 2, 0 }, { 4, 0, 6 } }, w)
      local ms = x:clone():to(d)
      ms:masked_scatter_(md, T.tensor { 10, 20, 30, 40 }:to(d))
      same(T.tensor { { 10, 2, 20 }, { 4, 30, 6 } }, ms)
      same(T.tensor { { 1, 1 }, { 1, 3 }, { 2, 2 } }, md:nonzero())
      same(T.zeros(0, 2, { dtype = T.int64 }), T.zeros(2, 3, { dtype = T.bool, device = d }):nonzero())
      local big = T.arange(600000):remainder(7):eq(0)     -- more than one run of the mask
      local bd = big:to(d)
      assert.equal(85715, bd:sum():item())
      same(T.arange(600000):masked_select(big), T.arange(600000):to(d):masked_select(bd))
      same(big:nonzero(), bd:nonzero())
      same(T.tensor { 1, 1, 3, 3, 3 }, T.tensor { 1, 2, 3 }:to(d):repeat_interleave(T.tensor { 2, 0, 3 }:to(d)))
      same(T.tensor { { 1, 2 }, { 1, 2 }, { 3, 4 }, { 3, 4 } },
        T.tensor { { 1, 2 }, { 3, 4 } }:to(d):repeat_interleave(2, 1))
      assert.has_error(function() T.tensor { 1, 2 }:to(d):repeat_interleave(T.tensor { 1, -1 }:to(d)) end)
    end)
    on(dev, "sorting: sort (stable, NaN last), topk, kthvalue, median, nanmedian, unique", function(d)
      local x = T.tensor { { 3, 1, 0 / 0, 1, -0.0 }, { 2, 2, -1, 5, 0 } }
      local v, i = x:to(d):sort(2)
      same(T.tensor { { -0.0, 1, 1, 3, 0 / 0 }, { -1, 0, 2, 2, 5 } }, v, 0)
      same(T.tensor { { 5, 2, 4, 1, 3 }, { 3, 5, 1, 2, 4 } }, i)   -- equal values keep their order
      local dv, di = x:to(d):sort(2, true)
      same(T.tensor { { 0 / 0, 3, 1, 1, -0.0 }, { 5, 2, 2, 0, -1 } }, dv, 0)
      same(T.tensor { { 3, 1, 2, 4, 5 }, { 4, 1, 2, 5, 3 } }, di)
      local iv, ii = T.tensor { 5, -3, 7, 7, 0 }:to(d):sort()
      same(T.tensor { -3, 0, 5, 7, 7 }, iv)
      same(T.tensor { 2, 5, 1, 3, 4 }, ii)
      local tv, ti = T.tensor { { 1, 9, 3, 7 }, { 8, 2, 6, 4 } }:to(d):topk(2)
      same(T.tensor { { 9, 7 }, { 8, 6 } }, tv)
      same(T.tensor { { 2, 4 }, { 1, 3 } }, ti)
      local z = T.randn(6, 50)
      local zs, zi = z:sort(2)
      local zsd, zid = z:to(d):sort(2)
      same(zs, zsd)
      same(zi, zid)
      local kv, ki = T.tensor { 4, 1, 3, 2 }:to(d):kthvalue(2)
      assert.equal(2, back(kv):item())
      assert.equal(4, back(ki):item())
      same(T.tensor { 2, 0 / 0 }, (T.tensor { { 1, 3, 2, 4 }, { 1, 0 / 0, 2, 3 } }:to(d):median(2)), 0)
      same(T.tensor { 2, 2 }:float(), (T.tensor { { 1, 3, 2, 4 }, { 1, 0 / 0, 2, 3 } }:to(d):nanmedian(2)))
      local u, inv, cnt = T.tensor { 3, 1, 3, 2, 1, 3 }:to(d):unique({ return_inverse = true, return_counts = true })
      same(T.tensor { 1, 2, 3 }, u)
      same(T.tensor { 3, 1, 3, 2, 1, 3 }, inv)
      same(T.tensor { 2, 1, 3 }, cnt)
      same(T.tensor { -1, 0, 2 }:float(), T.tensor { 0, -0.0, 2, -1, 2 }:float():to(d):unique())
    end)
    on(dev, "elementwise layer two: integer and float division, pow, shifts, rounding, math functions", function(d)
      local a = T.tensor { 7, -7, 7, -7, 0 }
      local b = T.tensor { 2, 2, -2, -2, 3 }
      local ad, bd = a:to(d), b:to(d)
      same(T.tensor { 3, -4, -4, 3, 0 }, T.floor_divide(ad, bd))
      same(T.tensor { 3, -3, -3, 3, 0 }, T.div(ad, bd, { rounding_mode = "trunc" }))
      same(T.tensor { 1, 1, -1, -1, 0 }, T.remainder(ad, bd))
      same(T.tensor { 1, -1, 1, -1, 0 }, T.fmod(ad, bd))
      same(T.tensor { 49, 49, 0, 0, 0 }, T.pow(ad, T.tensor { 2, 2, -1, -1, 5 }:to(d)))
      same(T.tensor { 28, -28, 0, 0, 0 }, T.bitwise_left_shift(ad, T.tensor { 2, 2, -1, 64, 1 }:to(d)))
      same(T.tensor { 1, -2, 0, -1, 0 }, T.bitwise_right_shift(ad, T.tensor { 2, 2, 64, 64, 1 }:to(d)))
      same(T.tensor { 1, -1, 1, -1, 0 }, ad:sign())
      same(T.tensor { 1, 1, 1, 1, 3 }, T.gcd(ad, bd))
      same(T.tensor { 14, 14, 14, 14, 0 }, T.lcm(ad, bd))
      local ok, err = pcall(function() return T.floor_divide(ad, T.tensor { 1, 0, 1, 1, 1 }:to(d)) end)
      assert.is_false(ok)
      assert.matches("ZeroDivision", tostring(err))
      local f = T.tensor { -2.5, -0.5, 0.5, 1.5, 2.25 }
      local fd = f:to(d)
      same(T.tensor { -2, -0.0, 0, 2, 2 }:float(), fd:round())   -- half to even
      same(T.tensor { -2.5, -0.5, 0.5, 1.5, 2.2 }:float(), fd:round({ decimals = 1 }), 1e-6)
      same(T.tensor { -3, -1, 0, 1, 2 }:float(), fd:floor())
      same(T.tensor { -2, -0.0, 1, 2, 3 }:float(), fd:ceil())
      same(T.tensor { -0.5, -0.5, 0.5, 0.5, 0.25 }:float(), fd:frac())
      same(T.tensor { 1, 0, 0, 0, 0 }:float(), T.remainder(fd, T.tensor { 1.75, 0.5, 0.5, 1.5, 2.25 }:to(d)), 1e-6)
      for _, name in ipairs { "exp2", "expm1", "log1p", "tan", "atan", "sinh", "cosh", "asinh", "erf", "erfc", "trunc" } do
        same(f[name](f), fd[name](fd), 1e-5)
      end
      local u = T.tensor { 0.1, 0.5, 0.9 }
      for _, name in ipairs { "asin", "acos", "atanh", "log2", "log10" } do
        same(u[name](u), u:to(d)[name](u:to(d)), 1e-5)
      end
      same((u + 1):acosh(), (u + 1):to(d):acosh(), 1e-5)
      same(T.nn.functional.gelu(f), T.nn.functional.gelu(fd), 1e-5)
      same(T.nn.functional.gelu(f, { approximate = "tanh" }), T.nn.functional.gelu(fd, { approximate = "tanh" }), 1e-5)
      same(T.nn.functional.silu(f), T.nn.functional.silu(fd), 1e-5)
      same(T.nn.functional.softplus(f, { beta = 2, threshold = 3 }), T.nn.functional.softplus(fd, { beta = 2, threshold = 3 }), 1e-5)
      same(T.atan2(f, f:flip(1)), T.atan2(fd, fd:flip(1)), 1e-5)
      same(T.hypot(f, f:flip(1)), T.hypot(fd, fd:flip(1)), 1e-5)
      same(T.tensor { 0, 5, 9 }:float(), T.tensor { 0 / 0, 1 / 0, -1 / 0 }:to(d):nan_to_num({ nan = 0, posinf = 5, neginf = 9 }))
      same(T.tensor { false, true, false }, T.tensor { 0 / 0, 1 / 0, 1 }:to(d):isinf())
      same(T.tensor { false, false, true }, T.tensor { 0 / 0, 1 / 0, 1 }:to(d):isfinite())
      same(T.tensor { 0.5, 1, 0 }:float(), T.heaviside(T.tensor { 0, 2, -1 }:float():to(d), T.tensor { 0.5 }:to(d)))
      same(T.tensor { 0, 2 * math.log(3) }:float(), T.xlogy(T.tensor { 0, 2 }:float():to(d), T.tensor { 0, 3 }:float():to(d)), 1e-6)
    end)
    on(dev, "special functions: the CPU's series on the device (cpu/special_impl.h), float32 and float64", function(d)
      for _, dt in ipairs { T.float32, T.float64 } do
        local tol = dt == T.float64 and 1e-12 or 1e-6
        local x = T.tensor({ -7.5, -2.25, -0.5, 0.25, 1, 3.5, 12, 40 }, { dtype = dt })
        local u = T.tensor({ 1e-9, 0.01, 0.2, 0.5, 0.75, 0.99, 1, 0 }, { dtype = dt })
        local xd, ud = x:to(d), u:to(d)
        for _, name in ipairs { "lgamma", "digamma", "sinc", "logaddexp" } do
          local f = T[name] or T.special[name]
          if name == "logaddexp" then same(f(x, u), f(xd, ud), tol)
          else same(f(x), f(xd), tol) end
        end
        for _, name in ipairs { "i0", "i0e", "i1", "i1e", "ndtr", "log_ndtr", "entr" } do
          same(T.special[name](x), T.special[name](xd), tol)
        end
        same(T.special.ndtri(u), T.special.ndtri(ud), tol)
        same(T.special.erfinv(u * 2 - 1), T.special.erfinv(ud * 2 - 1), tol)
        same(T.special.logit(u), T.special.logit(ud), tol)
        same(T.special.logit(u, { eps = 1e-3 }), T.special.logit(ud, { eps = 1e-3 }), tol)
        same(T.polygamma(3, x:abs() + 0.5), T.polygamma(3, xd:abs() + 0.5), tol)
        same(T.special.zeta(x:abs() + 1.5, u + 0.25), T.special.zeta(xd:abs() + 1.5, ud + 0.25), tol)
        same(T.logaddexp2(x, u), T.logaddexp2(xd, ud), tol)
      end
    end)
    on(dev, "optimizers: every optimizer's steps on the device give the CPU's values", function(d)
      local configs = {
        { "SGD", { lr = 0.1 } },
        { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 } },
        { "SGD", { lr = 0.1, momentum = 0.9, dampening = 0.5, maximize = true } },
        { "Adam", { lr = 0.01 } },
        { "Adam", { lr = 0.01, weight_decay = 0.1, amsgrad = true } },
        { "AdamW", { lr = 0.01, weight_decay = 0.1 } },
        { "RMSprop", { lr = 0.01 } },
        { "RMSprop", { lr = 0.01, momentum = 0.9, centered = true, weight_decay = 0.1 } },
        { "Adagrad", { lr = 0.1, weight_decay = 0.1, lr_decay = 0.01 } },
        { "Adadelta", { lr = 0.5, weight_decay = 0.1, maximize = true } },
        { "Adamax", { lr = 0.02, weight_decay = 0.1 } },
        { "NAdam", { lr = 0.02, weight_decay = 0.1 } },
        { "RAdam", { lr = 0.02 } },
        { "ASGD", { lr = 0.05, weight_decay = 0.1, t0 = 1 } },
        { "Rprop", { lr = 0.05 } },
      }
      for _, c in ipairs(configs) do
        for _, dt in ipairs { T.float32, T.float64 } do
          local function run(dv)
            T.manual_seed(5)
            local p = T.randn(4, 3, { dtype = dt }):to(dv):requires_grad_()
            local w = T.linspace(-1, 1, 12, { dtype = dt }):view(4, 3):to(dv)
            local opt = T.optim[c[1]]({ p }, c[2])
            for _ = 1, 7 do -- RAdam rectifies from its 6th step
              opt:zero_grad()
              local loss = (p * p * w):sum()
              loss:backward()
              opt:step()
            end
            return p:detach()
          end
          same(run("cpu"), run(d), dt == T.float64 and 1e-12 or 1e-6)
        end
      end
      -- one step by hand: p = 1, grad 2, lr 0.1, momentum 0.9 (first step: buf = grad)
      local q = T.ones(2, { device = d, requires_grad = true })
      local opt = T.optim.SGD({ q }, { lr = 0.1, momentum = 0.9 })
      local loss = (q * 2):sum()
      loss:backward()
      opt:step()
      same(T.tensor { 0.8, 0.8 }:float(), q:detach(), 1e-7)
    end)
    on(dev, "nn: max/avg pooling and layer norm with their gradients, the id check", function(d)
      local F = T.nn.functional
      local x = T.tensor { { { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 }, { 13, 14, 15, 16 } } } }:float()
      local xd = x:to(d)
      same(T.tensor { { { { 6, 8 }, { 14, 16 } } } }:float(), F.max_pool2d(xd, 2))
      same(T.tensor { { { { 3.5, 5.5 }, { 11.5, 13.5 } } } }:float(), F.avg_pool2d(xd, 2))
      local z = T.randn(2, 3, 7, 6, { dtype = T.float64 })
      for _, o in ipairs { { 3, { stride = 2, padding = 1 } }, { 2, { stride = 1, dilation = 2 } } } do
        local a = z:clone():requires_grad_()
        local b = z:clone():to(d):requires_grad_()
        local ya, yb = F.max_pool2d(a, o[1], o[2]), F.max_pool2d(b, o[1], o[2])
        same(ya:detach(), yb:detach(), 1e-12)
        ya:sum():backward()
        yb:sum():backward()
        same(a.grad, b.grad, 1e-12)
      end
      for _, o in ipairs { { 3, { stride = 2, padding = 1 } }, { 3, { stride = 2, padding = 1, count_include_pad = false } },
                           { 2, { divisor_override = 3 } } } do
        local a = z:clone():requires_grad_()
        local b = z:clone():to(d):requires_grad_()
        local ya, yb = F.avg_pool2d(a, o[1], o[2]), F.avg_pool2d(b, o[1], o[2])
        same(ya:detach(), yb:detach(), 1e-12)
        ya:sum():backward()
        yb:sum():backward()
        same(a.grad, b.grad, 1e-12)
      end
      local v = T.randn(5, 8, { dtype = T.float64 })
      local w, bb = T.randn(8, { dtype = T.float64 }), T.randn(8, { dtype = T.float64 })
      local va, wa, ba = v:clone():requires_grad_(), w:clone():requires_grad_(), bb:clone():requires_grad_()
      local vd, wd, bd = v:clone():to(d):requires_grad_(), w:clone():to(d):requires_grad_(),
        bb:clone():to(d):requires_grad_()
      local la, lb = F.layer_norm(va, { 8 }, wa, ba), F.layer_norm(vd, { 8 }, wd, bd)
      same(la:detach(), lb:detach(), 1e-12)
      assert.is_true(math.abs(back(lb:detach()):sub(bb):div(w):mean(2):abs():max():item()) < 1e-12)  -- rows of mean 0
      local g = T.randn(5, 8, { dtype = T.float64 })
      la:backward(g)
      lb:backward(g:to(d))
      same(va.grad, vd.grad, 1e-12)
      same(wa.grad, wd.grad, 1e-12)
      same(ba.grad, bd.grad, 1e-12)
      local ok, err = pcall(function() return F.nll_loss(T.randn(3, 4):to(d), T.tensor { 1, 5, 2 }:to(d)) end)
      assert.is_false(ok)
      assert.matches("5", tostring(err))
    end)
    on(dev, "nn: conv2d forward and both gradients (im2col + cuBLAS), groups, stride, padding, dilation", function(d)
      local F = T.nn.functional
      local one = T.ones(1, 1, 3, 3)
      same(T.tensor { { { { 4, 6, 4 }, { 6, 9, 6 }, { 4, 6, 4 } } } }:float(),
        F.conv2d(one:to(d), T.ones(1, 1, 3, 3):to(d), nil, { padding = 1 }))
      T.manual_seed(11)
      local cases = {
        { x = { 2, 4, 9, 8 }, w = { 6, 4, 3, 3 }, o = { stride = 2, padding = 1 } },
        { x = { 3, 4, 7, 7 }, w = { 4, 2, 2, 3 }, o = { groups = 2, dilation = 2, padding = { 1, 2 } } },
        { x = { 1, 3, 5, 6 }, w = { 2, 3, 1, 1 }, o = {} },
      }
      for _, c in ipairs(cases) do
        local x = T.randn(c.x, { dtype = T.float64 })
        local w = T.randn(c.w, { dtype = T.float64 })
        local bias = T.randn(c.w[1], { dtype = T.float64 })
        local xa, wa, ba = x:clone():requires_grad_(), w:clone():requires_grad_(), bias:clone():requires_grad_()
        local xb, wb, bb = x:clone():to(d):requires_grad_(), w:clone():to(d):requires_grad_(),
          bias:clone():to(d):requires_grad_()
        local ya, yb = F.conv2d(xa, wa, ba, c.o), F.conv2d(xb, wb, bb, c.o)
        same(ya:detach(), yb:detach(), 1e-10)
        local g = T.randn(ya.shape, { dtype = T.float64 })
        ya:backward(g)
        yb:backward(g:to(d))
        same(xa.grad, xb.grad, 1e-10)
        same(wa.grad, wb.grad, 1e-10)
        same(ba.grad, bb.grad, 1e-10)
      end
    end)
    on(dev, "nn: batch norm in training (running statistics move) and evaluation, with gradients", function(d)
      local F = T.nn.functional
      local x = T.tensor { { { 1, 3 } }, { { 5, 7 } } }:double()      -- N 2, C 1, S 2: mean 4, var 5
      local rm, rv = T.zeros(1, { dtype = T.float64 }):to(d), T.ones(1, { dtype = T.float64 }):to(d)
      local y = F.batch_norm(x:to(d), rm, rv, { training = true, momentum = 0.5, eps = 0 })
      same(T.tensor { { { -3, -1 } }, { { 1, 3 } } }:double():div(math.sqrt(5)), y, 1e-12)
      same(T.tensor { 2 }:double(), rm, 1e-12)
      same(T.tensor({ 0.5 + 0.5 * 20 / 3 }, { dtype = T.float64 }), rv, 1e-12)   -- the unbiased variance
      local z = T.randn(4, 3, 5, { dtype = T.float64 })
      for _, training in ipairs { true, false } do
        local w, b = T.randn(3, { dtype = T.float64 }), T.randn(3, { dtype = T.float64 })
        local ra, va = T.randn(3, { dtype = T.float64 }), T.rand(3, { dtype = T.float64 }):add(0.5)
        local za, wa, ba = z:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
        local zb, wb, bb = z:clone():to(d):requires_grad_(), w:clone():to(d):requires_grad_(),
          b:clone():to(d):requires_grad_()
        local rb, vb = ra:clone():to(d), va:clone():to(d)
        local ya = F.batch_norm(za, ra, va, { weight = wa, bias = ba, training = training })
        local yb = F.batch_norm(zb, rb, vb, { weight = wb, bias = bb, training = training })
        same(ya:detach(), yb:detach(), 1e-12)
        same(ra, rb, 1e-12)
        same(va, vb, 1e-12)
        local g = T.randn(4, 3, 5, { dtype = T.float64 })
        ya:backward(g)
        yb:backward(g:to(d))
        same(za.grad, zb.grad, 1e-12)
        same(wa.grad, wb.grad, 1e-12)
        same(ba.grad, bb.grad, 1e-12)
      end
    end)
    on(dev, "nn: the losses (cross_entropy, nll_loss, mse, l1, binary cross-entropy) and their gradients", function(d)
      local F = T.nn.functional
      local x = T.tensor { { 0, 0 } }:double()
      same(T.tensor(math.log(2), { dtype = T.float64 }), F.cross_entropy(x:to(d), T.tensor { 1 }:to(d)), 1e-12)
      local logits = T.randn(6, 4, 3, { dtype = T.float64 })
      local ids = T.tensor { { 1, 2, 3 }, { 4, 4, 1 }, { 2, 2, 2 }, { 3, 1, 4 }, { 1, 1, 1 }, { 4, 3, 2 } }
      local wt = T.tensor({ 0.5, 1, 2, 1.5 }, { dtype = T.float64 })
      local probs = T.randn(6, 4, 3, { dtype = T.float64 }):softmax(2)
      local cases = {
        function(a, t, w) return F.cross_entropy(a, t) end,
        function(a, t, w) return F.cross_entropy(a, t, { weight = w, ignore_index = 2 }) end,
        function(a, t, w) return F.cross_entropy(a, t, { label_smoothing = 0.2, reduction = "sum" }) end,
        function(a, t, w) return F.cross_entropy(a, t, { reduction = "none" }):sum() end,
        function(a, t, w, p) return F.cross_entropy(a, p) end,
        function(a, t, w) return F.nll_loss(a:log_softmax(2), t, { weight = w }) end,
      }
      for _, f in ipairs(cases) do
        local aa, ab = logits:clone():requires_grad_(), logits:clone():to(d):requires_grad_()
        local la = f(aa, ids, wt, probs)
        local lb = f(ab, ids:to(d), wt:to(d), probs:to(d))
        same(la:detach(), lb:detach(), 1e-12)
        la:backward()
        lb:backward()
        same(aa.grad, ab.grad, 1e-12)
      end
      local u = T.rand(5, 3, { dtype = T.float64 }):mul(0.9):add(0.05)
      local t = T.rand(5, 3, { dtype = T.float64 })
      local pw = {
        function(a, b) return F.mse_loss(a, b) end,
        function(a, b) return F.l1_loss(a, b, { reduction = "sum" }) end,
        function(a, b) return F.binary_cross_entropy(a, b) end,
        function(a, b) return F.binary_cross_entropy_with_logits(a, b, { pos_weight = T.full({ 3 }, 2, { dtype = T.float64 }):to(b.device) }) end,
        function(a, b) return F.mse_loss(a, b, { reduction = "none" }):sum() end,
      }
      for _, f in ipairs(pw) do
        local aa, ab = u:clone():requires_grad_(), u:clone():to(d):requires_grad_()
        local la, lb = f(aa, t), f(ab, t:to(d))
        same(la:detach(), lb:detach(), 1e-12)
        la:backward()
        lb:backward()
        same(aa.grad, ab.grad, 1e-12)
      end
      assert.has_error(function() F.binary_cross_entropy(T.tensor { 0.5, 1.5 }:to(d), T.tensor { 0, 1 }:float():to(d)) end)
    end)
    on(dev, "nn: scaled_dot_product_attention (composed on cuda) gives the CPU's values, dropout's mask and gradients", function(d)
      local F = T.nn.functional
      for _, dt in ipairs { T.float32, T.float64 } do
        local tol = dt == T.float64 and 1e-10 or 1e-4
        local q0, k0, v0 = T.randn(2, 3, 6, 8, { dtype = dt }), T.randn(2, 3, 9, 8, { dtype = dt }),
          T.randn(2, 3, 9, 4, { dtype = dt })
        local mask = T.randn(6, 9, { dtype = dt })
        for _, o in ipairs { {}, { is_causal = true }, { attn_mask = mask }, { dropout_p = 0.25 } } do
          local function run(dv)
            local q, k, v = q0:to(dv):requires_grad_(), k0:to(dv):requires_grad_(), v0:to(dv):requires_grad_()
            local oo = {}
            for key, val in pairs(o) do oo[key] = T.is_tensor(val) and val:to(dv) or val end
            T.manual_seed(13)
            local y = F.scaled_dot_product_attention(q, k, v, oo)
            local g = T.autograd.grad({ (y * y):sum() }, { q, k, v })
            return y:detach(), g
          end
          local ya, ga = run("cpu")
          local yb, gb = run(d)
          same(ya, yb, tol)
          for i = 1, 3 do same(ga[i], gb[i], tol) end
        end
      end
    end)
    on(dev, "complex64/complex128: casts, fill, views, the complex ops, matmul and T.fft give the CPU's values", function(d)
      T.manual_seed(5)
      for _, cdt in ipairs { T.complex64, T.complex128 } do
        local rdt = cdt == T.complex64 and T.float32 or T.float64
        local tol = cdt == T.complex64 and 2e-5 or 1e-12
        local re, im = T.randn(4, 6, { dtype = rdt }), T.randn(4, 6, { dtype = rdt })
        local z0 = T.complex(re, im)
        local w0 = T.complex(T.randn(4, 6, { dtype = rdt }), T.randn(4, 6, { dtype = rdt }))
        local z, w = z0:to(d), w0:to(d)
        -- copies and casts (cpu/copy.c's rules), strided copies, fill
        same(z0, z)
        same(z0:t():contiguous(), z:t():contiguous())
        same(re:to(cdt), re:to(d):to(cdt))
        same(z0:to(rdt), z:to(rdt))
        same(z0:to(T.int32), z:to(T.int32))
        same(z0:to(T.complex64), z:to(T.complex64))
        same(z0:to(T.complex128), z:to(T.complex128))
        same(T.full({ 2, 3 }, -2.5, { dtype = cdt }), T.full({ 2, 3 }, -2.5, { dtype = cdt, device = d }))
        same(T.cat({ z0, w0 }, 2), T.cat({ z, w }, 2))
        same(z0:index_select(1, T.tensor { 3, 1 }), z:index_select(1, T.tensor({ 3, 1 }):to(d)))
        same(z0:flip(2), z:flip(2))
        -- the complex family's ops (thrust::complex against C99: tolerances)
        local ops = {
          function(a, b) return a + b end, function(a, b) return T.sub(a, b, { alpha = 2 }) end,
          function(a, b) return a * b end, function(a, b) return a / b end,
          function(a, b) return a:pow(b) end, function(a) return -a end,
          function(a) return a:abs() end, function(a) return a:angle() end,
          function(a) return a:conj() end, function(a) return a:sqrt() end,
          function(a) return a:reciprocal() end, function(a) return a:exp() end,
          function(a) return a:log() end, function(a) return a:sin() end,
          function(a) return a:cos() end, function(a) return a:tanh() end,
          function(a) return a:square() end, function(a) return a:sum(2) end,
          function(a, b) return a:eq(b) end, function(a) return a:ne(a:conj()) end,
          function(a) return a:asin() end, function(a) return a:acos() end,
          function(a) return a:atan() end, function(a) return a:asinh() end,
          function(a) return a:acosh() end, function(a) return a:atanh() end,
        }
        for _, f in ipairs(ops) do same(f(z0, w0), f(z, w), tol) end
        -- division's special values are C99's (libgcc's __divdc3), not
        -- thrust's NaN: 1/(0+0j) = inf+nanj, 1/(inf+0j) = 0
        local inf = math.huge
        local num = T.complex(T.tensor({ 1, 1, 1, 0 }, { dtype = rdt }), T.tensor({ 0, 0, 2, 0 }, { dtype = rdt }))
        local den = T.complex(T.tensor({ 0, inf, 0, 1 }, { dtype = rdt }), T.tensor({ 0, 0, 0, 0 }, { dtype = rdt }))
        same(num / den, num:to(d) / den:to(d), tol)
        same(den:reciprocal(), den:to(d):reciprocal(), tol)
        -- matmul on cuBLAS's complex GEMM
        same(z0:matmul(w0:t()), z:matmul(w:t()), tol * 10)
        -- T.fft on cuFFT: last dim (one batched plan), dim 1 (strided lanes),
        -- a prime length, every norm, real input at an odd offset
        local F = T.fft
        for _, norm in ipairs { "backward", "ortho", "forward" } do
          same(F.fft(z0, { norm = norm }), F.fft(z, { norm = norm }), tol * 10)
          same(F.ifft(z0, { dim = 1, norm = norm }), F.ifft(z, { dim = 1, norm = norm }), tol * 10)
          same(F.rfft(re, { norm = norm }), F.rfft(re:to(d), { norm = norm }), tol * 10)
          same(F.irfft(z0, { norm = norm }), F.irfft(z, { norm = norm }), tol * 10)
        end
        local p0 = T.randn(3, 7, { dtype = rdt })
        same(F.rfft(p0, { dim = 1 }), F.rfft(p0:to(d), { dim = 1 }), tol * 10)
        -- a middle dim with more outer than inner positions (the plan
        -- batches the outer lanes), and a real one (it loops over outer)
        local z3 = T.complex(T.randn(5, 3, 2, { dtype = rdt }), T.randn(5, 3, 2, { dtype = rdt }))
        same(F.fft(z3, { dim = 2 }), F.fft(z3:to(d), { dim = 2 }), tol * 10)
        local r3 = T.randn(5, 4, 2, { dtype = rdt })
        same(F.rfft(r3, { dim = 2 }), F.rfft(r3:to(d), { dim = 2 }), tol * 10)
        -- an odd slice (n * inner = 15): every other outer slice would start
        -- off the complex alignment cuFFT reads real input with
        local r5 = T.randn(2, 5, 3, { dtype = rdt })
        same(F.rfft(r5, { dim = 2 }), F.rfft(r5:to(d), { dim = 2 }), tol * 10)
        same(F.fft2(p0:to(cdt)), F.fft2(p0:to(d):to(cdt)), tol * 10)
        local row = T.randn(1, 9, { dtype = rdt })
        same(F.rfft(row:narrow(2, 2, 8)), F.rfft(row:to(d):narrow(2, 2, 8)), tol * 10)
        -- gradients through the transform stay on the device
        local a = z:clone():requires_grad_()
        F.fft(a):abs():sum():backward()
        local a0 = z0:clone():requires_grad_()
        F.fft(a0):abs():sum():backward()
        assert.equal(d, a.grad.device.type)
        same(a0.grad, a.grad, tol * 10)
      end
    end)
    on(dev, "conv2d through cuDNN and through im2col + cuBLAS: the same values and gradients, deterministic ones repeat", function(d)
      local B = T.backends.cudnn
      T.manual_seed(8)
      for _, dt in ipairs { T.float32, T.float64 } do
        local tol = dt == T.float32 and 1e-4 or 1e-10
        local x0 = T.randn(3, 4, 9, 8, { dtype = dt })
        local w0 = T.randn(6, 2, 3, 3, { dtype = dt })
        local b0 = T.randn(6, { dtype = dt })
        local function run(enabled)
          B.enabled = enabled
          local x = x0:to(d):requires_grad_()
          local w = w0:to(d):requires_grad_()
          local b = b0:to(d):requires_grad_()
          local y = T.nn.functional.conv2d(x, w, b, { stride = { 2, 1 }, padding = 1, dilation = { 1, 2 }, groups = 2 })
          y:pow(2):sum():backward()
          B.enabled = true
          return y, x.grad, w.grad, b.grad
        end
        local ya, gxa, gwa, gba = run(true)
        local yb, gxb, gwb, gbb = run(false)
        same(back(yb), ya, tol)
        same(back(gxb), gxa, tol * 10)
        same(back(gwb), gwa, tol * 10)
        same(back(gbb), gba, tol * 10)
        B.deterministic = true
        local _, gx1, gw1 = run(true)
        local _, gx2, gw2 = run(true)
        B.deterministic = false
        same(back(gx1), gx2)
        same(back(gw1), gw2)
        -- benchmark: cuDNN's timed choice, the same values within tolerance
        B.benchmark = true
        local yc, gxc = run(true)
        local yd = run(true) -- the kept choice
        B.benchmark = false
        same(back(yb), yc, tol)
        same(back(yb), yd, tol)
        same(back(gxb), gxc, tol * 10)
      end
    end)
    on(dev, "T.linalg (cuSOLVER on cuda; lstsq and eig host-staged) gives the CPU's values, results on the device, gradients", function(d)
      local LA = T.linalg
      local Cc = require "ember.core"
      T.manual_seed(21)
      local A0 = T.randn(3, 4, 4, { dtype = T.float64 })
      A0 = A0:matmul(A0.mT) + T.eye(4, { dtype = T.float64 }) -- positive definite
      local B0 = T.randn(3, 4, 2, { dtype = T.float64 })
      local A, B = A0:to(d), B0:to(d)
      -- each call's value as the CPU's; staged: whether it runs host-staged
      -- on cuda (on the CPU nothing is)
      local function compare(calls, staged)
        for i, f in ipairs(calls) do
          local before = Cc._linalg_staged()
          local want, got = f(A0, B0), f(A, B)
          assert.equal(d, got.device.type)
          same(want, got, 1e-9)
          assert.equal(staged and d == "cuda", Cc._linalg_staged() > before, "call " .. i)
        end
      end
      -- the native routines
      compare({
        function(a, b) return LA.solve(a, b) end,
        function(a, b) return LA.solve(a, b.mT, { left = false }) end,
        function(a) return LA.inv(a) end,
        function(a) return LA.det(a) end,
        function(a) return select(2, LA.slogdet(a)) end,
        function(a) return LA.cholesky(a) end,
        function(a) return LA.cholesky(a, { upper = true }) end,
        function(a) return LA.eigvalsh(a) end,
        function(a) return LA.svdvals(a) end,
        function(a) return LA.svdvals(a:narrow(3, 1, 3)) end,
        function(a) return LA.svdvals(a:narrow(2, 1, 3)) end,
        function(a) local LU = LA.lu_factor(a); return LU end,
        function(a) local _, piv = LA.lu_factor(a); return piv end,
        function(a, b) local LU, piv = LA.lu_factor(a); return LA.lu_solve(LU, piv, b) end,
        function(a, b) local LU, piv = LA.lu_factor(a); return LA.lu_solve(LU, piv, b, { adjoint = true }) end,
        function(a, b) return LA.solve_triangular(a:triu(), b, { upper = true }) end,
        function(a, b) return LA.solve_triangular(a:tril(), b.mT, { upper = false, left = false }) end,
        function(a, b) return LA.solve_triangular(a:tril(), b, { upper = false, unitriangular = true }) end,
        function(a) return LA.matrix_norm(a, "nuc") end,
        function(a) return LA.matrix_rank(a) end,
        function(a) return LA.householder_product(a, T.empty(3, 0, { dtype = a.dtype, device = a.device })) end,
        function(a) local QR, tau = T.geqrf(a); return LA.householder_product(QR, tau) end,
      }, false)
      -- a batch of small matrices takes the batched entries (one launch);
      -- larger ones (and a single matrix) take one cuSOLVER call each
      local P0 = T.randn(2, 40, 40, { dtype = T.float64 })
      P0 = P0:matmul(P0.mT) + T.eye(40, { dtype = T.float64 }) * 40
      local Q0 = T.randn(2, 40, 3, { dtype = T.float64 })
      for _, pair in ipairs { { P0, Q0 }, { P0[1], Q0[1] }, { A0[2], B0[2] } } do
        local p0, q0 = pair[1], pair[2]
        local p, q = p0:to(d), q0:to(d)
        same(LA.solve(p0, q0), LA.solve(p, q), 1e-9)
        same(LA.inv(p0), LA.inv(p), 1e-9)
        same(LA.cholesky(p0), LA.cholesky(p), 1e-9)
        same(LA.solve_triangular(p0:triu(), q0, { upper = true }), LA.solve_triangular(p:triu(), q, { upper = true }), 1e-9)
        local LU0, piv0 = LA.lu_factor(p0)
        local LU, piv = LA.lu_factor(p)
        same(LU0, LU, 1e-9)
        same(piv0, piv)
        same(LA.lu_solve(LU0, piv0, q0), LA.lu_solve(LU, piv, q), 1e-9)
      end
      -- factors that are unique only up to signs: invariants
      local function close(x, y, tol) same(back(x), back(y), tol or 1e-9) end
      for _, shape in ipairs { { 3, 5, 3 }, { 3, 3, 5 }, { 2, 4, 4 } } do
        local M0 = T.randn(shape[1], shape[2], shape[3], { dtype = T.float64 })
        local M = M0:to(d)
        for _, full in ipairs { false, true } do
          local U, S, Vh = LA.svd(M, { full_matrices = full })
          assert.equal(d, U.device.type)
          close(LA.svdvals(M0), S)
          local k = math.min(shape[2], shape[3])
          local Uk, Vk = U:narrow(3, 1, k), Vh:narrow(2, 1, k)
          close(M0, Uk:matmul(T.diag_embed(S)):matmul(Vk))
          close(T.eye(U.shape[3], { dtype = T.float64 }):expand(U.shape[1], U.shape[3], U.shape[3]),
                U.mT:matmul(U))
          close(T.eye(Vh.shape[2], { dtype = T.float64 }):expand(Vh.shape[1], Vh.shape[2], Vh.shape[2]),
                Vh:matmul(Vh.mT))
        end
        for _, mode in ipairs { "reduced", "complete" } do
          local Q, R = LA.qr(M, { mode = mode })
          assert.equal(d, Q.device.type)
          close(M0, Q:matmul(R))
          close(R, R:triu())
          close(T.eye(Q.shape[3], { dtype = T.float64 }):expand(Q.shape[1], Q.shape[3], Q.shape[3]),
                Q.mT:matmul(Q))
        end
      end
      local L, V = LA.eigh(A)
      close(LA.eigvalsh(A0), L)
      close(A0, V:matmul(T.diag_embed(L)):matmul(V.mT))
      local Lu = LA.eigh(A, { UPLO = "U" })
      close(LA.eigvalsh(A0), Lu)
      -- float32 and complex64 on the same routines
      local A32 = A0:float()
      same(LA.solve(A32, B0:float()), LA.solve(A32:to(d), B0:float():to(d)), 1e-4)
      same(LA.cholesky(A32), LA.cholesky(A32:to(d)), 1e-4)
      local Z0 = T.complex(A0, T.randn(3, 4, 4, { dtype = T.float64 }) * 0.1)
      Z0 = Z0:matmul(Z0.mH) + T.eye(4, { dtype = T.float64 }):to(T.complex128)
      local Z = Z0:to(d)
      same(LA.solve(Z0, B0:to(T.complex128)), LA.solve(Z, B0:to(T.complex128):to(d)), 1e-9)
      same(LA.inv(Z0), LA.inv(Z), 1e-9)
      same(LA.cholesky(Z0), LA.cholesky(Z), 1e-9)
      same(LA.eigvalsh(Z0), LA.eigvalsh(Z), 1e-9)
      same(LA.svdvals(Z0), LA.svdvals(Z), 1e-9)
      local Zu, Zs, Zvh = LA.svd(Z)
      close(Z0, Zu:matmul(T.diag_embed(Zs):to(T.complex128)):matmul(Zvh))
      local Zq, Zr = LA.qr(Z)
      close(Z0, Zq:matmul(Zr))
      local Zl, Zv = LA.eigh(Z)
      close(Z0, Zv:matmul(T.diag_embed(Zl):to(T.complex128)):matmul(Zv.mH))
      -- lstsq and eig: host-staged on cuda (no cuSOLVER routine is wired)
      compare({
        function(a, b) return LA.lstsq(a, b).solution end,
        function(a) return LA.eigvals(a) end,
      }, true)
      -- gradients through the decompositions stay on the device
      local a = A:clone():requires_grad_()
      LA.solve(a, B):pow(2):sum():backward()
      local a0 = A0:clone():requires_grad_()
      LA.solve(a0, B0):pow(2):sum():backward()
      assert.equal(d, a.grad.device.type)
      same(a0.grad, a.grad, 1e-9)
      local c, c0 = A:clone():requires_grad_(), A0:clone():requires_grad_()
      LA.svdvals(c):sum():backward()
      LA.svdvals(c0):sum():backward()
      same(c0.grad, c.grad, 1e-8)
      -- info comes back from the device: errors name the op and the
      -- 1-based batch element, as on the CPU; the _ex forms return it
      local S = A0:clone()
      S[2]:zero_()
      raises(function() return LA.cholesky(S:to(d)) end, "(Batch element 2)")
      raises(function() return LA.solve(S:to(d), B) end, "(Batch element 2)")
      raises(function() return LA.inv(S:to(d)) end, "(Batch element 2)")
      raises(function() return LA.lu_factor(S:to(d)) end, "(Batch element 2)")
      local _, info = LA.inv_ex(S:to(d))
      assert.equal(d, info.device.type)
      assert.same({ 0, 1, 0 }, back(info):gt(0):int():tolist())
      local Lc, cinfo = LA.cholesky_ex(S:to(d))
      same(LA.cholesky(A0[1]), Lc[1])
      assert.same({ 0, 1, 0 }, back(cinfo):gt(0):int():tolist())
    end)
    on(dev, "nn: RNN, LSTM (with projection) and GRU layers (composed on cuda), packed sequences, gradients", function(d)
      local nn = T.nn
      for _, mk in ipairs {
        function() return nn.RNN(3, 5, { num_layers = 2, nonlinearity = "relu" }) end,
        function() return nn.LSTM(3, 5, { proj_size = 2, bidirectional = true }) end,
        function() return nn.GRU(3, 5, { batch_first = true }) end,
      } do
        T.manual_seed(4)
        local m = mk():double()
        local md = mk():double()
        md:load_state_dict(m:state_dict())
        md = md:to(d)
        local x = T.randn(7, 4, 3, { dtype = T.float64 })
        local xa, xb = x:clone():requires_grad_(), x:to(d):requires_grad_()
        local ya = m(xa)
        local yb = md(xb)
        same(ya:detach(), yb:detach(), 1e-10)
        ya:pow(2):sum():backward()
        yb:pow(2):sum():backward()
        same(xa.grad, xb.grad, 1e-10)
      end
      local U = nn.utils.rnn
      T.manual_seed(4)
      local m = nn.LSTM(3, 4):double()
      local x = T.randn(5, 3, 3, { dtype = T.float64 })
      local pa = U.pack_padded_sequence(x, T.tensor { 5, 3, 2 })
      local pb = U.pack_padded_sequence(x:to(d), T.tensor { 5, 3, 2 })
      local qa = m(pa)
      local qb = m:to(d)(pb)
      local oa = U.pad_packed_sequence(qa)
      local ob = U.pad_packed_sequence(qb)
      same(oa:detach(), ob:detach(), 1e-10)
    end)
    on(dev, "nn: dropout (the CPU's mask after the same seed) and embedding with its gradient", function(d)
      local F = T.nn.functional
      local x = T.randn(8, 16)
      T.manual_seed(9)
      local a = F.dropout(x, 0.25)
      T.manual_seed(9)
      local b = F.dropout(x:to(d), 0.25)
      same(a, b)
      local kept = back(b):ne(0):sum():item()
      assert.is_true(kept > 64 and kept < 128)
      local w = T.randn(5, 3, { dtype = T.float64 })
      local ids = T.tensor { { 1, 5 }, { 5, 2 } }
      local wa, wb = w:clone():requires_grad_(), w:clone():to(d):requires_grad_()
      local ea, eb = F.embedding(ids, wa), F.embedding(ids:to(d), wb)
      same(ea:detach(), eb:detach())
      ea:sum():backward()
      eb:sum():backward()
      same(wa.grad, wb.grad, 1e-12)
      same(T.tensor({ 1, 1, 0, 0, 2 }, { dtype = T.float64 }), back(wb.grad):sum(2):div(3), 1e-12)
    end)
    on(dev, "item and printing read one element", function(d)
      local x = T.tensor { 1.5, 2.5 }:to(d)
      assert.equal(2.5, x[2]:item())
    end)
  end)
end
