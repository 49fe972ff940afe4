-- Differences from PyTorch 1.13 found by the ninth round of differential
-- tests: comparison, logical, bitwise, clamping and classification ops with
-- type promotion (ember against torch on the same inputs), each with torch's
-- output or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("difftest round 9: comparisons and tests (torch 1.13)", function()
  it("equal compares the values in the promoted dtype", function()
    local i64 = T.tensor({ 16777217 }, { dtype = T.int64 })
    local f32 = T.tensor({ 16777216 }, { dtype = T.float32 })
    -- torch.equal(torch.tensor([16777217]), torch.tensor([16777216.])) -> True
    -- (the int64 value rounds to float32 first; was false)
    assert.is_true(T.equal(i64, f32))
    assert.is_true(i64:equal(f32))
    assert.is_true(T.equal(f32, i64))
    -- torch.equal(torch.tensor([2049]), torch.tensor([2048.], dtype=torch.half)) -> True
    assert.is_true(T.equal(T.tensor({ 2049 }, { dtype = T.int64 }), T.tensor({ 2048 }, { dtype = T.float16 })))
    -- torch.equal(torch.tensor([0.1], dtype=torch.half), torch.tensor([0.1])) -> False
    assert.is_false(T.equal(T.tensor({ 0.1 }, { dtype = T.float16 }), T.tensor({ 0.1 }, { dtype = T.float32 })))
    -- torch.equal(torch.tensor([255], dtype=torch.uint8), torch.tensor([-1], dtype=torch.int8)) -> False
    assert.is_false(T.equal(T.tensor({ 255 }, { dtype = T.uint8 }), T.tensor({ -1 }, { dtype = T.int8 })))
    -- shapes still decide first; NaN is unequal
    assert.is_false(T.equal(T.tensor({ 1, 2 }, { dtype = T.int64 }), T.tensor({ 1 }, { dtype = T.float32 })))
    assert.is_false(T.equal(T.tensor({ 0 / 0 }, { dtype = T.float32 }), T.tensor({ 0 / 0 }, { dtype = T.float64 })))
    err(function() T.equal(i64, 1) end, "equal: expected a tensor")
  end)

  it("fmax/fmin out= casts the result into out's dtype as the elementwise ops do", function()
    local x = T.tensor({ 1, 5 }, { dtype = T.int32 })
    local y = T.tensor({ 3, 2 }, { dtype = T.int32 })
    -- torch.fmax(x, y, out=torch.zeros(2)) -> tensor([3., 5.])
    -- (was refused: expected out to have dtype ember.int32, got ember.float32)
    local o = T.zeros({ 2 }, { dtype = T.float32 })
    assert.equal(o, T.fmax(x, y, { out = o }))
    assert.same({ 3, 5 }, o:tolist())
    -- torch.fmin(x, y, out=torch.zeros(2, dtype=torch.int8)) -> tensor([1, 2], dtype=torch.int8)
    local o8 = T.zeros({ 2 }, { dtype = T.int8 })
    T.fmin(x, y, { out = o8 })
    assert.same({ 1, 2 }, o8:tolist())
    -- torch.fmax(torch.tensor([1., nan]), torch.tensor([nan, nan]), out=torch.zeros(2, dtype=torch.float64))
    -- -> tensor([1., nan], dtype=torch.float64)
    local o64 = T.zeros({ 2 }, { dtype = T.float64 })
    T.fmax(T.tensor({ 1, 0 / 0 }, { dtype = T.float32 }), T.tensor({ 0 / 0, 0 / 0 }, { dtype = T.float32 }), { out = o64 })
    local v = o64:tolist()
    assert.equal(1, v[1])
    assert.is_true(v[2] ~= v[2])
    -- torch.fmax(x.float(), y, out=torch.zeros(2, dtype=torch.int32)):
    -- result type Float can't be cast to the desired output type Int
    err(function() T.fmax(x:float(), y, { out = T.zeros({ 2 }, { dtype = T.int32 }) }) end,
      "fmax: result type Float can't be cast to the desired output type Int")
    err(function() T.fmin(x, y, { out = T.zeros({ 3 }, { dtype = T.int32 }) }) end,
      "fmin: output with shape [3] doesn't match the broadcast shape [2]")
  end)
end)
