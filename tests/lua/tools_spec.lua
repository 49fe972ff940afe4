-- The tensor tools (lua/ember/tools.lua, docs/tools.md): values and
-- gradients against PyTorch 1.13 (tests/fixtures/tools_cases.lua from
-- gen_tools.py, float32 and float64, non-contiguous and empty inputs),
-- gradcheck in float64, options, out=, in-place forms and bad input.
local T = require "ember"
local F = T.nn.functional
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/tools_cases.lua")

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end

local function input(rec)
  local t = tensor(rec.base)
  if rec.perm then t = t:permute(rec.perm) end
  return t
end

local TOL = { float32 = 1e-5, float64 = 1e-12 }

local function close(got, rec, what, scale)
  local want = tensor(rec)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  if want:numel() == 0 then return end
  if not want.dtype.is_floating_point then
    assert.is_true(T.equal(want, got:detach()), what .. ": values")
    return
  end
  local finite = want:isfinite()
  assert.is_true(T.equal(finite, got:detach():isfinite()), what .. ": finite positions")
  local w, g = want[finite], got:detach()[finite]
  if w:numel() == 0 then return end
  local d = (g - w):abs():max():item()
  local tol = TOL[rec.dtype] * (scale or 1) * math.max(1, w:abs():max():item())
  assert(d <= tol, string.format("%s: max difference %g (tolerance %g)", what, d, tol))
end

local ops = {
  tril = function(c, x) return x:tril(c.opts.diagonal) end,
  triu = function(c, x) return T.triu(x, { diagonal = c.opts.diagonal }) end,
  diag = function(c, x) return T.diag(x, c.opts.diagonal) end,
  diag_embed = function(c, x) return x:diag_embed(c.opts) end,
  pad = function(c, x) return F.pad(x, c.opts.pad, { mode = c.opts.mode, value = c.opts.value }) end,
  einsum = function(c, ...) return T.einsum(c.opts.equation, ...) end,
  meshgrid = function(c, ...) return unpack(T.meshgrid({ ... }, { indexing = c.opts.indexing })) end,
  normalize = function(c, x) return F.normalize(x, c.opts) end,
  cosine_similarity = function(c, a, b) return F.cosine_similarity(a, b, c.opts) end,
  cdist = function(c, a, b) return T.cdist(a, b, c.opts) end,
}

