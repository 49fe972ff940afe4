-- Options are honoured or refused (issue 21, item 5, first layer): the
-- selecting, assembling and matrix-product ops write `out` (resized from
-- empty, returned as the same object) and refuse unknown keys; size and
-- position arguments refuse nil holes; a tensor where a list of tensors
-- belongs is an error.
local T = require "ember"

local function fails_with(fn, expected)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error matching: " .. expected)
  assert.matches(expected, tostring(err), 1, true)
end

local G = T.arange(12):view(4, 3):float()
local a, b = T.ones(2, 3), T.zeros(2, 3)

-- each entry: name, a call taking an options table, the result without out
local calls = {
  { "cat", function(o) return T.cat({ a, b }, 1, o) end },
  { "cat (options only)", function(o) return T.cat({ a, b }, o) end },
  { "cat (Torch7 spelling)", function(o) return T.cat(a, b, 2, o) end },
  { "stack", function(o) return T.stack({ a, b }, 2, o) end },
  { "hstack", function(o) return T.hstack({ a, b }, o) end },
  { "vstack", function(o) return T.vstack({ a, b }, o) end },
  { "dstack", function(o) return T.dstack({ a, b }, o) end },
  { "index_select", function(o) return T.index_select(G, 1, T.tensor { 3, 1, 3 }, o) end },
  { "index_select (method)", function(o) return G:index_select(2, T.tensor { 2 }, o) end },
  { "gather", function(o) return T.gather(G, 2, T.tensor { { 1 }, { 3 }, { 2 }, { 1 } }, o) end },
  { "masked_select", function(o) return T.masked_select(G, G:gt(6), o) end },
  { "where", function(o) return T.where(G:gt(5), G, 0, o) end },
  { "matmul", function(o) return T.matmul(G, G:t(), o) end },
  { "mm", function(o) return T.mm(G, G:t(), o) end },
  { "bmm", function(o) return T.bmm(G:view(1, 4, 3), G:t():reshape(1, 3, 4), o) end },
  { "mv", function(o) return T.mv(G, T.ones(3), o) end },
  { "outer", function(o) return T.outer(T.ones(2), T.ones(3), o) end },
}

