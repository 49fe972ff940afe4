-- t[key] with index tensors and bool masks on the engine's fast paths
-- (engine/src/ops/index.c, docs/indexing.md "How it runs"): a single mask
-- over a contiguous run (compaction), a mask's offsets, rows of blocks
-- gathered or put, t[mask] = number as masked_fill_. Every case is checked
-- against another way of computing it (index_select, nonzero, take,
-- masked_scatter_, where, or element loops here), on contiguous and
-- strided tensors, and on sizes past one mask run (2^18 elements) and the
-- kernels' parallel threshold.
local T = require "ember"

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for _, x in ipairs(v) do walk(x) end
    else out[#out + 1] = v end
  end
  walk(t:tolist())
  return out
end

local function same(a, b)
  assert.same(a.shape:totable(), b.shape:totable())
  assert.is_true(T.equal(a, b))
end

-- x[mask] by another road: the mask's dims d..d+k-1 of x merged into one,
-- then index_select with the positions nonzero gives for the flat mask
local function ref_mask(x, m, d)
  local shape, k = x.shape:totable(), m.ndim
  local merged, n = {}, 1
  for i = 1, d - 1 do merged[#merged + 1] = shape[i] end
  for i = d, d + k - 1 do n = n * shape[i] end
  merged[#merged + 1] = n
  for i = d + k, #shape do merged[#merged + 1] = shape[i] end
  local pos = T.nonzero(m:reshape(-1)):view(-1)
  return x:contiguous():reshape(merged):index_select(d, pos)
end

-- a bool mask with about half the elements true
local function mask(...) return T.rand(...):lt(0.5) end

describe("t[mask] reads", function()
  it("a mask over the whole tensor is masked_select, in row-major order", function()
    local x = T.rand(3, 4, 5)
    local m = mask(3, 4, 5)
    same(x[m], x:masked_select(m))
    same(x[m], ref_mask(x, m, 1))
    -- past one run of the mask (2^18), on several threads
    local big, bm = T.rand(700001), mask(700001)
    same(big[bm], ref_mask(big, bm, 1))
    local all, none = T.ones(700001, { dtype = T.bool }), T.zeros(700001, { dtype = T.bool })
    same(big[all], big)
    assert.same({ 0 }, big[none].shape:totable())
  end)

  it("non-contiguous sources and masks", function()
    local x = T.rand(6, 7)
    local m = mask(7, 6)
    same(x:t()[m], ref_mask(x:t(), m, 1))
    local s = T.rand(6, 14)[{ {}, { 1, -1, 2 } }]  -- strided columns
    local m2 = mask(6, 7)
    same(s[m2], ref_mask(s, m2, 1))
    local mt = mask(7, 6):t()                       -- a transposed mask
    same(x[mt], ref_mask(x, mt:contiguous(), 1))
    local xb = T.rand(600, 1000):t()                -- large, transposed
    local mb = mask(1000, 600)
    same(xb[mb], ref_mask(xb, mb, 1))
  end)

  it("masks of partial rank, before, between and after other items", function()
    local x = T.rand(4, 5, 6)
    local m1, m2, m56 = mask(4), mask(5), mask(5, 6)
    same(x[m1], ref_mask(x, m1, 1))                   -- [count, 5, 6]
    local m45 = mask(4, 5)
    same(x[m45], ref_mask(x, m45, 1))                 -- [count, 6]
    same(x[{ {}, m56 }], ref_mask(x, m56, 2))         -- [4, count]: compacted per row
    same(x[{ {}, m2 }], ref_mask(x, m2, 2))           -- [4, count, 6]
    local m6 = mask(6)
    same(x[{ "...", m6 }], ref_mask(x, m6, 3))
    -- an integer or a range first: the mask applies to the view
    same(x[{ 2, m56 }], ref_mask(x[2], m56, 1))
    same(x[{ { 2, 3 }, m56 }], ref_mask(x[{ { 2, 3 } }], m56, 2))
    same(x[{ -1, {}, m6 }], ref_mask(x[-1], m6, 2))
    -- large rows: every row past one mask run
    local w = T.rand(3, 300000)
    local mw = mask(300000)
    same(w[{ {}, mw }], ref_mask(w, mw, 2))
    same(w:t():contiguous():t()[{ {}, mw }], ref_mask(w, mw, 2))
  end)

  it("a mask with no true element, and empty dims", function()
    local x = T.rand(4, 5, 6)
    assert.same({ 0, 6 }, x[T.zeros(4, 5, { dtype = T.bool })].shape:totable())
    assert.same({ 4, 0 }, x[{ {}, T.zeros(5, 6, { dtype = T.bool }) }].shape:totable())
    local e = T.rand(0, 3)
    assert.same({ 0 }, e[T.zeros(0, 3, { dtype = T.bool })].shape:totable())
    assert.same({ 0, 3 }, e[T.zeros(0, { dtype = T.bool })].shape:totable())
  end)

  it("every dtype size (1, 2, 4, 8 bytes)", function()
    local m = mask(3, 70000)
    for _, dt in ipairs { T.bool, T.int8, T.float16, T.int32, T.float64, T.int64 } do
      local x = T.rand(3, 70000):mul(100):to(dt)
      same(x[m], x:masked_select(m))
      same(x:t()[m:t()], ref_mask(x:t(), m:t():contiguous(), 1))
      local idx = T.tensor { 3, 1, -1, 3 }
      same(x[{ idx }], x:index_select(1, idx))
      same(x[{ {}, T.tensor { 70000, 1, -2 } }], x:index_select(2, T.tensor { 70000, 1, 69999 }))
    end
  end)

  it("a mask with an index tensor: the mask's count broadcasts with it", function()
    local x = T.rand(5, 4)
    local m = T.tensor { true, false, true, true, false }
    local pos = T.nonzero(m):view(-1)
    same(x[{ m, T.tensor { 4, 1, -1 } }], x[{ pos, T.tensor { 4, 1, 4 } }])
    same(x[{ m, T.tensor { 2 } }], x[{ pos, T.tensor { 2 } }])
    same(x:t()[{ {}, m }], x:t()[{ {}, pos }])
    same(x:t()[{ T.tensor { 1, 3, 4 }, m }], x:t()[{ T.tensor { 1, 3, 4 }, pos }])
    local y = T.rand(3, 5, 2)
    same(y[{ T.tensor { 1, 3, 2 }, m, 2 }], y[{ T.tensor { 1, 3, 2 }, pos, 2 }])
    assert.has_error(function() return x[{ m, T.tensor { 1, 2 } }] end,
      "index: shapes [3] and [2] cannot be broadcast: the size of a (3) must match the size of b (2) at non-singleton dimension 1")
  end)
end)

describe("t[index tensors] reads", function()
  it("rows: index_select, with negatives, duplicates and int32", function()
    local G = T.rand(5000, 300)
    local idx = T.randint(-5000, 5001, { 3000 })
    idx = idx + idx:eq(0):long()                   -- no 0 position
    same(G[idx], G:index_select(1, idx))
    same(G[idx:int()], G:index_select(1, idx))
    local dup = T.tensor { 7, 7, -1, 7, 1 }
    same(G[dup], G:index_select(1, dup))
    same(G[{ {}, dup }], G:index_select(2, dup))      -- outer dims, no inner
    same(G[{ dup, { 2, 40, 3 } }], G:index_select(1, dup)[{ {}, { 2, 40, 3 } }])
    local Gt = T.rand(300, 5000):t()                  -- strided rows
    same(Gt[idx], Gt:index_select(1, idx))
    same(Gt[{ {}, dup }], Gt:index_select(2, dup))
    local i2 = T.tensor { { 1, 2 }, { -1, 4 } }       -- an index of 2 dims
    same(G[i2], G:index_select(1, i2:view(-1)):view(2, 2, 300))
  end)

  it("a 2-d gather G[{i, j}] is take of the flat positions", function()
    local G = T.rand(4000, 16)
    local i = T.randint(1, 4001, { 100000 })
    local j = T.randint(1, 17, { 100000 })
    same(G[{ i, j }], G:take((i - 1) * 16 + j))
    same(G[{ i, -j }], G:take((i - 1) * 16 + 17 - j))
    same(G:t()[{ j, i }], G:take((i - 1) * 16 + j))
    -- broadcasting: (3, 1) with (4,) gives (3, 4)
    local a, b = T.tensor { { 1 }, { 3 }, { 4000 } }, T.tensor { 1, 16, 2, 2 }
    local r = G[{ a, b }]
    assert.same({ 3, 4 }, r.shape:totable())
    for p = 1, 3 do
      for q = 1, 4 do
        assert.equal(G[{ a[{ p, 1 }]:item(), b[q]:item() }]:item(), r[{ p, q }]:item())
      end
    end
  end)

  it("places B as PyTorch does: in place when adjacent, first when not", function()
    local y = T.arange(2 * 3 * 4 * 5):reshape(2, 3, 4, 5)
    local i, j = T.tensor { 1, 3, 2 }, T.tensor { 4, 1, 2 }
    local r = y[{ {}, i, j }]                         -- [2, 3, 5]
    assert.same({ 2, 3, 5 }, r.shape:totable())
    local s = y[{ i:clamp(1, 2), {}, j }]             -- separated: [3, 3, 5]
    assert.same({ 3, 3, 5 }, s.shape:totable())
    for p = 1, 3 do
      for a = 1, 3 do
        for c = 1, 5 do
          assert.equal(y[{ 1, i[p]:item(), j[p]:item(), c }]:item(), r[{ 1, p, c }]:item())
          assert.equal(y[{ math.min(i[p]:item(), 2), a, j[p]:item(), c }]:item(),
                       s[{ p, a, c }]:item())
        end
      end
    end
    local u = y[{ 2, {}, i, { 2, 4 } }]               -- integer, range, index: [3, 3, 3]
    same(u, y[2]:index_select(2, i)[{ {}, {}, { 2, 4 } }])
  end)

  it("checks every position before reading", function()
    local G = T.rand(5000, 300)
    local idx = T.randint(1, 5001, { 3000 })
    idx[3000] = 5001
    assert.has_error(function() return G[idx] end,
      "index 5001 is out of bounds for dimension 1 with size 5000")
    assert.has_error(function() return G[{ idx:clamp(1, 10), T.tensor { 0 } }] end,
      "index 0 is out of bounds for dimension 2 with size 300 (positions are 1-based)")
  end)
end)

describe("t[key] = value writes", function()
  it("t[mask] = number is masked_fill_ (also partial rank and strided)", function()
    local x = T.rand(700001)
    local m = mask(700001)
    local want = T.where(m, T.tensor(0.0), x)
    x[m] = 0
    same(x, want)
    local y = T.rand(4, 5, 6)
    local m45, m6 = mask(4, 5), mask(6)
    want = T.where(m45:view(4, 5, 1), T.tensor(-1.0), y)
    y[m45] = -1
    same(y, want)
    want = y:clone()
    want[{ {}, 2 }] = T.where(m6, T.tensor(7.0), y[{ {}, 2 }])
    y[{ {}, 2, m6 }] = 7
    same(y, want)
    local z = T.rand(6, 8):t()                        -- a transposed target
    local mz = mask(8, 6)
    want = T.where(mz, T.tensor(3.0), z)
    z[mz] = 3
    same(z, want)
    local b = T.tensor { true, false, true }          -- the mask is the target
    b[b] = false
    assert.same({ false, false, false }, b:tolist())
    local i8 = T.tensor({ 1, 2, 3, 4 }, { dtype = T.int8 })
    i8[T.tensor { true, false, false, true }] = -5
    assert.same({ -5, 2, 3, -5 }, i8:tolist())
  end)

  it("t[mask] = tensor writes the values in order, broadcasting", function()
    local x = T.rand(3, 4, 5)
    local m = mask(3, 4)
    local n = m:sum():item()
    local want = x:clone():masked_scatter_(m:view(3, 4, 1):expand(3, 4, 5),
                                           T.arange(n * 5):double():float())
    x[m] = T.arange(n * 5):float():view(n, 5)
    same(x, want)
    local row = T.tensor { 1, 2, 3, 4, 5 }
    local y = T.zeros(3, 4, 5)
    y[m] = row                                        -- broadcast over the count
    for p = 1, 3 do
      for q = 1, 4 do
        assert.same(m[{ p, q }]:item() and { 1, 2, 3, 4, 5 } or { 0, 0, 0, 0, 0 },
                    y[{ p, q }]:tolist())
      end
    end
    local v = T.rand(100000)
    local mv = mask(100000)
    local vals = T.rand(mv:sum():item())
    want = v:clone():masked_scatter_(mv, vals)
    v:t()[mv] = vals
    same(v, want)
  end)

  it("G[idx] = rows is index_copy_ (rows of blocks, strided targets and values)", function()
    local G = T.rand(5000, 64)
    local idx = T.randperm(5000)[{ { 1, 3000 } }]
    local rows = T.rand(3000, 64)
    local want = G:clone():index_copy_(1, idx, rows)
    G[idx] = rows
    same(G, want)
    local Gt = T.rand(64, 5000):t()                   -- a strided target
    want = Gt:clone():index_copy_(1, -idx:neg(), rows:t():contiguous():t())
    Gt[-idx:neg()] = rows:t():contiguous():t()        -- and a strided value
    same(Gt, want)
    local H = T.zeros(6, 3)
    H[T.tensor { 2, -1 }] = T.tensor { 1, 2, 3 }      -- one row broadcast
    assert.same({ { 0, 0, 0 }, { 1, 2, 3 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 1, 2, 3 } },
                H:tolist())
    H[{ {}, T.tensor { 3 } }] = T.tensor(9)           -- a 0-d value, outer dims
    assert.same({ 9, 9, 9, 9, 9, 9 }, H[{ {}, 3 }]:tolist())
    H[{ T.tensor { 1, 1, 2 }, T.tensor { 1, 2, 3 } }] = 5
    assert.same({ 5, 5, 5 }, { H[{ 1, 1 }]:item(), H[{ 1, 2 }]:item(), H[{ 2, 3 }]:item() })
  end)

  it("a value whose strides over B do not flatten is read through a copy", function()
    local G = T.zeros(4, 4)
    local i = T.tensor { { 1, 2, 3 }, { 4, 1, 2 } }
    local j = T.tensor { { 1, 1, 1 }, { 2, 3, 4 } }
    local v = T.arange(6):float():view(3, 2):t()      -- strides (1, 2) over B = (2, 3)
    G[{ i, j }] = v
    for p = 1, 2 do
      for q = 1, 3 do
        assert.equal(v[{ p, q }]:item(), G[{ i[{ p, q }]:item(), j[{ p, q }]:item() }]:item())
      end
    end
  end)

  it("repeated positions: one of the writes wins; accumulate adds them all", function()
    local G = T.zeros(5, 3)
    local rows = T.tensor { { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 } }
    G[T.tensor { 2, 2, 4 }] = rows
    local r2 = G[2]:tolist()
    assert.is_true(r2[1] == 1 or r2[1] == 2)
    assert.same({ r2[1], r2[1], r2[1] }, r2)
    assert.same({ 3, 3, 3 }, G[4]:tolist())
    local big = T.zeros(10, 200)
    local idx = T.randint(1, 11, { 20000 })
    local vals = T.rand(20000, 200)
    big[idx] = vals
    for p = 1, 10 do  -- each element is some write's value at its position
      local at = T.nonzero(idx:eq(p)):view(-1)
      if at:numel() > 0 then
        local cands = vals:index_select(1, at)
        assert.is_true(cands:eq(big[p]:view(1, 200)):any(1):all():item())
      end
    end
    local acc = T.zeros(5, 3)
    acc:index_put_({ T.tensor { 2, 2, 4 } }, rows, true)
    assert.same({ 3, 3, 3 }, acc[2]:tolist())
  end)

  it("checks every position before writing; an overlapping value is read first", function()
    local G = T.rand(5000, 300)
    local before = G:clone()
    local idx = T.randint(1, 5001, { 3000 })
    idx[3000] = -5001
    assert.has_error(function() G[idx] = T.rand(3000, 300) end,
      "index -5001 is out of bounds for dimension 1 with size 5000")
    assert.has_error(function() G[idx] = 0 end,
      "index -5001 is out of bounds for dimension 1 with size 5000")
    same(G, before)
    local x = T.arange(10):float()
    x[T.tensor { 2, 3, 4 }] = x[{ { 1, 3 } }]         -- the value is a view of x
    assert.same({ 0, 0, 1, 2, 4, 5, 6, 7, 8, 9 }, x:tolist())
    local y = T.arange(10):float()
    local m = y:gt(4)
    y[m] = y[{ { 1, 5 } }]
    assert.same({ 0, 1, 2, 3, 4, 0, 1, 2, 3, 4 }, y:tolist())
  end)

  it("refuses a tensor written into a target with internal overlap (a value fill is allowed)", function()
    local e = T.zeros(1, 4):expand(3, 4)
    assert.has_error(function() e[T.tensor { 1 }] = T.ones(1, 4) end)
    e[T.tensor { true, false, true }] = 1 -- PyTorch allows value fills
    assert.is_true(T.equal(e, T.ones(3, 4)))
  end)
end)

describe("index_copy_ and index_fill_ put rows of blocks too", function()
  -- with distinct positions: the written slices read back through
  -- index_select, and the slices not written are unchanged
  local function check_copy(G, dim, idx, src)
    local before = G:clone()
    G:index_copy_(dim, idx, src)
    same(G:index_select(dim, idx), src:contiguous())
    local keep = T.ones(G:size(dim), { dtype = T.bool })
    keep[idx] = false
    same(G:index_select(dim, T.nonzero(keep):view(-1)),
         before:index_select(dim, T.nonzero(keep):view(-1)))
  end

  it("along the first, a middle and the last dim, contiguous or strided", function()
    local idx = T.randperm(5000)[{ { 1, 3000 } }]
    check_copy(T.rand(5000, 64), 1, idx, T.rand(3000, 64))
    check_copy(T.rand(64, 5000):t(), 1, -idx:neg(), T.rand(64, 3000):t())
    check_copy(T.rand(3, 5000, 4), 2, idx, T.rand(3, 3000, 4))
    check_copy(T.rand(40, 5000), 2, idx, T.rand(40, 3000))
    check_copy(T.rand(6, 4), 1, T.tensor { -1, 2 }, T.rand(2, 4))
    local v = T.arange(5):double()
    v:index_copy_(1, T.tensor(3), T.tensor(9, { dtype = T.float64 })) -- 0-d index, source
    assert.same({ 0, 1, 9, 3, 4 }, v:tolist())
  end)

  it("index_fill_ writes the number into every selected slice", function()
    local G = T.rand(5000, 64):t()
    local idx = T.tensor { 7, -1, 7, 4000 }
    G:index_fill_(2, idx, -2)
    for _, c in ipairs { 7, 5000, 4000 } do
      assert.is_true(G[{ {}, c }]:eq(-2):all():item())
    end
    assert.is_false(G[{ {}, 8 }]:eq(-2):any():item())
    local b = T.zeros(3, 2, { dtype = T.bool })
    b:index_fill_(1, T.tensor { 2 }, true)
    assert.same({ { false, false }, { true, true }, { false, false } }, b:tolist())
  end)
end)

describe("autograd through the fast paths", function()
  it("x[mask], x[{ {}, mask }], G[idx] and G[{ i, j }] send gradients back", function()
    local x = T.rand(4, 5, { requires_grad = true })
    local m = mask(4, 5)
    x[m]:sum():backward()
    same(x.grad, m:float())
    local y = T.rand(4, 5, { requires_grad = true })
    local m5 = mask(5)
    local r = y[{ {}, m5 }] * 2
    r:sum():backward()
    same(y.grad, m5:float():expand(4, 5) * 2)
    local G = T.rand(6, 3, { requires_grad = true })
    local idx = T.tensor { 2, 2, -1 }
    G[idx]:sum():backward()
    assert.same({ { 0, 0, 0 }, { 2, 2, 2 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 1, 1, 1 } },
                G.grad:tolist())
    local H = T.rand(6, 3, { requires_grad = true })
    H[{ T.tensor { 1, 1 }, T.tensor { 3, 3 } }]:sum():backward()
    assert.equal(2, H.grad[{ 1, 3 }]:item())
    assert.equal(2, H.grad:sum():item())
  end)

  it("writes through a mask or positions record what they overwrote", function()
    local w = T.rand(4, 5, { requires_grad = true })
    local z = w * 1
    local m = mask(4, 5)
    z[m] = 0
    z:sum():backward()
    same(w.grad, m:logical_not():float())
    local a = T.rand(6, 3, { requires_grad = true })
    local v = T.rand(2, 3, { requires_grad = true })
    local b = a * 1
    b[T.tensor { 2, 5 }] = v
    local c = b * 3
    c:sum():backward()
    assert.same({ 3, 3, 3 }, v.grad[1]:tolist())
    assert.same({ 0, 0, 0 }, a.grad[2]:tolist())
    assert.same({ 3, 3, 3 }, a.grad[1]:tolist())
  end)
end)