describe("tensor tools against PyTorch 1.13", function()
  for i, c in ipairs(cases) do
    local dt = c.out[1].dtype
    it(string.format("%s #%d %s", c.op, i, dt), function()
      if c.op == "one_hot" then
        close(F.one_hot(tensor(c.ids), c.opts.num_classes), c.out[1], "one_hot")
        return
      end
      local xs, leaves = {}, {}
      for k, rec in ipairs(c.x) do
        local base = tensor(rec.base)
        if c.g and base.dtype.is_floating_point then base:requires_grad_() end
        leaves[k] = base
        xs[k] = rec.perm and base:permute(rec.perm) or base
      end
      local outs = { ops[c.op](c, unpack(xs)) }
      assert.equal(#c.out, #outs, "number of results")
      -- cdist's matmul form and einsum's contractions round like PyTorch's
      -- but not in the same order: float32 gets a looser bound there
      local scale = (c.op == "cdist" or c.op == "einsum" or c.op == "cosine_similarity") and 20 or 1
      for k = 1, #outs do close(outs[k], c.out[k], "output " .. k, scale) end
      if c.g then
        local vs, roots = {}, {}
        for k = 1, #outs do
          roots[k] = outs[k]
          vs[k] = tensor(c.v[k])
        end
        local gs = T.autograd.grad(roots, leaves, { grad_outputs = vs, allow_unused = true })
        for k = 1, #leaves do
          local g = gs[k] or T.zeros_like(leaves[k])
          -- the gradient is w.r.t. the permuted input PyTorch saw
          if c.x[k].perm then g = g:permute(c.x[k].perm) end
          close(g, c.g[k], "gradient " .. k, scale)
        end
      end
    end)
  end
end)

local function r(...) return T.randn(...):double():requires_grad_() end

describe("tensor tools: gradcheck (float64)", function()
  local gc = {
    { "tril", function(x) return x:tril(1) end, { r(3, 4) } },
    { "triu batched", function(x) return T.triu(x, -1) end, { r(2, 3, 3) } },
    { "tril_", function(x) return (x * 1):tril_(0) end, { r(3, 3) } },
    { "diag 1-d", function(x) return T.diag(x, -1) end, { r(3) } },
    { "diag 2-d", function(x) return x:diag(1) end, { r(3, 4) } },
    { "diag_embed", function(x) return T.diag_embed(x, 1, 1, 3) end, { r(2, 3) } },
    { "pad constant", function(x) return F.pad(x, { 1, -1, 2, 0 }, { value = 3 }) end, { r(2, 3, 4) } },
    { "pad reflect", function(x) return F.pad(x, { 2, 1, 1, 2 }, "reflect") end, { r(1, 3, 4) } },
    { "pad replicate", function(x) return F.pad(x, { 3, 1 }, "replicate") end, { r(2, 3) } },
    { "pad circular", function(x) return F.pad(x, { 1, 2, 2, 1 }, "circular") end, { r(1, 1, 3, 4) } },
    { "einsum matmul", function(a, b) return T.einsum("ij,jk->ik", a, b) end, { r(2, 3), r(3, 4) } },
    { "einsum batched ellipsis", function(a, b) return T.einsum("...ij,...jk", a, b) end, { r(2, 2, 3), r(3, 2) } },
    { "einsum trace", function(a) return T.einsum("ii", a) end, { r(3, 3) } },
    { "einsum three", function(a, b, c) return T.einsum("ab,bc,ca->a", a, b, c) end, { r(2, 3), r(3, 4), r(4, 2) } },
    { "meshgrid", function(a, b) local x, y = T.meshgrid(a, b, { indexing = "xy" }); return x * y end, { r(2), r(3) } },
    { "normalize", function(x) return F.normalize(x, { p = 3, dim = 1 }) end, { r(3, 4) } },
    { "cosine_similarity", function(a, b) return F.cosine_similarity(a, b) end, { r(3, 4), r(1, 4) } },
    { "cdist p=2 direct", function(a, b) return T.cdist(a, b) end, { r(3, 2), r(4, 2) } },
    { "cdist p=2 mm", function(a, b) return T.cdist(a, b, { compute_mode = "use_mm_for_euclid_dist" }) end,
      { r(3, 2), r(4, 2) } },
    { "cdist p=1.5", function(a, b) return T.cdist(a, b, 1.5) end, { r(2, 3, 2), r(4, 2) } },
    { "cdist p=inf", function(a, b) return T.cdist(a, b, math.huge) end, { r(3, 2), r(2, 2) } },
  }
  for _, c in ipairs(gc) do
    it(c[1], function()
      assert.is_true(T.autograd.gradcheck(c[2], c[3]))
    end)
  end
end)

describe("tensor tools: forms, options, out= and in place", function()
  it("tril_/triu_ write in place and return the tensor", function()
    local a = T.ones(3, 3)
    assert.equal(a, a:tril_(-1))
    assert.same({ { 0, 0, 0 }, { 1, 0, 0 }, { 1, 1, 0 } }, a:tolist())
    local b = T.ones(2, 3)
    b:triu_ { diagonal = 1 }
    assert.same({ { 0, 1, 1 }, { 0, 0, 1 } }, b:tolist())
  end)

  it("honours out= (same dtype; an empty out is resized)", function()
    local a = T.arange(9):reshape(3, 3)
    local out = T.empty(0, { dtype = T.int64 })
    assert.equal(out, T.tril(a, { out = out }))
    assert.same(a:tril():tolist(), out:tolist())
    local d = T.empty(3, { dtype = T.int64 })
    T.diag(a, 0, { out = d })
    assert.same({ 0, 4, 8 }, d:tolist())
    local n = T.empty(2, 2)
    F.normalize(T.ones(2, 2), { out = n })
    assert.is_true(T.allclose(n, T.full({ 2, 2 }, 1 / math.sqrt(2))))
    assert.has_error(function() T.triu(a, { out = T.empty(3, 3) }) end)
    assert.has_error(function() a:tril_ { out = a } end, "tril_: an in-place op takes no out= option")
  end)

  it("refuses unknown options", function()
    local a = T.ones(3, 3)
    assert.has_error(function() a:tril { diagnal = 1 } end, "tril: unknown option 'diagnal' (expected one of: diagonal, out)")
    assert.has_error(function() F.pad(a, { 1, 1 }, { mode = "reflect", foo = 1 }) end, "pad: unknown option 'foo' (expected one of: mode, value)")
    assert.has_error(function() T.meshgrid(a[1], { indexing = "ij", sparse = true }) end,
      "meshgrid: unknown option 'sparse' (expected one of: indexing)")
    assert.has_error(function() F.normalize(a, { p = 2, axis = 1 }) end, "normalize: unknown option 'axis' (expected one of: dim, eps, out, p)")
    assert.has_error(function() F.cosine_similarity(a, a, { dim = 1, epsilon = 1 }) end,
      "cosine_similarity: unknown option 'epsilon' (expected one of: dim, eps)")
    assert.has_error(function() T.cdist(a, a, { p = 2, mode = 1 }) end, "cdist: unknown option 'mode' (expected one of: compute_mode, p)")
    assert.has_error(function() T.diag_embed(a, { offset = 1, dim = 2 }) end, "diag_embed: unknown option 'dim' (expected one of: dim1, dim2, offset, out)")
  end)

  it("one_hot takes 1-based ids and names a bad id", function()
    assert.same({ { 1, 0, 0 }, { 0, 0, 1 } }, F.one_hot(T.tensor { 1, 3 }):tolist())
    assert.same({ 2, 5 }, F.one_hot(T.tensor { 1, 3 }, 5).shape:totable())
    assert.has_error(function() F.one_hot(T.tensor { 0, 2 }) end,
      "one_hot: class ids are 1-based: got id 0 (expected 1 <= id <= 2)")
    assert.has_error(function() F.one_hot(T.tensor { 1, 4 }, 3) end, "one_hot: class id 4 is larger than num_classes 3")
    assert.has_error(function() F.one_hot(T.tensor({ 1 }, { dtype = T.float32 })) end,
      "one_hot: is only applicable to index tensors (ember.int64), got ember.float32")
    assert.has_error(function() F.one_hot(T.zeros(0, { dtype = T.int64 })) end,
      "one_hot: can not infer the total number of classes from an empty tensor; pass num_classes")
    -- the result feeds cross_entropy's probability form
    local logits = T.randn(2, 3)
    local ids = T.tensor { 3, 1 }
    assert.is_true(T.allclose(F.cross_entropy(logits, ids), F.cross_entropy(logits, F.one_hot(ids, 3):double():float())))
  end)

  it("meshgrid: varargs give varargs, a table gives a table, ij is the default", function()
    local x, y = T.meshgrid(T.arange(2), T.arange(3))
    assert.same({ 2, 3 }, x.shape:totable())
    local g = T.meshgrid { T.arange(2), T.arange(3) }
    assert.equal(2, #g)
    assert.is_true(T.equal(g[2], y))
    local gx = T.meshgrid({ T.arange(2), T.arange(3) }, { indexing = "xy" })
    assert.same({ 3, 2 }, gx[1].shape:totable())
    assert.has_error(function() T.meshgrid(T.arange(2), T.arange(2, { dtype = T.float32 })) end,
      "meshgrid: expects all tensors to have the same dtype, got ember.int64 and ember.float32")
    assert.has_error(function() T.meshgrid(T.zeros(2, 2)) end,
      "meshgrid: expected 0-d or 1-d tensors, got a 2-d tensor at position 1")
    assert.has_error(function() T.meshgrid(T.arange(2), { indexing = "ji" }) end,
      "meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ji")
  end)

  it("einsum takes operands as varargs or one table, and names bad equations", function()
    local a, b = T.randn(2, 3), T.randn(3, 4)
    assert.is_true(T.allclose(T.einsum("ij,jk", a, b), T.mm(a, b)))
    assert.is_true(T.allclose(T.einsum("ij,jk->ik", { a, b }), T.mm(a, b)))
    assert.has_error(function() T.einsum("ij,jk->ik", a) end,
      "einsum: fewer operands were provided than specified in the equation")
    assert.has_error(function() T.einsum("ij->ik", a) end,
      "einsum: output subscript k does not appear in the equation for any input operand")
    assert.has_error(function() T.einsum("ij,jk->ik", a, a) end,
      "einsum: subscript j has size 2 for operand 2 which does not broadcast with previously seen size 3")
    assert.has_error(function() T.einsum("i1", a) end,
      "einsum: invalid subscript given at index 2 in the equation string, subscripts must be in [a-zA-Z]")
    assert.has_error(function() T.einsum("ijk", a) end,
      "einsum: the number of subscripts in the equation (3) does not match the number of dimensions (2) "
      .. "for operand 1 and no ellipsis was given")
    assert.has_error(function() T.einsum("ii", a) end,
      "einsum: subscript i is repeated for operand 1 but the sizes don't match, 3 != 2")
  end)

  it("pad: PyTorch's limits per mode", function()
    local x = T.randn(2, 3, 4)
    assert.has_error(function() F.pad(x, { 1 }) end, "pad: padding length must be divisible by 2, got 1")
    assert.has_error(function() F.pad(x, { 1, 1, 1, 1, 1, 1, 1, 1 }) end,
      "pad: padding length too large: 8 values for a 3-d input (at most 6)")
    assert.has_error(function() F.pad(x, { 4, 0 }, "reflect") end,
      "pad: padding size should be less than the corresponding input dimension, but got: padding (4, 0) at "
      .. "dimension 3 of input [2, 3, 4]")
    assert.has_error(function() F.pad(x, { 5, 0 }, "circular") end,
      "pad: padding value causes wrapping around more than once: padding (5, 0) at dimension 3 of input [2, 3, 4]")
    assert.has_error(function() F.pad(x, { 1, 1, 1, 1 }, "circular") end,
      "pad: circular padding needs a batch and a channel dim: expected 2 padding values for a 3-d input, got 4")
    assert.has_error(function() F.pad(T.randn(4), { 1, 1 }, "reflect") end)
    assert.has_error(function() F.pad(x, { 1, 1 }, "reflect", 1) end,
      "pad: padding mode \"reflect\" doesn't take in value argument")
    assert.has_error(function() F.pad(x, { 1, 1 }, "wrap") end,
      "pad: unrecognised padding mode wrap (expected constant, reflect, replicate or circular)")
    assert.has_error(function() F.pad(x, { -3, -2 }) end,
      "pad: the input size 4, plus negative padding -3 and -2 resulted in a negative output size, which is "
      .. "invalid. Check dimension 3 of your input")
    -- integer and bool tensors pad too, and a constant pad keeps the dtype
    assert.same({ { 7, 1, 2, 7 } }, F.pad(T.tensor { { 1, 2 } }, { 1, 1 }, { value = 7 }):tolist())
    assert.same({ { false, true, false } }, F.pad(T.tensor { { true } }, { 1, 1 }):tolist())
  end)

  it("tril/triu/diag/diag_embed name bad input", function()
    assert.has_error(function() T.tril(T.ones(3)) end, "tril: input tensor must have at least 2 dimensions, got 1")
    assert.has_error(function() T.ones(3, 3):triu(0.5) end, "triu: expected an integer for diagonal, got 0.5")
    assert.has_error(function() T.diag(T.ones(2, 2, 2)) end, "diag: supports 1-d or 2-d tensors, got a 3-d tensor")
    assert.has_error(function() T.diag_embed(T.ones(2), 0, 1, 1) end,
      "diag_embed: diagonal dimensions cannot be identical 1, 1")
    assert.has_error(function() T.diag_embed(T.ones(2), 0, 1, 3) end,
      "diag_embed: dimension 3 out of range (expected to be in range of [-2, 2])")
  end)

  it("cdist and cosine_similarity name bad input", function()
    assert.has_error(function() T.cdist(T.ones(3), T.ones(2, 3)) end,
      "cdist: only supports at least 2-d tensors, x1 got: 1-d")
    assert.has_error(function() T.cdist(T.ones(2, 3), T.ones(2, 4)) end,
      "cdist: x1 and x2 must have the same number of columns. x1: 3 x2: 4")
    assert.has_error(function() T.cdist(T.ones(2, 3, { dtype = T.int64 }), T.ones(2, 3, { dtype = T.int64 })) end,
      "cdist: only supports floating-point dtypes, x1 got: ember.int64")
    assert.has_error(function() T.cdist(T.ones(2, 3), T.ones(2, 3), -1) end,
      "cdist: only supports non-negative p values, got -1")
    assert.has_error(function() T.cdist(T.ones(2, 3), T.ones(2, 3), { compute_mode = "fast" }) end,
      "cdist: fast is not a valid value for compute_mode")
    assert.has_error(function() F.cosine_similarity(T.ones(2, 3, { dtype = T.int64 }), T.ones(2, 3, { dtype = T.int64 })) end,
      "cosine_similarity: expected common dtype to be floating point, yet common dtype is ember.int64")
    assert.has_error(function() F.cosine_similarity(T.ones(2, 3), T.ones(2, 4)) end)
  end)

  it("cat of more than 31 tensors that require grad (the adaptive pools' pieces)", function()
    local parts, xs = {}, {}
    for i = 1, 40 do
      xs[i] = T.full({ 1 }, i, { dtype = T.float64, requires_grad = true })
      parts[i] = xs[i] * i
    end
    local y = T.cat(parts)
    y:sum():backward()
    assert.equal(40, xs[40].grad:item())
    assert.equal(1, xs[1].grad:item())
  end)

  it("cdist gives a zero gradient at zero distance, as PyTorch", function()
    local a = T.zeros(2, 3, { dtype = T.float64, requires_grad = true })
    local b = T.zeros(2, 3, { dtype = T.float64 })
    for _, p in ipairs { 2, 1.5, 0.5 } do
      local ga = T.autograd.grad(T.cdist(a, b, p):sum(), a)
      assert.same({ { 0, 0, 0 }, { 0, 0, 0 } }, ga:tolist())
    end
  end)
end)
