-- Differences from PyTorch 1.13 found by the ninth round of differential
-- tests (numeric and statistical helpers: cov, corrcoef, trapezoid,
-- gradient, histogram, diff), each with torch's value or
-- error. Positions are 1-based in ember (dims, indices): those shifts are
-- not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = { dtype = T.float64 }
local function t(v, dt) return T.tensor(v, { dtype = dt or T.float64 }) end
local function shape(x) return table.concat(x.shape:totable(), ",") end

describe("difftest round 9 (numeric helpers, torch 1.13)", function()
  it("cov and corrcoef keep complex input (the conjugate product, real weights)", function()
    local z = T.complex(t { { 1, 0, 3 }, { 3, 1, 0 } }, t { { 0, 2, 0 }, { 0, 0, 1 } })
    -- torch.cov(z) -> [[3.6667+0j, -1.5-1.1667j], [-1.5+1.1667j, 2.6667+0j]] (complex128)
    local c = T.cov(z)
    assert.equal(T.complex128, c.dtype)
    U.close_list(T.view_as_real(c), { 11 / 3, 0, -1.5, -7 / 6, -1.5, 7 / 6, 8 / 3, 0 }, 1e-12, "cov")
    -- torch.corrcoef(z) -> [[1, -0.4797-0.3731j], [-0.4797+0.3731j, 1]]
    local r = T.corrcoef(z)
    assert.equal(T.complex128, r.dtype)
    U.close_list(T.view_as_real(r), { 1, 0, -0.4797016118, -0.3731012536, -0.4797016118, 0.3731012536, 1, 0 }, 1e-9,
      "corrcoef")
    -- torch.cov(z, aweights=[1, 2, 0.5]) -> [[3.5714, -0.5714-1.4286j], [..., 2.1429]]
    local ca = T.cov(z, { aweights = t { 1, 2, 0.5 } })
    U.close_list(T.view_as_real(ca), { 25 / 7, 0, -4 / 7, -10 / 7, -4 / 7, 10 / 7, 15 / 7, 0 }, 1e-12, "cov aweights")
  end)

  it("cov refuses weights that sum to zero", function()
    local x = t { { 1, 2, 4, 7 }, { 0, 3, 1, 5 } }
    -- torch: "cov(): weights sum to zero, can't be normalized"
    err(function() T.cov(x, { aweights = t { 0, 0, 0, 0 } }) end, "cov: weights sum to zero, can't be normalized")
    err(function() T.cov(x, { fweights = t({ 0, 0, 0, 0 }, T.int64) }) end, "weights sum to zero")
    err(function() T.cov(T.zeros(2, 0, f64), { fweights = t({}, T.int64) }) end, "weights sum to zero")
    err(function() T.cov(x, { fweights = t({ true, true, true, true }, T.bool) }) end,
      "cov: expected fweights to have integral dtype, got bool")
  end)

  it("trapezoid and cumulative_trapezoid take an x of fewer dims than y (leading 1s)", function()
    local y = T.arange(24, f64):reshape(2, 3, 4)
    local x = t { { 0, 1, 3, 6 }, { 0, 1, 2, 3 }, { 1, 2, 3, 4 } }
    -- torch.trapezoid(y, x) -> [[11, 16.5, 28.5], [83, 52.5, 64.5]]
    assert.same({ { 11, 16.5, 28.5 }, { 83, 52.5, 64.5 } }, T.trapezoid(y, x):tolist())
    -- torch.cumulative_trapezoid(y, x)[1] -> [[12.5, 39.5, 83], [16.5, 34, 52.5], [20.5, 42, 64.5]]
    local c = T.cumulative_trapezoid(y, x)
    assert.equal("2,3,3", shape(c))
    assert.same({ { 12.5, 39.5, 83 }, { 16.5, 34, 52.5 }, { 20.5, 42, 64.5 } }, c[2]:tolist())
  end)

  it("trapezoid: x's length, bool and 0-d inputs are refused clearly; no samples keep y's dtype", function()
    local y = t { { 1, 2, 4, 7 }, { 0, 3, 1, 5 } }
    -- torch: "trapezoid: There must be one `x` value for each sample point"
    err(function() T.trapezoid(y, t { 0, 1, 3 }) end, "trapezoid: there must be one `x` value for each sample point")
    err(function() T.cumulative_trapezoid(y, t { 0, 1, 3 }) end, "cumulative_trapezoid: there must be one `x` value")
    -- torch: "trapezoid: received a bool input for `y`, but bool is not supported"
    err(function() T.trapezoid(t({ true, false }, T.bool)) end, "trapezoid: received a bool input")
    err(function() T.cumulative_trapezoid(t({ true, false }, T.bool)) end, "cumulative_trapezoid: received a bool input")
    err(function() T.trapezoid(y, t({ true, false, true, true }, T.bool)) end, "bool is not supported")
    -- torch: "Dimension specified as -1 but tensor has no dimensions"
    err(function() T.trapezoid(t(5)) end, "trapezoid: expected y to have at least one dimension")
    -- torch.trapezoid(zeros(3, 0, dtype=long)) -> int64 zeros(3);
    -- cumulative_trapezoid of it -> float32 (3, 0)
    local z = T.trapezoid(T.zeros(3, 0, { dtype = T.int64 }))
    assert.equal(T.int64, z.dtype); assert.equal("3", shape(z))
    local cz = T.cumulative_trapezoid(T.zeros(3, 0, { dtype = T.int64 }))
    assert.equal(T.float32, cz.dtype); assert.equal("3,0", shape(cz))
  end)

  it("gradient refuses a repeated dim and checks coordinate tensors", function()
    local g = t { { 1, 2, 4, 8, 16 }, { 1, 3, 9, 27, 81 }, { 0, 1, 0, 1, 0 } }
    -- torch: "dim 0 appears multiple times in the list of dims"
    err(function() T.gradient(g, { dim = { 1, 1 } }) end, "gradient: dim 1 appears multiple times in the list of dims")
    err(function() T.gradient(g, { dim = { 2, -1 } }) end, "appears multiple times")
    -- torch: a broadcast error; ember names the coordinates' length
    err(function() T.gradient(g, { spacing = { t { 0, 1, 1.5, 3 } }, dim = 2 }) end,
      "gradient: expected the coordinates for dim 2 to have 5 elements (the input's size), got 4")
    -- torch: "torch.gradient expected each element of spacing to have one dimension, but got an element with 2 dimensions!"
    err(function() T.gradient(g, { spacing = { t { { 0, 1, 3 } }, t { 0, 1, 2, 3, 4 } } }) end,
      "gradient: expected each element of spacing to have one dimension, but got an element with 2 dimensions")
  end)

  it("gradient keeps complex input and promotes with floating coordinates", function()
    -- torch.gradient(tensor([1, 2j, 3]), spacing=2.) -> [-0.5+1j, 0.5+0j, 1.5-1j]
    local r = T.gradient(T.complex(t { 1, 0, 3 }, t { 0, 2, 0 }), { spacing = 2 })[1]
    assert.equal(T.complex128, r.dtype)
    assert.same({ { -0.5, 1 }, { 0.5, 0 }, { 1.5, -1 } }, T.view_as_real(r):tolist())
    -- torch.gradient(float32 [1, 4, 9, 16], spacing=[float64 [0, 1, 2, 4]], edge_order=2)
    -- -> float64 [2, 4, 4.5, 2.5]
    local y32 = t({ 1, 4, 9, 16 }, T.float32)
    local g = T.gradient(y32, { spacing = { t { 0, 1, 2, 4 } }, edge_order = 2 })[1]
    assert.equal(T.float64, g.dtype)
    assert.same({ 2, 4, 4.5, 2.5 }, g:tolist())
    -- int64 input with float64 coordinates -> float64 [3, 4, 4.5, 3.5]
    local gi = T.gradient(t({ 1, 4, 9, 16 }, T.int64), { spacing = { t { 0, 1, 2, 4 } } })[1]
    assert.equal(T.float64, gi.dtype)
    assert.same({ 3, 4, 4.5, 3.5 }, gi:tolist())
    -- integer coordinates keep the input's floating dtype: float32
    assert.equal(T.float32, T.gradient(y32, { spacing = { t({ 0, 1, 2, 4 }, T.int64) } })[1].dtype)
  end)

  it("histogram: no data gives the range [0, 1]; a given empty range widens by 0.5", function()
    -- torch.histogram(zeros(0), 3) -> hist [0, 0, 0], edges [0, 1/3, 2/3, 1]
    local h, e = T.histogram(T.zeros(0), 3)
    assert.same({ 0, 0, 0 }, h:tolist())
    U.close_list(e, { 0, 1 / 3, 2 / 3, 1 }, 1e-6, "edges")
    -- torch.histogram(x, 3, range=(1, 1)) -> hist [1, 1, 1], edges [0.5, 0.8333, 1.1667, 1.5]
    local x = t({ 0.5, 1, 1.5, 2.5, 3, -1, 7, 2, 2 }, T.float32)
    h, e = T.histogram(x, 3, { range = { 1, 1 } })
    assert.same({ 1, 1, 1 }, h:tolist())
    U.close_list(e, { 0.5, 5 / 6, 7 / 6, 1.5 }, 1e-6, "edges")
  end)

  it("histogram refuses a single bin edge and a range with bin edges", function()
    local x = t({ 0.5, 1, 1.5 }, T.float32)
    -- torch: "torch.histogram(): bins must be > 0, but got 0 for dimension 0"
    err(function() T.histogram(x, t({ 1 }, T.float32)) end,
      "histogram: bins tensor should have one dimension and at least 2 elements (one bin), got shape [1]")
    -- torch: histogram(Tensor, Tensor, range=tuple) is not a signature
    err(function() T.histogram(x, t({ 0, 1, 2 }, T.float32), { range = { 0, 3 } }) end,
      "histogram: range cannot be given with a tensor of bin edges")
    err(function() T.histogram(x, 3, { range = { 0 } }) end, "histogram: range should be a table of two numbers")
  end)

  it("diff names a prepend/append of the wrong rank", function()
    -- torch: "diff expects prepend or append to be the same dimension as input"
    err(function() T.diff(t { { 1, 2 }, { 3, 4 } }, 1, -1, t { 0, 1 }) end,
      "diff: expects prepend or append to have the same number of dimensions as input (2), got 1")
  end)
end)
