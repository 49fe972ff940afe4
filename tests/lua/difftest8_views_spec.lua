-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests, views and shape functions (ember against torch on the same
-- inputs), each with torch's value or error. Positions are 1-based in ember
-- (dims, indices): those shifts are not differences.
local T = require "ember"

local A = require("specutil").arange_shaped

describe("difftest round 8: views and shape functions (torch 1.13)", function()
  it("clone keeps a dense tensor's strides exactly, those of size-1 dims included", function()
    -- torch.arange(12.).reshape(3,1,4).transpose(0,1).clone().stride() == (4, 4, 1)
    local t = A(3, 1, 4):transpose(1, 2)
    assert.same({ 4, 4, 1 }, t:stride())
    assert.same({ 4, 4, 1 }, t:clone():stride())
    assert.same({ 4, 4, 1 }, T.zeros_like(t):stride())
    assert.same({ 4, 4, 1 }, T.empty_like(t):stride())
    assert.same({ 4, 4, 1 }, t:to(T.float64):stride())
    assert.same({ 4, 4, 1 }, t:flip(2):stride())
    assert.same(t:tolist(), t:clone():tolist())
    -- as_strided((2,1),(1,7)).clone().stride() == (1, 7)
    assert.same({ 1, 7 }, A(2, 3):as_strided({ 2, 1 }, { 1, 7 }):clone():stride())
    -- a 1-d tensor of one element: arange(6.).as_strided((1,),(5,)).clone().stride() == (5,)
    assert.same({ 5 }, A(6):as_strided({ 1 }, { 5 }):clone():stride())
    -- an empty one: zeros(0, 3).t().clone().stride() == (1, 3)
    assert.same({ 1, 3 }, T.zeros(0, 3):t():clone():stride())
    -- memory_format=contiguous_format gives exactly the row-major strides: (12, 4, 1)
    assert.same({ 12, 4, 1 }, t:clone({ memory_format = "contiguous" }):stride())
    assert.same({ 12, 4, 1 }, T.ones_like(t, { memory_format = "contiguous" }):stride())
    -- contiguous() of a contiguous tensor is the tensor itself, strides and all
    assert.same({ 4, 4, 1 }, t:contiguous():stride())
    -- the clone is still differentiable
    local x = A(3, 1, 4):double():requires_grad_()
    local c = x:transpose(1, 2):clone({ memory_format = "contiguous" })
    assert.equal("CloneBackward0", c.grad_fn:name())
    c:sum():backward()
    assert.is_true(T.equal(x.grad, T.ones(3, 1, 4, { dtype = T.float64 })))
  end)

  it("rot90 with k a multiple of 4 returns a row-major copy", function()
    -- torch: rot90(k=0) is clone(memory_format=contiguous_format)
    -- arange(24.).reshape(2,3,4).permute(2,0,1).rot90(0, (1,2)).stride() == (6, 3, 1)
    local p = A(2, 3, 4):permute(3, 1, 2)
    for _, k in ipairs { 0, 4, -4, 8 } do
      local r = p:rot90(k, { 2, 3 })
      assert.same({ 6, 3, 1 }, r:stride())
      assert.same(p:tolist(), r:tolist())
      assert.is_false(T.shares_storage(r, p))
    end
    -- arange(6.).reshape(2,3).t().rot90(0).stride() == (2, 1)
    assert.same({ 2, 1 }, A(2, 3):t():rot90(0):stride())
  end)

  it("an empty piece of split/tensor_split keeps the offset where it starts", function()
    local x = A(7)
    local function offsets(list)
      local r = {}
      for i, p in ipairs(list) do r[i] = p:storage_offset() end
      return r
    end
    -- [p.storage_offset() for p in x.split([7, 0])] == [0, 7]
    assert.same({ 0, 7 }, offsets(x:split({ 7, 0 })))
    -- x.tensor_split([19]) -> [0, 7]; x.tensor_split([5, 2]) -> [0, 5, 2]
    assert.same({ 0, 7 }, offsets(x:tensor_split({ 20 })))
    assert.same({ 0, 5, 2 }, offsets(x:tensor_split({ 6, 3 })))
    -- x.tensor_split(10) -> [0, 1, ..., 6, 7, 7, 7]
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7, 7, 7 }, offsets(x:tensor_split(10)))
    -- arange(12.).reshape(6,2).vsplit([6])[1].storage_offset() == 12
    assert.same({ 0, 12 }, offsets(A(6, 2):vsplit({ 7 })))
    -- the pieces are views of x, and a gradient through them is unchanged
    for _, p in ipairs(x:tensor_split(10)) do assert.is_true(T.shares_storage(p, x)) end
    local w = A(4):double():requires_grad_()
    local parts = (w * 1):split({ 4, 0 })
    assert.equal(4, parts[2]:storage_offset())
    local loss = (parts[1] * T.tensor({ 1, 2, 3, 4 }, { dtype = T.float64 })):sum() + parts[2]:sum()
    loss:backward()
    assert.same({ 1, 2, 3, 4 }, w.grad:tolist())
  end)

  it("data_ptr of an empty tensor is 0", function()
    -- torch: x.narrow(1, 6, 0).data_ptr() == 0 (TensorImpl::data() is nullptr when empty)
    local x = A(4, 6)
    assert.equal(0, x:narrow(2, 7, 0):data_ptr())
    assert.equal(0, A(7):split({ 7, 0 })[2]:data_ptr())
    assert.equal(0, T.zeros(0):data_ptr())
    assert.equal(0, x:diagonal(9):data_ptr())
    -- a non-empty view still reports the address of its first element
    assert.equal(x:data_ptr() + 4 * 4, x:t()[5]:data_ptr())
    assert.is_true(x:data_ptr() ~= 0)
  end)
end)
