-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests in attention (scaled_dot_product_attention against the explicit
-- float64 formula, MultiheadAttention and the transformer layers with
-- torch's weights): the values, gradients and masks all agreed; what
-- differed were errors. Each case gives torch's message in a comment.
local T = require "ember"
local U = require "specutil"
local err = U.err
local nn = T.nn

-- the error of f, which must fail
local function msg_of(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end

describe("difftest round 7: attention (torch 1.13)", function()
  it("a mask of a wrong dtype names the caller's line, on both paths of MultiheadAttention", function()
    -- torch: AssertionError: Only float, byte, and bool types are supported for attn_mask, not torch.int64
    -- (ember refuses uint8 masks too, as PyTorch 2.x does). ember named no
    -- position (the error's level was one frame too far).
    local q, k = T.randn(4, 3, 8), T.randn(5, 3, 8)
    local m = nn.MultiheadAttention(8, 2)
    local e = msg_of(function()
      local out = m(q, k, k, { attn_mask = T.zeros(4, 5, { dtype = T.int64 }) })
      return out
    end)
    assert.truthy(e:find("difftest7_attention_spec.lua:%d+: MultiheadAttention.forward: only bool and floating types of attn_mask"), e)
    e = msg_of(function()
      local out = m(q, k, k, { key_padding_mask = T.zeros(3, 5, { dtype = T.uint8 }) })
      return out
    end)
    assert.truthy(e:find("difftest7_attention_spec.lua:%d+: MultiheadAttention.forward: only bool and floating types of key_padding_mask"), e)
    -- the batch_first path without weights (a transformer layer's)
    local mb = nn.MultiheadAttention(8, 2, { batch_first = true })
    local qb, kb = T.randn(3, 4, 8), T.randn(3, 5, 8)
    e = msg_of(function()
      local out = mb(qb, kb, kb, { need_weights = false, key_padding_mask = T.zeros(3, 5, { dtype = T.int64 }) })
      return out
    end)
    assert.truthy(e:find("difftest7_attention_spec.lua:%d+: MultiheadAttention.forward: only bool and floating types of key_padding_mask"), e)
    e = msg_of(function()
      local out = mb(qb, kb, kb, { need_weights = false, attn_mask = T.zeros(4, 4) })
      return out
    end)
    assert.truthy(e:find("difftest7_attention_spec.lua:%d+: MultiheadAttention.forward: the shape of the 2%-d attn_mask"), e)
  end)

  it("an unbatched query with a 2-d key_padding_mask is refused by that name", function()
    -- torch: AssertionError: For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D
    -- but found 2-D tensor instead. ember said "expected key_padding_mask of
    -- shape (1, 5), got [1, 1, 5]", a shape the caller never gave.
    local m = nn.MultiheadAttention(8, 2)
    err(function() m(T.randn(4, 8), T.randn(5, 8), T.randn(5, 8), { key_padding_mask = T.zeros(1, 5, { dtype = T.bool }) }) end,
      "MultiheadAttention.forward: for an unbatched (2-d) query, expected key_padding_mask to be nil or 1-d, got 2-d")
    -- the 1-d mask is the unbatched one
    local out = m(T.randn(4, 8), T.randn(5, 8), T.randn(5, 8), { key_padding_mask = T.tensor({ false, true, false, false, true }) })
    assert.same({ 4, 8 }, out:size())
  end)

  it("MultiheadAttention refuses a non-integer embed_dim or num_heads", function()
    -- torch: MultiheadAttention(2.5, 1): AssertionError: embed_dim must be divisible by num_heads.
    -- ember said "embed_dim (2) must be divisible by num_heads (1)", printing 2.5 as 2.
    err(function() nn.MultiheadAttention(2.5, 1) end,
      "MultiheadAttention: embed_dim and num_heads must be positive integers, got 2.5 and 1")
    err(function() nn.MultiheadAttention(8, 1.5) end,
      "MultiheadAttention: embed_dim and num_heads must be positive integers, got 8 and 1.5")
    err(function() nn.TransformerEncoderLayer(8, 3) end, "MultiheadAttention: embed_dim (8) must be divisible by num_heads (3)")
  end)

  it("generate_square_subsequent_mask refuses a non-integer size by its own name", function()
    -- torch: TypeError: full() received an invalid combination of arguments; ember's error came
    -- from T.full inside it.
    err(function() nn.Transformer.generate_square_subsequent_mask(2.5) end,
      "generate_square_subsequent_mask: expected an integer size >= 0, got 2.5")
    -- torch: generate_square_subsequent_mask(3)
    -- tensor([[0., -inf, -inf], [0., 0., -inf], [0., 0., 0.]])
    local m = nn.Transformer.generate_square_subsequent_mask(3)
    local inf = math.huge
    assert.same({ 0, -inf, -inf, 0, 0, -inf, 0, 0, 0 }, U.flat(m))
    assert.same({ 0, 0 }, nn.Transformer.generate_square_subsequent_mask(0):size())
  end)

  it("the backward of a row with a huge finite mask or huge scores matches the explicit softmax", function()
    -- the explicit math in float32 (torch 1.13's formula) against the flash backward: a row
    -- whose keys are all masked with -1e9 had S times the gradient (lse rounded to -1e9)
    local F = nn.functional
    for _, case in ipairs { { -1e9, 1 }, { -3e38, 1 }, { 0, 300 } } do
      local big, amp = case[1], case[2]
      T.manual_seed(3)
      local q = (T.randn(2, 7, 5) * amp):requires_grad_()
      local k = T.randn(2, 9, 5):requires_grad_()
      local v = T.randn(2, 9, 5):requires_grad_()
      local mask = T.zeros(2, 7, 9)
      mask[{ 1, 2 }] = big
      mask[{ 2, 5 }] = big
      mask[{ 1, 3, 1 }] = big
      local g = T.randn(2, 7, 5)
      F.scaled_dot_product_attention(q, k, v, { attn_mask = mask }):backward(g)
      local q2, k2, v2 = q:detach():requires_grad_(), k:detach():requires_grad_(), v:detach():requires_grad_()
      local s = T.matmul(q2, k2:transpose(2, 3)) / math.sqrt(5) + mask
      T.matmul(T.softmax(s, -1), v2):backward(g)
      local tol = amp > 1 and 2e-4 or 1e-5
      for _, pair in ipairs { { q.grad, q2.grad }, { k.grad, k2.grad }, { v.grad, v2.grad } } do
        local d = (pair[1] - pair[2]):abs():max():item()
        local scale = pair[2]:abs():max():item()
        assert.is_true(d <= tol * math.max(1, scale), string.format("mask %g, scores x%g: %g", big, amp, d))
      end
    end
  end)
end)
