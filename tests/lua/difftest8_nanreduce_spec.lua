-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests on NaN reductions, order statistics and dim lists (ember against
-- torch on the same inputs), each with torch's value or error. Positions
-- are 1-based in ember (dims, indices): those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("difftest round 8: NaN reductions and dim lists (torch 1.13)", function()

  it("prod's gradient over an empty dim is an empty gradient", function()
    -- x = torch.zeros(0, 2, requires_grad=True); x.prod(0).sum().backward()
    -- -> x.grad has shape (0, 2) (ember: reshape: shape [2, 0] is invalid)
    local x = T.zeros({ 0, 2 }):requires_grad_(true)
    local y = x:prod(1)
    assert.same({ 1, 1 }, U.flat(y))
    y:sum():backward()
    assert.same({ 0, 2 }, x.grad:size():totable())
    -- torch.zeros(2, 0, 3).prod(1): grad (2, 0, 3); torch.zeros(0).prod(): grad (0,)
    x = T.zeros({ 2, 0, 3 }, { dtype = T.float64 }):requires_grad_(true)
    x:prod(2):sum():backward()
    assert.same({ 2, 0, 3 }, x.grad:size():totable())
    assert.equal(T.float64, x.grad.dtype)
    x = T.zeros({ 0 }):requires_grad_(true)
    x:prod():backward()
    assert.same({ 0 }, x.grad:size():totable())
    -- a dim of size 1 and zeros in the input are unchanged:
    -- torch.tensor([[0., 2.], [0., 0.], [1., 3.]]).prod(1) grads [[2, 0], [0, 0], [3, 1]]
    x = T.tensor({ { 0, 2 }, { 0, 0 }, { 1, 3 } }, { dtype = T.float32 }):requires_grad_(true)
    x:prod(2):sum():backward()
    assert.same({ 2, 0, 0, 0, 3, 1 }, U.flat(x.grad))
  end)

  it("nanmean refuses integer input even with a dtype; nansum an integer dtype for floats", function()
    local ii = T.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = T.int32 })
    -- torch.nanmean(ii): nanmean(): expected input to have floating point dtype but got Int
    -- torch.nanmean(ii, dtype=torch.float64): the same error (ember gave 3.5)
    local ok, msg = pcall(T.nanmean, ii)
    assert.is_false(ok)
    assert.equal("nanmean(): expected input to have floating point dtype but got Int", tostring(msg))
    err(function() T.nanmean(ii, { dtype = T.float64 }) end,
      "nanmean(): expected input to have floating point dtype but got Int")
    err(function() ii:nanmean(2, { dtype = T.float32 }) end, "nanmean(): expected input to have floating")
    -- mean takes the dtype: torch.mean(ii, dtype=torch.float32) = 3.5
    assert.equal(3.5, T.mean(ii, { dtype = T.float32 }):item())
    -- torch.nansum(torch.tensor([[1., nan, 3.]]), 1, dtype=torch.int64):
    -- "nansum_cpu" not implemented for 'Long' (ember cast NaN to an integer and summed)
    local a = T.tensor({ { 1, 0 / 0, 3 } })
    err(function() T.nansum(a, 2, { dtype = T.int64 }) end,
      "nansum: dtype int64 is not supported for float32 input")
    err(function() a:nansum { dtype = T.bool } end, "nansum: dtype bool is not supported")
    -- integer input takes any dtype: torch.nansum(ii, dtype=torch.int64) = 21,
    -- dtype=torch.float32 -> 21.; a float dtype for float input is fine
    assert.equal(21, T.nansum(ii, { dtype = T.int64 }):item())
    assert.equal(T.float32, T.nansum(ii, { dtype = T.float32 }).dtype)
    local r = T.nansum(a, 2, { dtype = T.float64 })
    assert.equal(T.float64, r.dtype)
    assert.same({ 4 }, U.flat(r))
  end)
end)
