-- T.histogramdd against torch 1.13 (tests/fixtures/gen_histogramdd.py):
-- counts, weights, density, ranges and edge tensors, batched points, points
-- on the edges; and the refusals.
local T = require "ember"
local S = require "specutil"
local CASES = dofile("tests/fixtures/histogramdd_cases.lua")

describe("T.histogramdd", function()
  it("matches torch.histogramdd", function()
    assert.is_true(#CASES >= 20)
    for i, c in ipairs(CASES) do
      local what = "case " .. i
      local bins = c.bins
      if c.edge_bins then
        bins = {}
        for d, e in ipairs(c.edge_bins) do bins[d] = S.fixture(e) end
      end
      local o = { range = c.range, density = c.density }
      if c.weight then o.weight = S.fixture(c.weight) end
      local hist, edges = T.histogramdd(S.fixture(c.x), bins, o)
      S.close_fixture(hist, c.hist, what .. ": hist", c.hist.dtype == "float32" and 1e-5 or 1e-12)
      assert.equal(#c.edges, #edges, what .. ": the number of edge tensors")
      for d = 1, #edges do S.close_fixture(edges[d], c.edges[d], what .. ": edges " .. d) end
    end
  end)

  it("takes bins in the options table and works as a method", function()
    local x = T.randn(50, 2, { dtype = T.float64 })
    local h1 = T.histogramdd(x, { 3, 4 })
    local h2 = x:histogramdd({ bins = { 3, 4 } })
    assert.is_true(T.equal(h1, h2))
    assert.equal(50, h1:sum():item())
  end)

  it("refuses bad arguments by name", function()
    local x = T.randn(10, 2)
    S.err(function() T.histogramdd(x:long(), { 2, 2 }) end, "histogramdd: not implemented for int64 tensors")
    S.err(function() T.histogramdd(x, { 2, 2 }, { range = { 0, 1 } }) end,
      "histogramdd: for a 2-dimensional histogram range should have 4 elements, but got 2")
    S.err(function() T.histogramdd(x, { 2, 2, 2 }) end, "histogramdd: expected 2 bin specifications")
    S.err(function() T.histogramdd(x, { 2, 0 }) end, "histogramdd: the bin count of dim 2 must be a positive integer")
    S.err(function() T.histogramdd(T.tensor({ { 0 / 0, 1 } }), 2) end, "histogramdd: range of [nan, nan] is not finite")
    S.err(function() T.histogramdd(x, { T.ones(3), T.ones(3) }, { range = { 0, 1, 0, 1 } }) end,
      "histogramdd: range cannot be given with tensors of bin edges")
    S.err(function() T.histogramdd(x, 2, { weight = T.ones(3) }) end, "histogramdd: expected weight to have the input's shape")
    S.err(function() T.histogramdd(x) end, "histogramdd: bins is required")
    S.err(function() T.histogramdd(x, 2, { bin = 2 }) end, "histogramdd: unknown option 'bin'")
  end)
end)
