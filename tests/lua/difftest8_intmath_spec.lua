-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests, integer and rounding semantics of the elementwise ops (ember
-- against torch on the same inputs), each with torch's output or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("difftest round 8: integer arithmetic (torch 1.13)", function()
  it("addcmul/addcdiv compute in the tensors' common dtype; value is converted to it", function()
    local a = T.tensor { 1, 2, 3 }
    -- torch.addcmul(a, a, a, value=0.5) -> tensor([1, 2, 3]) (int64: 0.5 truncates to 0)
    local r = T.addcmul(a, a, a, { value = 0.5 })
    assert.equal(T.int64, r.dtype)
    assert.same({ 1, 2, 3 }, r:tolist())
    -- value=1.7 -> tensor([ 2,  6, 12]); value=-0.5 -> tensor([1, 2, 3])
    assert.same({ 2, 6, 12 }, T.addcmul(a, a, a, { value = 1.7 }):tolist())
    r = T.addcmul(a, a, a, { value = -0.5 })
    assert.equal(T.int64, r.dtype)
    assert.same({ 1, 2, 3 }, r:tolist())
    -- a.clone().addcmul_(a, a, value=2.5) -> tensor([ 3, 10, 21]) (was refused: Float into Long)
    assert.same({ 3, 10, 21 }, a:clone():addcmul_(a, a, { value = 2.5 }):tolist())
    -- a Python bool is a number: torch.addcmul(a, a, a, value=True) -> tensor([ 2,  6, 12])
    assert.same({ 2, 6, 12 }, T.addcmul(a, a, a, { value = true }):tolist())
    local x = T.tensor({ 1.0, 2.0 }, { dtype = T.float32 })
    assert.same({ 2, 3 }, T.addcdiv(x, x, x, { value = true }):tolist()) -- x + x / x
    -- int64 factors of a float input are converted first, not multiplied in int64:
    -- torch.addcmul(torch.tensor([1.]), torch.tensor([2**32]), torch.tensor([2**32])) -> 1.8447e+19
    local big = T.tensor({ 4294967296 }, { dtype = T.int64 })
    local f = T.addcmul(T.tensor({ 1 }, { dtype = T.float32 }), big, big)
    assert.equal(T.float32, f.dtype)
    assert.near(1.8446744073709552e19, f:item(), 1e13)
    -- value=nan on integers: "value cannot be converted to type int64_t without overflow"
    err(function() T.addcmul(a, a, a, { value = 0 / 0 }) end, "addcmul: value nan cannot be converted to int64")
    -- bool tensors: "addcmul_cpu_out" not implemented for 'Bool'
    local b = T.tensor { true, false }
    err(function() T.addcmul(b, b, b) end, "addcmul: not implemented for bool tensors")
    -- the in-place form still refuses a float result into an integer tensor:
    -- a.addcdiv_(a.float(), a) -> result type Float can't be cast to the desired output type Long
    err(function() a:clone():addcdiv_(a:float(), a) end,
      "addcdiv_: result type Float can't be cast to the desired output type Long")
  end)
end)
