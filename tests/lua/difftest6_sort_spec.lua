-- Differences from PyTorch 1.13 found by the sixth round of differential
-- tests, sorting/selection/searching/set ops: ember against torch on the
-- same inputs, each with torch's value or error. Positions are 1-based in
-- ember (dims, indices): those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local list = U.flat

describe("difftest round 6: sorting, searching, set ops (torch 1.13)", function()
  it("isin finds the elements when the test elements hold NaN", function()
    local nan = 0 / 0
    local e = T.tensor({ 1, 2, nan, 4, 2 }, { dtype = T.float32 })
    local s = T.tensor({ 2, nan }, { dtype = T.float32 })
    -- torch.isin(e, s) -> [False, True, False, False, True] (NaN matches nothing)
    assert.same({ false, true, false, false, true }, list(T.isin(e, s)))
    assert.same({ true, false, true, true, false }, list(T.isin(e, s, { invert = true })))
    assert.same({ false, true, true }, list(T.isin(T.tensor({ 1, 2, 4 }, { dtype = T.float32 }),
      T.tensor({ 4, 2, nan }, { dtype = T.float32 }), { assume_unique = true })))
    -- only NaN to test against: nothing is in it
    assert.same({ false, false, false }, list(T.isin(T.tensor({ 1, nan, 0 }, { dtype = T.float64 }),
      T.tensor({ nan, nan }, { dtype = T.float64 }))))
    assert.same({ true, false }, list(T.isin(T.tensor({ math.huge, 1 }, { dtype = T.float32 }),
      T.tensor({ nan, math.huge, nan }, { dtype = T.float32 }))))
  end)

  it("searchsorted refuses a sorter of a non-integer dtype or of another shape", function()
    local s = T.tensor({ 3, 1, 2 }, { dtype = T.float32 })
    local v = T.tensor({ 2.5 }, { dtype = T.float32 })
    -- torch: "sorter must be a tensor of long dtype but got dtype Float"
    err(function() T.searchsorted(s, v, { sorter = T.tensor({ 2, 3, 1 }, { dtype = T.float32 }) }) end,
      "sorter must be a tensor of int64")
    -- torch: "boundary and sorter must have the same size, but got boundary tensor [2, 3]and got sorter tensor [1, 3]"
    local s2 = T.tensor({ { 1, 3, 2 }, { 4, 6, 5 } }, { dtype = T.float32 })
    err(function()
      T.searchsorted(s2, T.tensor({ { 2.5 }, { 5.5 } }, { dtype = T.float32 }),
        { sorter = T.tensor({ { 1, 3, 2 } }) })
    end, "boundary and sorter must have the same size, but got boundary tensor [2, 3] and sorter tensor [1, 3]")
    -- int64 (and int32, like every ember index) sorters work: torch gives 2 (+ 1)
    assert.same({ 3 }, list(T.searchsorted(s, v, { sorter = T.tensor({ 2, 3, 1 }) })))
    assert.same({ 3 }, list(T.searchsorted(s, v, { sorter = T.tensor({ 2, 3, 1 }, { dtype = T.int32 }) })))
  end)

  it("histc names a non-integer bins count", function()
    -- torch: "histc(): argument 'bins' must be int, not float"
    err(function() T.histc(T.tensor({ 1, 2, 3 }, { dtype = T.float32 }), { bins = 2.5 }) end,
      "histc: bins must be an integer, got 2.5")
    err(function() T.histc(T.tensor({ 1, 2, 3 }, { dtype = T.float32 }), { bins = 0 }) end,
      "histc: bins must be > 0, but got 0")
  end)
end)
