-- T.einsum's sublist form (PyTorch's torch.einsum(op1, sub1, op2, sub2, ...,
-- [sub_out])): labels are integers in [0, 52) or "..." for an ellipsis, and
-- the result is the string form's with the same labels (0-25 -> A-Z, 26-51
-- -> a-z). Values checked against the equation form and, for one case,
-- against numbers computed by hand.
local T = require "ember"

local function close(a, b, tol)
  return a.shape == b.shape and (a - b):abs():max():item() <= (tol or 1e-5)
end

describe("einsum's sublist form", function()
  it("matches the equation form: matmul, batch, trace, outer, implicit output", function()
    T.manual_seed(3)
    local a, b = T.randn(3, 4), T.randn(4, 5)
    assert.is_true(close(T.einsum(a, {0, 1}, b, {1, 2}, {0, 2}), T.einsum("ij,jk->ik", a, b)))
    assert.is_true(close(T.einsum(a, {0, 1}, b, {1, 2}, {0, 2}), T.mm(a, b)))
    -- no output sublist: the implicit output (labels seen once, sorted)
    assert.is_true(close(T.einsum(a, {0, 1}, b, {1, 2}), T.einsum("ij,jk", a, b)))
    local x, y = T.randn(2, 3, 4), T.randn(2, 4, 5)
    assert.is_true(close(T.einsum(x, {7, 0, 1}, y, {7, 1, 2}, {7, 0, 2}), T.bmm(x, y)))
    local sq = T.randn(4, 4)
    assert.is_true(close(T.einsum(sq, {3, 3}, {}), sq:trace()))
    local u, v = T.randn(3), T.randn(5)
    assert.is_true(close(T.einsum(u, {0}, v, {1}, {0, 1}), T.outer(u, v)))
    -- labels 26-51 are the lower-case letters
    assert.is_true(close(T.einsum(a, {26, 51}, {51, 26}), T.einsum("za->az", a)))
  end)

  it("takes \"...\" for an ellipsis and three operands", function()
    T.manual_seed(4)
    local x, y = T.randn(2, 3, 4, 5), T.randn(2, 3, 5, 6)
    assert.is_true(close(T.einsum(x, {"...", 0, 1}, y, {"...", 1, 2}, {"...", 0, 2}), T.matmul(x, y), 1e-4))
    local a, b, c = T.randn(2, 3), T.randn(3, 4), T.randn(4, 2)
    assert.is_true(close(T.einsum(a, {0, 1}, b, {1, 2}, c, {2, 3}, {0, 3}), a:mm(b):mm(c), 1e-4))
    -- by hand: sum_i a_i b_i
    local p, q = T.tensor{1, 2, 3}, T.tensor{4, 5, 6}
    assert.are.equal(32, T.einsum(p, {5}, q, {5}, {}):item())
  end)

  it("is differentiable as the equation form", function()
    local a = T.randn(3, 4, {requires_grad = true})
    local b = T.randn(4, 2, {requires_grad = true})
    T.einsum(a, {0, 1}, b, {1, 2}, {0, 2}):sum():backward()
    local ga, gb = a.grad:clone(), b.grad:clone()
    a.grad, b.grad = nil, nil
    T.einsum("ij,jk->ik", a, b):sum():backward()
    assert.is_true(close(ga, a.grad) and close(gb, b.grad))
  end)

  it("refuses bad sublists naming the operand", function()
    local a, b = T.randn(3, 4), T.randn(4, 5)
    assert.has_error(function() T.einsum(a, {0, 52}) end,
      "einsum: subscript 52 of operand 1 is not within the valid range [0, 52) (nor \"...\")")
    assert.has_error(function() T.einsum(a, {0, -1}) end,
      "einsum: subscript -1 of operand 1 is not within the valid range [0, 52) (nor \"...\")")
    assert.has_error(function() T.einsum(a, {0, 1.5}) end,
      "einsum: subscript 1.5 of operand 1 is not within the valid range [0, 52) (nor \"...\")")
    assert.has_error(function() T.einsum(a, {0, 1}, b) end,
      "einsum: operand 2 has no sublist (the sublist form is op1, sub1, op2, sub2, ..., [sub_out])")
    assert.has_error(function() T.einsum(a, b) end, "einsum: expected a list of subscripts for operand 1, got a tensor")
    assert.has_error(function() T.einsum(a, {0, nil, 1}) end,
      "einsum: the subscripts of operand 1 must be a list (1..n, no holes or named keys)")
    assert.has_error(function() T.einsum(a, {0, 1}, {0, "x"}) end,
      "einsum: subscript x of the output is not within the valid range [0, 52) (nor \"...\")")
    -- the equation's own checks still apply: a wrong label count
    assert.has_error(function() T.einsum(a, {0}) end)
    -- and the error is raised at the caller's line
    local ok, msg = pcall(function() T.einsum(a, {99}) end)
    assert.is_false(ok)
    assert.truthy(msg:find("einsum_sublist_spec.lua", 1, true))
  end)
end)
