-- T.inference_mode as PyTorch's InferenceMode: nothing records inside it,
-- not even under T.enable_grad (whose grad mode is still reported), and
-- inference_mode(false) records again. Checked against torch 1.13 by hand:
-- with inference_mode(): with enable_grad(): y = x * 2 gives
-- y.requires_grad False and is_grad_enabled() True.
local T = require "ember"

describe("inference_mode", function()
  it("records nothing inside it, even under enable_grad", function()
    local x = T.ones(3, { requires_grad = true })
    local y, grad_on
    T.inference_mode(function()
      T.enable_grad(function()
        y = (x * 2):exp():sum()
        grad_on = T.is_grad_enabled()
      end)
      assert.is_false(T.is_grad_enabled())
    end)
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
    assert.is_true(grad_on)
    -- set_grad_enabled(true) inside likewise
    T.inference_mode(function()
      local prev = T.set_grad_enabled(true)
      assert.is_false((x + 1).requires_grad)
      T.set_grad_enabled(prev)
    end)
  end)

  it("records again under inference_mode(false) and after it", function()
    local x = T.ones(3, { requires_grad = true })
    local z
    T.inference_mode(function()
      T.inference_mode(false, function() z = x * 3 end)
      assert.is_false((x * 3).requires_grad)
    end)
    assert.is_true(z.requires_grad)
    z:sum():backward()
    assert.are.equal(3, x.grad[1]:item())
    local w = x * 4
    assert.is_true(w.requires_grad)
    assert.is_true(T.is_grad_enabled())
  end)

  it("lets a graph made outside be differentiated inside", function()
    local x = T.ones(3, { requires_grad = true })
    local y = (x * 3):sum()
    T.inference_mode(function() y:backward() end)
    assert.are.equal(3, x.grad[2]:item())
  end)

  it("is restored when the function raises", function()
    local x = T.ones(3, { requires_grad = true })
    local ok = pcall(T.inference_mode, function() error("boom") end)
    assert.is_false(ok)
    assert.is_false(T.is_inference_mode_enabled())
    assert.is_true((x * 2).requires_grad)
  end)
end)
