-- Differences from PyTorch 1.13 found by the twelfth round of differential
-- tests of T.optim (every optimizer and its options over 20-step float64
-- trajectories of a quadratic plus a tiny tanh MLP, parameter groups,
-- parameters without gradients, state_dict mid-run in both directions,
-- option errors), each with torch's value or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = { dtype = T.float64 }

local rosen = U.rosen

describe("difftest round 12: optimizers (torch 1.13)", function()
  it("step(closure) runs the closure with grad mode on, also under no_grad", function()
    -- torch: with torch.no_grad(): opt.step(closure) (the closure calls
    -- backward) steps as usual: optimizers run the closure under
    -- enable_grad. ember's first-order step called it as it was, so its
    -- backward failed ("element 1 of tensors does not require grad")
    local want = { SGD = { 0.8, -1.6 }, Adam = { 0.9, -1.9 }, Rprop = { 0.9, -1.9 } }
    for name, w in pairs(want) do
      local p = T.tensor({ 1.0, -2.0 }, f64):requires_grad_()
      local o = T.optim[name]({ p }, { lr = 0.1 })
      local loss = T.no_grad(function()
        return o:step(function()
          o:zero_grad()
          local l = p:pow(2):sum()
          l:backward()
          return l
        end)
      end)
      assert.equal(5, loss:item())
      assert(T.allclose(p:detach(), T.tensor(w, f64), 0, 1e-8), name)   -- Adam: eps in the denominator
      assert.is_true(T.is_grad_enabled())   -- restored after the step
    end
  end)

  it("LBFGS refuses history_size = 0 (torch fails at its step; ember kept an unbounded history)", function()
    -- torch: LBFGS([x], history_size=0).step(closure) -> IndexError: pop
    -- from empty list (at the first curvature pair); ember went on with a
    -- history that grew without bound (its length never equals 0)
    local x = T.tensor({ -1.2, 1.0, -0.5 }, f64):requires_grad_()
    local ok, e = pcall(function() local _ = T.optim.LBFGS({ x }, { history_size = 0 }) end)
    assert.is_false(ok)
    assert(e:find("difftest12_optim_spec.lua:%d+: LBFGS: history_size must be a positive integer %(got 0%)"), e)
    err(function() local _ = T.optim.LBFGS({ x }, { history_size = 2.5 }) end,
      "LBFGS: history_size must be a positive integer (got 2.5)")
    -- history_size = 1 as torch: 3 steps of max_iter 5, with and without the line search
    local want = {
      [false] = { { -0.18244612087596496, 0.03684244776102068, 0.003207709823754074 }, 2.721048512263865 },
      strong_wolfe = { { 0.293440999311961, 0.10887282811888832, -0.011753195853841375 }, 2.8505370959945804 },
    }
    for lsf, w in pairs(want) do
      local y = T.tensor({ -1.2, 1.0, -0.5 }, f64):requires_grad_()
      local opt = T.optim.LBFGS({ y }, { history_size = 1, max_iter = 5, line_search_fn = lsf or nil })
      local l
      for _ = 1, 3 do
        l = opt:step(function() opt:zero_grad(); local v = rosen(y); v:backward(); return v end)
      end
      assert.equal(1, #opt.state[y].old_dirs)
      assert(T.allclose(y:detach(), T.tensor(w[1], f64), 0, 1e-9), tostring(lsf))
      assert(math.abs(l:item() - w[2]) < 1e-9)
    end
  end)

  it("a numeric option of SGD, Adam, AdamW or RMSprop given as something else is named", function()
    -- torch: SGD(params, lr=0.1, momentum="0.9") -> TypeError ('<' not
    -- supported between 'str' and 'float'); Adam(betas=(0.9,)) -> IndexError.
    -- ember raised "SGD: attempt to compare number with string" and
    -- "Adam: attempt to compare number with nil"
    local p = T.zeros(2):requires_grad_()
    local cases = {
      { "SGD", { lr = 0.1, momentum = "0.9" }, "SGD: momentum must be a number, got string" },
      { "SGD", { lr = 0.1, weight_decay = true }, "SGD: weight_decay must be a number, got boolean" },
      { "Adam", { betas = { 0.9 } }, "Adam: betas must be a pair of numbers" },
      { "Adam", { betas = 0.9 }, "Adam: betas must be a pair of numbers" },
      { "AdamW", { eps = "1e-8" }, "AdamW: eps must be a number, got string" },
      { "RMSprop", { alpha = "a" }, "RMSprop: alpha must be a number, got string" },
      { "RMSprop", { momentum = {} }, "RMSprop: momentum must be a number, got table" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(function() local _ = T.optim[c[1]]({ p }, c[2]) end)
      assert.is_false(ok)
      assert(e:find("difftest12_optim_spec.lua:%d+: " .. c[3]:gsub("%p", "%%%0")), e)
    end
    -- torch's own value errors are unchanged (betas' positions 1-based)
    err(function() local _ = T.optim.Adam({ p }, { betas = { 0.9, 1.0 } }) end,
      "Adam: Invalid beta parameter at index 2: 1")
    err(function() local _ = T.optim.SGD({ p }, { lr = 0.1, momentum = -1 }) end, "SGD: Invalid momentum value: -1")
  end)
end)