describe("out=", function()
  for _, c in ipairs(calls) do
    it(c[1] .. " writes into an empty out, resizes it and returns it", function()
      local want = c[2](nil)
      local out = T.empty(0, { dtype = want.dtype })
      local got = c[2]({ out = out })
      assert.is_true(rawequal(out, got))
      assert.same(want.shape:totable(), out.shape:totable())
      assert.is_true(T.equal(want, out))
      -- an out of the right shape is written in place (same storage)
      local same = T.empty(want.shape, { dtype = want.dtype })
      local ptr = same:data_ptr()
      assert.is_true(rawequal(same, c[2]({ out = same })))
      assert.equal(ptr, same:data_ptr())
      assert.is_true(T.equal(want, same))
    end)

    it(c[1] .. " refuses an unknown option, a wrong out and a wrong dtype", function()
      local ok, err = pcall(c[2], { outt = T.empty(0) })
      assert.is_false(ok)
      assert.matches("unknown option 'outt'", tostring(err), 1, true)
      ok, err = pcall(c[2], { out = 5 })
      assert.is_false(ok)
      assert.matches("expected a tensor for option 'out', got number", tostring(err), 1, true)
      local want = c[2](nil)
      local other = want.dtype == T.int64 and T.float32 or T.int64
      ok, err = pcall(c[2], { out = T.empty(0, { dtype = other }) })
      assert.is_false(ok)
      assert.matches("expected out to have dtype", tostring(err), 1, true)
      if want:numel() > 1 then
        ok, err = pcall(c[2], { out = T.empty(1, { dtype = want.dtype }) })
        assert.is_false(ok)
        assert.matches("doesn't match the result shape", tostring(err), 1, true)
      end
    end)
  end

  it("is not differentiable, as in PyTorch", function()
    local w = T.ones(2, 2, { requires_grad = true })
    fails_with(function() return T.mm(w, w, { out = T.empty(0) }) end,
      "mm: functions with out= arguments don't support automatic differentiation")
    fails_with(function() return T.cat({ w, w }, 1, { out = T.empty(0) }) end,
      "cat: functions with out= arguments don't support automatic differentiation")
  end)

  it("mm, bmm and matmul give out the same values through the direct GEMM and the checked copy", function()
    T.manual_seed(5)
    for _, c in ipairs {
      { "mm", T.randn(5, 3), T.randn(3, 4) },
      { "matmul", T.randn(5, 3, { dtype = T.float64 }), T.randn(3, 4, { dtype = T.float64 }) },
      { "bmm", T.randn(2, 5, 3), T.randn(2, 3, 4) },
      { "matmul", T.randn(2, 5, 3), T.randn(2, 3, 4) },
    } do
      local f, x, y = T[c[1]], c[2], c[3]
      local want = f(x, y)
      -- ready: the same storage, written in place
      local o = T.full(want.shape, 7, { dtype = want.dtype })
      local p = o:data_ptr()
      assert.equal(o, f(x, y, { out = o }))
      assert.equal(p, o:data_ptr())
      assert.is_true(T.equal(o, want))
      -- empty: resized; transposed (not contiguous): written through its strides
      local e = T.empty(0, { dtype = want.dtype })
      assert.is_true(T.equal(f(x, y, { out = e }), want))
      local sz = want.shape:totable()
      sz[#sz], sz[#sz - 1] = sz[#sz - 1], sz[#sz]
      local t = T.zeros(sz, { dtype = want.dtype }):transpose(-1, -2)
      f(x, y, { out = t })
      assert.is_true(T.equal(t, want))
      -- out viewing an operand: the product of the values before the call
      local sq = x:narrow(-1, 1, 3):clone()
      local r = f(sq, sq:narrow(-2, 1, 3))
      f(sq, sq:narrow(-2, 1, 3):clone(), { out = sq:narrow(-2, 1, 5):narrow(-1, 1, 3) })
      assert.is_true(T.allclose(sq:narrow(-2, 1, 5), r, 1e-6, 1e-6))
    end
    -- autograd sees the write: a saved out is reported at backward; an out
    -- that requires grad is refused (out= is not differentiable: torch's words)
    local w = T.randn(3, 3, { requires_grad = true })
    local saved = T.randn(3, 3)
    local loss = (w * saved):sum()
    T.mm(T.randn(3, 3), T.randn(3, 3), { out = saved })
    fails_with(function() loss:backward() end, "modified by an inplace operation")
    fails_with(function() return T.mm(T.randn(3, 3), T.randn(3, 3), { out = w }) end,
      "mm: functions with out= arguments don't support automatic differentiation")
    -- other dtypes take the checked copy, with its errors
    local i = T.arange(1, 7):view(2, 3)
    local oi = T.empty(2, 2, { dtype = T.int64 })
    T.mm(i, i:t(), { out = oi })
    assert.is_true(T.equal(oi, T.mm(i, i:t())))
    fails_with(function() return T.mm(T.ones(2, 2), T.ones(2, 2), { out = T.empty(3, 3) }) end,
      "doesn't match the result shape")
    fails_with(function() return T.mm(T.ones(2, 2), T.ones(2, 2), { out = T.empty(2, 2, { dtype = T.float64 }) }) end,
      "expected out to have dtype")
  end)

  it("cat takes the dim as an argument or an option, not both", function()
    assert.same({ 2, 6 }, T.cat({ a, b }, { dim = 2 }).shape:totable())
    fails_with(function() return T.cat({ a, b }, 1, { dim = 2 }) end,
      "cat: dim given twice (argument #2 and option 'dim')")
  end)
end)

describe("clone", function()
  it("honours memory_format and refuses other options", function()
    local t = G:t()
    assert.is_false(t:clone():is_contiguous()) -- preserve: the same strides
    assert.same(t:stride(), t:clone():stride())
    local c = t:clone { memory_format = "contiguous" }
    assert.is_true(c:is_contiguous())
    assert.is_true(T.equal(c, t))
    fails_with(function() return t:clone { memory_format = "channels_last" } end,
      "clone: memory_format must be 'preserve' or 'contiguous', got channels_last")
    fails_with(function() return T.clone(t, { bogus = 1 }) end,
      "clone: unknown option 'bogus' (expected one of: memory_format)")
  end)
end)

describe("lists and sizes", function()
  it("a tensor where a list of tensors belongs is an error naming the op", function()
    fails_with(function() return T.cat(a) end, "cat: expected a list of tensors for argument #1, got a tensor")
    fails_with(function() return T.stack(a) end, "stack: expected a table of tensors for argument #1, got a tensor")
    fails_with(function() return T.hstack(a) end, "hstack: expected a table of tensors for argument #1, got a tensor")
    -- Torch7's spelling with two or more tensors still joins
    assert.same({ 4, 3 }, T.cat(a, b).shape:totable())
  end)

  it("nil holes in sizes and positions are refused, naming the op and the argument", function()
    local x = T.ones(2, 3)
    fails_with(function() return T.zeros(2, nil, 3) end, "zeros: argument #2 is nil")
    fails_with(function() return T.zeros(nil) end, "zeros: argument #1 is nil")
    fails_with(function() return T.ones(nil, 2) end, "ones: argument #1 is nil")
    fails_with(function() return T.rand(2, nil, 3) end, "rand: argument #2 is nil")
    fails_with(function() return T.empty(nil) end, "empty: argument #1 is nil")
    fails_with(function() return x:view(nil) end, "view: argument #2 is nil")
    fails_with(function() return x:reshape(nil, 6) end, "reshape: argument #2 is nil")
    fails_with(function() return x:permute(1, nil) end, "permute: argument #3 is nil")
    fails_with(function() return x:expand(2, nil, 3) end, "expand: argument #3 is nil")
    -- no arguments, and a trailing absent options table, are fine
    assert.equal(0, T.zeros():dim())
    assert.same({ 2 }, T.zeros(2, nil).shape:totable())
    assert.same({ 3, 2 }, x:permute(2, 1).shape:totable())
  end)
end)

describe("layer constructors", function()
  it("honour device and dtype and refuse other options", function()
    local l = T.nn.Linear(3, 2, { device = "meta", dtype = T.float64 })
    assert.equal("meta", tostring(l.weight.device))
    assert.equal("meta", tostring(l.bias.device))
    assert.equal(T.float64, l.weight.dtype)
    local bn = T.nn.BatchNorm1d(3, { device = "meta" })
    assert.equal("meta", tostring(bn.running_mean.device))
    assert.equal("meta", tostring(bn.num_batches_tracked.device))
    fails_with(function() return T.nn.Linear(3, 2, { bais = false }) end,
      "Linear: unknown option 'bais' (expected one of: bias, dtype, device)")
    fails_with(function() return T.nn.Conv2d(1, 2, 3, { padding_modes = "reflect" }) end,
      "Conv2d: unknown option 'padding_modes'")
    fails_with(function() return T.nn.ReLU { inplce = true } end,
      "ReLU: unknown option 'inplce' (expected one of: inplace)")
    fails_with(function() return T.nn.Tanh { inplace = true } end,
      "Tanh: unknown option 'inplace' (Tanh takes no options)")
    fails_with(function() return T.nn.Linear(3, 2)(T.ones(1, 3), { zz = 1 }) end,
      "Linear.forward: unknown option 'zz'")
  end)

  it("a parameter group's unknown key is refused", function()
    local p = T.ones(2, { requires_grad = true })
    fails_with(function() return T.optim.SGD({ { params = { p }, lr = 0.1, momentun = 0.9 } }, { lr = 0.1 }) end,
      "SGD: unknown option 'momentun' in a parameter group")
  end)
end)
