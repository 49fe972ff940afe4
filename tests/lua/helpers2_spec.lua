-- More helpers (lua/ember/helpers2.lua, docs/helpers.md "More helpers")
-- against PyTorch 1.13: the values below were printed by torch 1.13 (the
-- torch call is in each case's comment; torch's 0-based positions are
-- 1-based here), then gradients of the scatter-views and index_reduce, and
-- the errors.
local T = require "ember"
local U = require "specutil"
local f64 = { dtype = T.float64 }
local f32 = { dtype = T.float32 }

local function close(got, want, what, tol)
  assert(T.is_tensor(got), what .. ": not a tensor")
  want = T.is_tensor(want) and want or T.tensor(want, { dtype = got.dtype })
  assert.are.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  local d = (got:double() - want:double()):abs()
  d = d:numel() > 0 and d:max():item() or 0
  assert(d <= (tol or 1e-12), ("%s: max difference %g"):format(what, d))
end

describe("more helpers", function()
  it("torch.* spellings of methods and queries", function()
    local t = T.tensor({ -1.5, 2 }, f32)
    assert.is_true(rawequal(T.abs_(t), t))
    close(t, { 1.5, 2 }, "abs_")
    local c = T.clamp_(T.tensor({ -3, 0.5, 4 }, f32), -1, 1)
    close(c, { -1, 0.5, 1 }, "clamp_")
    close(T.zero_(T.ones(2)), { 0, 0 }, "zero_")
    close(T.fill_(T.ones(2), 3), { 3, 3 }, "fill_")
    local o = T.ones(2)
    local f = T.fill(o, 3) -- torch.fill(torch.ones(2), 3) -> [3., 3.], a copy
    close(f, { 3, 3 }, "fill"); close(o, { 1, 1 }, "fill keeps t")
    local x = T.arange(1, 7):reshape(2, 3):float()
    assert.equal(6, T.numel(x))
    assert.is_true(T.is_floating_point(x))
    assert.is_false(T.is_signed(T.ones(1, { dtype = T.uint8 })))
    assert.is_false(T.detach(x:clone():requires_grad_()).requires_grad)
    assert.is_false(T.is_conj(x)); assert.is_false(x:is_neg())
    assert.is_true(rawequal(T.resolve_conj(x), x)); assert.is_true(rawequal(x:resolve_neg(), x))
    assert.is_true(rawequal(T.conj_physical(x), x)) -- torch: a real tensor itself
    local z = T.complex(T.tensor({ 1, 2 }, f32), T.tensor({ 3, 4 }, f32))
    close(T.view_as_real(T.conj_physical(z)), { { 1, -3 }, { 2, -4 } }, "conj_physical")
    z:conj_physical_()
    close(T.view_as_real(z), { { 1, -3 }, { 2, -4 } }, "conj_physical_")
  end)

  it("range, empty_strided, split_with_sizes", function()
    -- torch.range(0, 1, 0.25), torch.range(5, 1, -2), torch.range(1, 4)
    close(T.range(0, 1, 0.25), { 0, 0.25, 0.5, 0.75, 1 }, "range step")
    close(T.range(5, 1, -2), { 5, 3, 1 }, "range down")
    local r = T.range(1, 4)
    assert.equal(T.float32, r.dtype); close(r, { 1, 2, 3, 4 }, "range")
    assert.equal(T.int64, T.range(1, 4, { dtype = T.int64 }).dtype)
    -- torch.empty_strided((2, 3), (1, 2)): strides (1, 2), storage of 6
    local e = T.empty_strided({ 2, 3 }, { 1, 2 })
    assert.are.same({ 1, 2 }, e:stride())
    assert.equal(6 * 4, e:untyped_storage():nbytes())
    local n = T.ones(2, f64):new_empty_strided({ 2, 2 }, { 1, 2 })
    assert.equal(T.float64, n.dtype); assert.are.same({ 1, 2 }, n:stride())
    assert.equal(0, T.empty_strided({ 0, 3 }, { 3, 1 }):numel())
    local parts = T.split_with_sizes(T.arange(5), { 2, 3 })
    close(parts[1], { 0, 1 }, "split 1"); close(parts[2], { 2, 3, 4 }, "split 2")
    parts = T.arange(6):reshape(2, 3):split_with_sizes({ 1, 2 }, 2)
    close(parts[2], { { 1, 2 }, { 4, 5 } }, "split dim 2")
    assert.equal(2, #T.unsafe_chunk(T.arange(4), 2)); assert.equal(2, #T.arange(4):unsafe_split(2))
  end)

  it("the *_copy functions: the view's values in fresh contiguous storage", function()
    local x = T.arange(12):reshape(3, 4)
    local function fresh(r, what)
      assert.is_true(r:is_contiguous(), what .. ": contiguous")
      assert.is_false(T.shares_storage(r, x), what .. ": fresh storage")
    end
    -- torch.slice_copy(torch.arange(12).reshape(3, 4), 1, 1, 4, 2) -> [[1, 3], [5, 7], [9, 11]]
    local s = T.slice_copy(x, 2, 2, 4, 2)
    close(s, { { 1, 3 }, { 5, 7 }, { 9, 11 } }, "slice_copy"); fresh(s, "slice_copy")
    -- torch.slice_copy(torch.arange(10), 0, 1, 8, 3) -> [1, 4, 7]
    close(T.slice_copy(T.arange(10), 1, 2, 8, 3), { 1, 4, 7 }, "slice_copy 1-d")
    close(T.slice_copy(T.arange(5), 1, nil, -2), { 0, 1, 2, 3 }, "slice_copy defaults")
    -- torch.diagonal_copy(torch.arange(9).reshape(3, 3), -1) -> [3, 7]
    close(T.diagonal_copy(T.arange(9):reshape(3, 3), -1), { 3, 7 }, "diagonal_copy")
    -- torch.unfold_copy(torch.arange(6), 0, 2, 2) -> [[0, 1], [2, 3], [4, 5]], strides (2, 1)
    local u = T.unfold_copy(T.arange(6), 1, 2, 2)
    close(u, { { 0, 1 }, { 2, 3 }, { 4, 5 } }, "unfold_copy"); assert.are.same({ 2, 1 }, u:stride())
    local tc = T.t_copy(x)
    close(tc, x:t(), "t_copy"); fresh(tc, "t_copy"); assert.are.same({ 3, 1 }, tc:stride())
    local ec = T.expand_copy(T.ones(3), { 2, 3 })
    assert.are.same({ 3, 1 }, ec:stride())
    close(T.transpose_copy(x, 1, 2), x:t(), "transpose_copy")
    close(T.permute_copy(x, { 2, 1 }), x:t(), "permute_copy")
    close(T.select_copy(x, 2, 3), { 2, 6, 10 }, "select_copy")
    local nc = x:narrow_copy(2, 2, 2)
    close(nc, { { 1, 2 }, { 5, 6 }, { 9, 10 } }, "narrow_copy"); fresh(nc, "narrow_copy")
    close(T.view_copy(x, 4, 3), x:view(4, 3), "view_copy"); fresh(T.view_copy(x, 4, 3), "view_copy")
    close(T.unsqueeze_copy(x, 1), x:unsqueeze(1), "unsqueeze_copy")
    close(T.squeeze_copy(x:unsqueeze(2)), x, "squeeze_copy")
    close(T.as_strided_copy(x, { 2, 2 }, { 1, 4 }, 1), { { 1, 5 }, { 2, 6 } }, "as_strided_copy")
    fresh(T.alias_copy(x), "alias_copy"); close(T.alias_copy(x), x, "alias_copy")
    local xd = x:double():requires_grad_()
    assert.is_false(T.detach_copy(xd).requires_grad)
    local parts = T.split_copy(x, 2, 2)
    assert.equal(2, #parts); fresh(parts[2], "split_copy"); close(parts[2], { { 2, 3 }, { 6, 7 }, { 10, 11 } }, "split_copy")
    parts = T.split_with_sizes_copy(x, { 1, 3 }, 2)
    close(parts[1], { { 0 }, { 4 }, { 8 } }, "split_with_sizes_copy")
    parts = T.unbind_copy(x, 2)
    assert.equal(4, #parts); close(parts[4], { 3, 7, 11 }, "unbind_copy"); fresh(parts[4], "unbind_copy")
    -- torch.view_as_real_copy(torch.complex(tensor([1., 2]), tensor([3., 4]))) -> [[1, 3], [2, 4]]
    local z = T.complex(T.tensor({ 1, 2 }, f32), T.tensor({ 3, 4 }, f32))
    close(T.view_as_real_copy(z), { { 1, 3 }, { 2, 4 } }, "view_as_real_copy")
    close(T.view_as_real(T.view_as_complex_copy(T.tensor({ { 1, 3 }, { 2, 4 } }, f32))), { { 1, 3 }, { 2, 4 } }, "view_as_complex_copy")
    local out = T.empty(0, { dtype = T.int64 })
    assert.is_true(rawequal(T.t_copy(x, { out = out }), out)); close(out, x:t(), "out=")
  end)

  it("the scatter-views: values and gradients as torch's", function()
    local w = T.arange(6, f64):reshape(2, 3)
    local function run(f, ...)
      local x = T.arange(1, 7, f64):reshape(2, 3):requires_grad_()
      local src = T.tensor(..., f64):requires_grad_()
      local r = f(x, src)
      ;(r * w):sum():backward()
      return r, x.grad, src.grad
    end
    -- torch.select_scatter(x, src, 0, 1)
    local r, gx, gs = run(function(x, s) return T.select_scatter(x, s, 1, 2) end, { 10, 20, 30 })
    close(r, { { 1, 2, 3 }, { 10, 20, 30 } }, "select_scatter")
    close(gx, { { 0, 1, 2 }, { 0, 0, 0 } }, "select_scatter grad x"); close(gs, { 3, 4, 5 }, "select_scatter grad src")
    -- torch.slice_scatter(x, s2, dim=1, start=0, end=3, step=2)
    r, gx, gs = run(function(x, s) return x:slice_scatter(s, 2, 1, 3, 2) end, { { 7, 8 }, { 9, 10 } })
    close(r, { { 7, 2, 8 }, { 9, 5, 10 } }, "slice_scatter")
    close(gx, { { 0, 1, 0 }, { 0, 4, 0 } }, "slice_scatter grad x"); close(gs, { { 0, 2 }, { 3, 5 } }, "slice_scatter grad src")
    -- torch.diagonal_scatter(x, d, 1)
    r, gx, gs = run(function(x, s) return T.diagonal_scatter(x, s, 1) end, { 5, 6 })
    close(r, { { 1, 5, 3 }, { 4, 5, 6 } }, "diagonal_scatter")
    close(gx, { { 0, 0, 2 }, { 3, 4, 0 } }, "diagonal_scatter grad x"); close(gs, { 1, 5 }, "diagonal_scatter grad src")
    -- torch.as_strided_scatter(x, a, (2, 2), (1, 3), 1); the gradient for x
    -- is torch's central differences: torch 1.13's own backward gives
    -- [[0, 1, 2], [0, 4, 5]] here, and gradcheck finds it not reentrant
    r, gx, gs = run(function(x, s) return T.as_strided_scatter(x, s, { 2, 2 }, { 1, 3 }, 1) end, { { 1, 2 }, { 3, 4 } })
    close(r, { { 1, 1, 3 }, { 4, 2, 4 } }, "as_strided_scatter")
    close(gx, { { 0, 0, 0 }, { 3, 0, 0 } }, "as_strided_scatter grad x"); close(gs, { { 1, 4 }, { 2, 5 } }, "as_strided_scatter grad src")
    -- torch.slice_scatter(zeros(8), ones(2), dim=0, start=1, end=5, step=3) -> [0, 1, 0, 0, 1, 0, 0, 0]
    close(T.slice_scatter(T.zeros(8), T.ones(2), 1, 2, 5, 3), { 0, 1, 0, 0, 1, 0, 0, 0 }, "slice_scatter step")
    close(T.slice_scatter(T.zeros(8), T.ones(2), 1, 7), { 0, 0, 0, 0, 0, 0, 1, 1 }, "slice_scatter start")
  end)

  it("in-place forms of addmm & co., cumsum/cumprod, igamma, sgn; kron", function()
    local a8 = T.arange(8, f32):reshape(2, 2, 2)
    local t = T.ones(2, 2, 2)
    assert.is_true(rawequal(t:baddbmm_(a8, a8, { beta = 0.5, alpha = 2 }), t))
    close(t, { { { 4.5, 6.5 }, { 12.5, 22.5 } }, { { 92.5, 110.5 }, { 132.5, 158.5 } } }, "baddbmm_")
    close(T.ones(2, 2):addbmm_(a8, a8), { { 49, 59 }, { 73, 91 } }, "addbmm_")
    close(T.ones(2, 3):addr_(T.tensor({ 1, 2 }, f32), T.tensor({ 1, 2, 3 }, f32), { alpha = 2 }),
      { { 3, 5, 7 }, { 5, 9, 13 } }, "addr_")
    close(T.ones(2, 2):addmm_(T.ones(2, 2), T.ones(2, 2), { beta = 2 }), { { 4, 4 }, { 4, 4 } }, "addmm_")
    close(T.addmv_(T.ones(2), T.ones(2, 3), T.ones(3)), { 4, 4 }, "torch.addmv_")
    local m = T.tensor({ { 1, 2 }, { 3, 4 } }, f32)
    close(m:clone():cumsum_(2), { { 1, 3 }, { 3, 7 } }, "cumsum_")
    close(m:clone():cumprod_(1), { { 1, 2 }, { 3, 8 } }, "cumprod_")
    local g = T.tensor({ 0.5, 1, 2 }, f32)
    close(g:clone():igamma_(T.tensor({ 1, 2, 3 }, f32)), { 0.8427008390426636, 0.8646647334098816, 0.8008517026901245 }, "igamma_", 1e-6)
    close(g:clone():igammac_(T.tensor({ 1, 2, 3 }, f32)), { 0.1572992354631424, 0.1353352814912796, 0.1991482824087143 }, "igammac_", 1e-6)
    close(T.tensor({ -2, 0, 3 }, f32):sgn_(), { -1, 0, 1 }, "sgn_")
    -- torch.tensor([[1, 2], [3, 4]]).kron(torch.tensor([[1, -1]]))
    close(T.tensor { { 1, 2 }, { 3, 4 } }:kron(T.tensor { { 1, -1 } }), { { 1, -1, 2, -2 }, { 3, -3, 4, -4 } }, "kron")
  end)

  it("index_reduce: values and gradients as torch's", function()
    -- t.index_reduce(0, tensor([0, 2, 0, 0]), src, reduce, include_self=...),
    -- then (r * arange(9).reshape(3, 3)).sum().backward()
    local want = {
      prod = {
        [true] = { { { 28, 96, 12 }, { 1, -1, 2 }, { 2, 10, 18 } }, { { 0, 32, 6 }, { 3, 4, 5 }, { 24, 35, 48 } },
          { { 0, 48, 8 }, { 3, 14, 24 }, { 0, 12, 48 }, { 0, 48, 12 } } },
        [false] = { { { 14, 32, 3 }, { 1, -1, 2 }, { 4, 5, 6 } }, { { 0, 0, 0 }, { 3, 4, 5 }, { 0, 0, 0 } },
          { { 0, 16, 2 }, { 6, 7, 8 }, { 0, 4, 12 }, { 0, 16, 3 } } },
      },
      mean = {
        [true] = { { { 3, 3.75, 2.375 }, { 1, -1, 2 }, { 2.25, 3.5, 4.5 } }, { { 0, 0.25, 0.5 }, { 3, 4, 5 }, { 3, 3.5, 4 } },
          { { 0, 0.25, 0.5 }, { 3, 3.5, 4 }, { 0, 0.25, 0.5 }, { 0, 0.25, 0.5 } } },
        [false] = { { { 10 / 3, 4, 11 / 6 }, { 1, -1, 2 }, { 4, 5, 6 } }, { { 0, 0, 0 }, { 3, 4, 5 }, { 0, 0, 0 } },
          { { 0, 1 / 3, 2 / 3 }, { 6, 7, 8 }, { 0, 1 / 3, 2 / 3 }, { 0, 1 / 3, 2 / 3 } } },
      },
      amax = {
        [true] = { { { 7, 8, 4 }, { 1, -1, 2 }, { 4, 5, 6 } }, { { 0, 0, 2 }, { 3, 4, 5 }, { 0, 0, 0 } },
          { { 0, 0, 0 }, { 6, 7, 8 }, { 0, 1, 0 }, { 0, 0, 0 } } },
        [false] = { { { 7, 8, 3 }, { 1, -1, 2 }, { 4, 5, 6 } }, { { 0, 0, 0 }, { 3, 4, 5 }, { 0, 0, 0 } },
          { { 0, 0, 2 }, { 6, 7, 8 }, { 0, 1, 0 }, { 0, 0, 0 } } },
      },
      amin = {
        [true] = { { { 1, 2, 0.5 }, { 1, -1, 2 }, { 0.5, 2, 3 } }, { { 0, 0, 0 }, { 3, 4, 5 }, { 6, 7, 8 } },
          { { 0, 0.5, 0 }, { 0, 0, 0 }, { 0, 0, 2 }, { 0, 0.5, 0 } } },
        [false] = { { { 1, 2, 0.5 }, { 1, -1, 2 }, { 4, 5, 6 } }, { { 0, 0, 0 }, { 3, 4, 5 }, { 0, 0, 0 } },
          { { 0, 0.5, 0 }, { 6, 7, 8 }, { 0, 0, 2 }, { 0, 0.5, 0 } } },
      },
    }
    local idx = T.tensor { 1, 3, 1, 1 }
    local wgt = T.arange(9, f64):reshape(3, 3)
    for _, red in ipairs { "prod", "mean", "amax", "amin" } do
      for _, inc in ipairs { true, false } do
        local t = T.tensor({ { 2, 3, 4 }, { 1, -1, 2 }, { 0.5, 2, 3 } }, f64):requires_grad_()
        local s = T.tensor({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 0.5 }, { 2, 2, 2 } }, f64):requires_grad_()
        local r = t:index_reduce(1, idx, s, red, { include_self = inc })
        local what = ("index_reduce %s %s"):format(red, tostring(inc))
        close(r, want[red][inc][1], what)
        close(t:detach():clone():index_reduce_(1, idx, s:detach(), red, { include_self = inc }), want[red][inc][1], what .. " (in place)")
        ;(r * wgt):sum():backward()
        close(t.grad, want[red][inc][2], what .. " grad self")
        close(s.grad, want[red][inc][3], what .. " grad source")
      end
    end
    -- the default include_self is true
    close(T.full({ 2 }, 2, f32):index_reduce(1, T.tensor { 1 }, T.tensor({ 3 }, f32), "prod"), { 6, 2 }, "default include_self")
  end)

  it("lu and lu_solve (the deprecated torch spellings)", function()
    local A = T.tensor({ { 4, 3, 1 }, { 6, 3, 2 }, { 2, 5, 7 } }, f64)
    local LU, p = T.lu(A)
    close(LU, { { 6, 3, 2 }, { 1 / 3, 4, 6.333333333333333 }, { 2 / 3, 0.25, -1.9166666666666665 } }, "lu", 1e-14)
    assert.are.same({ 2, 3, 3 }, p:tolist())
    local X = T.tensor({ { 1 }, { 2 }, { 3 } }, f64):lu_solve(LU, p)
    close(X, { { 0.2608695652173913 }, { -0.17391304347826086 }, { 0.4782608695652174 } }, "lu_solve", 1e-14)
    local _, _, info = A:lu(true, true)
    assert.equal(0, info:item())
  end)

  it("refuse bad input naming the op", function()
    local err = U.err
    local x = T.arange(6):reshape(2, 3):float()
    err(function() return T.range(1, 4, 0) end, "range: step must be nonzero")
    err(function() return T.range(4, 1) end, "range: upper bound and lower bound inconsistent with step sign")
    err(function() return T.range(1, 4, { bad = 1 }) end, "range: unknown option 'bad'")
    err(function() return T.empty_strided({ 2, 3 }, { 1 }) end, "empty_strided: mismatch in length of strides and shape")
    err(function() return T.split_with_sizes(T.arange(5), { 2, 2 }) end,
      "split_with_sizes: split_with_sizes expects split_sizes to sum exactly to 5")
    err(function() return T.slice_copy(x, 2, 1, 3, 0) end, "slice_copy: slice step must be positive")
    err(function() return T.slice_copy(x, 3) end, "slice_copy: Dimension out of range")
    err(function() return T.narrow_copy(x, 2, 1, 2, { bad = 1 }) end, "narrow_copy: unknown option 'bad'")
    err(function() return T.split_copy(x, 2, 2, { out = T.empty(0) }) end, "split_copy: out= is not supported")
    err(function() return T.select_scatter(x, T.ones(2), 1, 1) end,
      "select_scatter: expected src to have a size equal to the slice of self")
    err(function() return T.diagonal_scatter(x, T.ones(3)) end, "diagonal_scatter: expected src to have a size equal")
    err(function() return x:index_reduce(1, T.tensor { 1 }, T.ones(1, 3), "sum") end,
      "index_reduce: expected reduce to be one of prod, mean, amax or amin, got sum")
    err(function() return x:index_reduce(1, T.tensor { 1, 2 }, T.ones(1, 3), "prod") end,
      "index_reduce: number of indices (2) should be equal to source.size(dim) (1)")
    err(function() return x:index_reduce_(1, T.tensor { 1 }, T.ones(1, 3, f64), "prod") end,
      "index_reduce_: self (float32) and source (float64) must have the same dtype")
    err(function() return x:index_reduce(1, T.tensor { 1 }, T.ones(1, 3), "amax", { bad = 1 }) end,
      "index_reduce: unknown option 'bad'")
    err(function() return T.arange(4):reshape(2, 2):cumsum_(1, { dtype = T.float32 }) end,
      "cumsum_: Bad in-place call: input tensor dtype int64 and output tensor dtype float32 should match")
    err(function() return T.ones(2, 2):addmm_(T.ones(2, 2), T.ones(2, 2), { out = T.empty(0) }) end,
      "addmm_: unknown option 'out'")
    err(function() return T.ones(1, 2):addr_(T.ones(2), T.ones(2)) end, "addr_: output with shape")
    err(function() return T.is_conj(x, 1) end, "is_conj: unexpected argument #2")
    err(function() return T.lu_solve(x) end, "lu_solve")
  end)

  it("in-place shape ops give t the view's geometry; refused when t requires grad", function()
    local x = T.arange(6, { dtype = T.float32 }):view(2, 1, 3)
    local y = x:view(6)
    assert.are.equal(x, x:squeeze_(2))
    assert.are.same({ 2, 3 }, x:size():totable())
    assert.are.same({ 1, 2, 3 }, x:unsqueeze_(1):size():totable())
    local z = T.arange(6):view(2, 3)
    z:t_()
    assert.are.same({ { 0, 3 }, { 1, 4 }, { 2, 5 } }, z:tolist())
    assert.is_false(z:is_contiguous())
    z:transpose_(1, 2)
    assert.is_true(z:is_contiguous())
    z:swapaxes_(1, 2); z:swapdims_(1, 2)
    assert.are.same({ 2, 3 }, z:size():totable())
    local w = T.arange(4)
    w:as_strided_({ 2, 2 }, { 1, 2 })
    assert.are.same({ { 0, 2 }, { 1, 3 } }, w:tolist())
    assert.are.same({ 6 }, y:size():totable()) -- other views keep their geometry
    local err = require("specutil").err
    -- a leaf that requires grad is refused, as any in-place op on it
    err(function() T.ones(2, 1, { requires_grad = true }):squeeze_() end,
      "squeeze_: a leaf tensor that requires grad is being used in an in-place operation")
    err(function() T.ones(2, 3, { requires_grad = true })[1]:unsqueeze_(1) end,
      "unsqueeze_: a view of a leaf tensor that requires grad is being used in an in-place operation")
    err(function() w:as_strided_({ 5 }, { 1 }) end, "as_strided_: size [5] with strides [1] and offset 0 reaches outside the storage")
  end)

  -- torch 1.13's values: the in-place view ops on a non-leaf rebase its
  -- history (the node names are PyTorch's)
  it("in-place shape ops on a non-leaf are recorded by autograd", function()
    local function case(f, w, node)
      local x = T.ones(2, 3, { requires_grad = true })
      local y = x * 2
      f(y)
      assert.equal(node, y.grad_fn:name())
      assert.equal("MulBackward0", y.grad_fn.next_functions[1][1]:name())
      ;(y * w):sum():backward()
      return x.grad
    end
    local w32 = T.arange(0, 6, { dtype = T.float32 })
    -- torch: y.transpose_(0, 1); (y * arange(6).reshape(3, 2)).sum().backward()
    local g = case(function(y) y:transpose_(1, 2) end, w32:reshape(3, 2), "TransposeBackward1")
    assert.are.same({ { 0, 4, 8 }, { 2, 6, 10 } }, g:tolist())
    g = case(function(y) y:swapdims_(1, 2) end, w32:reshape(3, 2), "TransposeBackward1")
    assert.are.same({ { 0, 4, 8 }, { 2, 6, 10 } }, g:tolist())
    g = case(function(y) y:t_() end, T.ones(3, 2), "TBackward1")
    assert.are.same({ { 2, 2, 2 }, { 2, 2, 2 } }, g:tolist())
    g = case(function(y) y:unsqueeze_(1) end, w32:reshape(1, 2, 3), "UnsqueezeBackward1")
    assert.are.same({ { 0, 2, 4 }, { 6, 8, 10 } }, g:tolist())
    g = case(function(y) y:as_strided_({ 3, 2 }, { 1, 3 }) end, w32:reshape(3, 2), "AsStridedBackward1")
    assert.are.same({ { 0, 4, 8 }, { 2, 6, 10 } }, g:tolist())
    local x = T.ones(1, 3, { requires_grad = true })
    local y = x * 2
    y:squeeze_(1)
    assert.equal("SqueezeBackward3", y.grad_fn:name())
    y:unsqueeze_(2); y:squeeze_()
    assert.equal("SqueezeBackward2", y.grad_fn:name())
    ;(y * T.tensor { 1, 2, 3 }):sum():backward()
    assert.are.same({ { 2, 4, 6 } }, x.grad:tolist())
    -- a view reshaped in place, then written: the write reaches the base
    -- (torch: [[0, 3, 6], [3, 4, 5]])
    x = T.ones(2, 3, { requires_grad = true })
    y = x * 1
    local v = y[1]
    v:unsqueeze_(1); v:mul_(3)
    assert.are.same({ 1, 3 }, v:size():totable())
    ;(y * w32:reshape(2, 3)):sum():backward()
    assert.are.same({ { 0, 3, 6 }, { 3, 4, 5 } }, x.grad:tolist())
    -- in no_grad mode a leaf changes shape freely
    local z = T.ones(2, 3, { requires_grad = true })
    T.no_grad(function() z:t_() end)
    assert.are.same({ 3, 2 }, z:size():totable())
  end)
end)
