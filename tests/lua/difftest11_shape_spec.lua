-- Differences from PyTorch 1.13 found by the eleventh round of differential
-- tests, shape functions (split/chunk/tensor_split, movedim, roll, rot90,
-- flip, tril/triu, diagonal/diag/diag_embed, meshgrid, broadcast, stacks,
-- squeeze, narrow, repeat/tile, take, cat/stack): ember against torch on the
-- same inputs, each with torch's value or error. Positions and dims are
-- 1-based in ember: those shifts are not differences.
local T = require "ember"

local A = require("specutil").arange_shaped

local function flat(t) return t:reshape(-1):tolist() end

describe("difftest round 11: shape functions (torch 1.13)", function()
  it("tril/triu of a non-contiguous tensor give a row-major result", function()
    -- torch.arange(12.).reshape(3,4).t().tril().stride() == (3, 1)
    local x = A(3, 4):t()
    local r = x:tril()
    assert.same({ 3, 1 }, r:stride())
    assert.same({ { 0, 0, 0 }, { 1, 5, 0 }, { 2, 6, 10 }, { 3, 7, 11 } }, r:tolist())
    -- so view works on it, as on torch's
    assert.same({ 0, 4, 8, 0, 0, 9, 0, 0, 0, 0, 0, 0 }, x:triu(1):view(-1):tolist())
    -- arange(24.).reshape(2,3,4).permute(2,0,1): triu and tril(-1) strides (6, 3, 1)
    local y = A(2, 3, 4):permute(3, 1, 2)
    assert.same({ 6, 3, 1 }, y:triu():stride())
    assert.same({ 6, 3, 1 }, y:tril(-1):stride())
    assert.same({ 0, 4, 8, 0, 16, 20, 1, 5, 9, 0, 17, 21, 2, 6, 10, 0, 18, 22, 3, 7, 11, 0, 19, 23 },
      flat(y:triu()))
    -- an expanded input: t().expand(2,4,3).tril().stride() == (12, 3, 1)
    assert.same({ 12, 3, 1 }, x:expand(2, 4, 3):tril():stride())
    -- the input is not written, and the result is a new tensor
    assert.same({ 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11 }, flat(x))
    assert.is_false(T.shares_storage(r, x))
    -- the gradient is unchanged: x.t().triu(1) weighted by arange(12).reshape(4,3)
    local g = A(3, 4):double():requires_grad_()
    local z = g:t():triu(1)
    ;(z * T.arange(12, { dtype = T.float64 }):reshape(4, 3)):sum():backward()
    assert.same({ { 0, 0, 0, 0 }, { 1, 0, 0, 0 }, { 2, 5, 0, 0 } }, g.grad:tolist())
  end)

  it("broadcast_shapes stores integral float sizes as integers and refuses others", function()
    -- torch.broadcast_shapes((3, 1), (4,)) == torch.Size([3, 4]); in Lua 5.4
    -- 6 / 2 is the float 3.0
    local s = T.broadcast_shapes({ 6 / 2, 1.0 }, { 8 / 2 })
    assert.same({ 3, 4 }, { s[1], s[2] })
    assert.equal("[3, 4]", "[" .. table.concat({ s[1], s[2] }, ", ") .. "]")
    if math.type then
      assert.equal("integer", math.type(s[1]))
      assert.equal("integer", math.type(s[2]))
    end
    -- torch: torch.Size() takes an iterable of 'int' (item 0 is 'float')
    assert.has_error(function() T.broadcast_shapes({ 2.5 }, { 1 }) end,
      "broadcast_shapes: expected integer sizes, got 2.5 (argument #1, entry 1)")
  end)

  it("hsplit/vsplit/dsplit refuse a non-integer section count as such", function()
    -- torch: hsplit() received an invalid combination of arguments - got (float)
    local ok, e = pcall(T.hsplit, A(2, 4), 1.5)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("hsplit: expected an integer number of sections, got 1.5", 1, true))
    ok, e = pcall(T.vsplit, A(4, 2), 0.5)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("vsplit: expected an integer number of sections, got 0.5", 1, true))
    -- an integral float is a count: hsplit(arange(8.).reshape(2,4), 2)
    local p = T.hsplit(A(2, 4), 4 / 2)
    assert.equal(2, #p)
    assert.same({ { 2, 3 }, { 6, 7 } }, p[2]:tolist())
  end)
  it("out-of-place scatter/index/masked ops give torch's layouts for a transposed input", function()
    -- torch 1.13, x = zeros(3, 4).t(): masked_fill, masked_scatter, scatter,
    -- scatter_add, scatter_reduce, index_copy, index_add -> strides (3, 1)
    -- (clone(contiguous) or a structured output); index_fill, put -> (1, 4)
    local x = T.zeros(3, 4):t()
    local i = T.ones(4, 3, { dtype = T.int64 })
    local m = T.zeros(4, 3, { dtype = T.bool })
    local one = T.tensor({ 1 }, { dtype = T.int64 })
    local rows = {
      { x:masked_fill(m, 1), { 3, 1 } }, { x:masked_scatter(m, T.ones(12)), { 3, 1 } },
      { x:scatter(1, i, 1), { 3, 1 } }, { x:scatter_add(1, i, T.ones(4, 3)), { 3, 1 } },
      { x:scatter_reduce(1, i, T.ones(4, 3), "sum"), { 3, 1 } },
      { x:index_copy(1, one, T.ones(1, 3)), { 3, 1 } }, { x:index_add(1, one, T.ones(1, 3)), { 3, 1 } },
      { x:index_fill(1, one, 1), { 1, 4 } }, { x:put(one, T.ones(1)), { 1, 4 } },
    }
    for k, r in ipairs(rows) do assert.same(r[2], r[1]:stride(), "row " .. k) end
    assert.same({ { 1, 1, 1 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }, x:index_fill(1, one, 1):tolist())
    -- PyTorch's constants name the formats
    assert.same({ 3, 1 }, x:clone({ memory_format = T.contiguous_format }):stride())
    assert.same({ 1, 4 }, x:clone({ memory_format = T.preserve_format }):stride())
  end)
end)
