-- scaled_dot_product_attention composed from ops (engine/src/ops/
-- attention_math.c): the path a device without the fused kernel takes (cuda
-- today). Every case of attention_spec.lua (PyTorch's values and gradients,
-- gradcheck, the dropout rule, broadcasting, masked rows, meta, bad input,
-- the attention modules) runs again with that path forced on the CPU.
local C = require "ember.core"
local S = require "spec_include"

S.composed("scaled_dot_product_attention composed from ops", "tests/lua/attention_spec.lua", getfenv and getfenv(1) or _ENV)

describe("the fused kernel and the composed path", function()
  local T = require "ember"
  local F = T.nn.functional
  local function both(f)
    C._nn_force_math(true)
    local ok, a, ga = pcall(f)
    C._nn_force_math(false)
    assert(ok, a)
    local b, gb = f()
    return a, b, ga, gb
  end
  it("agree on values and gradients, with and without dropout (the same draw)", function()
    for _, dt in ipairs { T.float32, T.float64 } do
      local tol = dt == T.float64 and 1e-12 or 2e-5
      for _, o in ipairs {
        {}, { is_causal = true }, { dropout_p = 0.3 }, { dropout_p = 0.3, is_causal = true },
        { attn_mask = T.randn(5, 9):to(dt), scale = 0.4 },
      } do
        local q0, k0, v0 = T.randn(2, 3, 5, 8, { dtype = dt }), T.randn(2, 3, 9, 8, { dtype = dt }),
          T.randn(2, 3, 9, 4, { dtype = dt })
        local a, b, ga, gb = both(function()
          local q, k, v = q0:clone():requires_grad_(), k0:clone():requires_grad_(), v0:clone():requires_grad_()
          T.manual_seed(21)
          local y = F.scaled_dot_product_attention(q, k, v, o)
          local g = T.autograd.grad({ (y * y):sum() }, { q, k, v })
          return y:detach(), g
        end)
        assert.is_true(T.allclose(a, b, tol, tol), "values")
        for i = 1, 3 do assert.is_true(T.allclose(ga[i], gb[i], tol, tol), "gradient " .. i) end
      end
    end
  end)
end)
