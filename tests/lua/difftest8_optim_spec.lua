-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests on the optimizers (LBFGS, state_dict/load_state_dict, complex
-- parameters), each with torch's value or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = { dtype = T.float64 }

local rosen = U.rosen

local function maxdiff(a, b) return (a:detach() - b:detach()):abs():max():item() end

describe("difftest round 8: optimizers (torch 1.13)", function()
  it("load_state_dict keeps a complex parameter's state real-shaped and continues exactly", function()
    -- torch: state of a complex parameter is complex (not cast: complex is
    -- not floating point); ember's is the real view's, and was cast to the
    -- complex dtype on loading ("exp_avg has dtype complex128 but the
    -- parameter has dtype float64" at the next step)
    local function grad(p)
      local r = T.view_as_real(p:detach())
      return T.view_as_complex((r * 2 - 0.3 + r:pow(3) * 0.1):contiguous())
    end
    for _, name in ipairs({ "SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "ASGD", "Rprop" }) do
      local o = { lr = 0.05 }
      if name == "SGD" or name == "RMSprop" then o.momentum = 0.5 end
      local p = T.view_as_complex(T.linspace(-0.4, 0.6, 6, f64):reshape(3, 2)):requires_grad_()
      local opt = T.optim[name]({ p }, o)
      for _ = 1, 2 do p.grad = grad(p); opt:step() end
      local sd = opt:state_dict()
      local q = p:detach():clone():requires_grad_()
      for _ = 1, 3 do p.grad = grad(p); opt:step() end
      local opt2 = T.optim[name]({ q }, o)
      opt2:load_state_dict(sd)
      for _, v in pairs(opt2.state[q]) do
        if T.is_tensor(v) and v.ndim > 0 then assert.equal(T.float64, v.dtype) end
      end
      for _ = 1, 3 do q.grad = grad(q); opt2:step() end
      assert.equal(0, maxdiff(p, q))
    end
    -- torch's own state (complex tensors) is viewed as real
    local p = T.view_as_complex(T.tensor({ { 0.5, -1.5 }, { 2.5, 1.25 } }, f64)):requires_grad_()
    local opt = T.optim.Adam({ p }, { lr = 0.1 })
    local ea = T.view_as_complex(T.tensor({ { 0.1, 0.2 }, { 0.3, 0.4 } }, f64))
    local eas = T.view_as_complex(T.tensor({ { 0.01, 0.02 }, { 0.03, 0.04 } }, f64))
    opt:load_state_dict({ state = { [0] = { step = T.tensor(1.5), exp_avg = ea, exp_avg_sq = eas } },
      param_groups = { { params = { 0 }, lr = 0.1, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0,
        amsgrad = false, maximize = false } } })
    assert.same({ 2, 2 }, opt.state[p].exp_avg:size())
    assert.equal(T.float64, opt.state[p].exp_avg.dtype)
  end)

  it("LBFGS: a state_dict loads into torch.optim.LBFGS and torch's loads here", function()
    -- torch 1.13's state_dict: line_search_fn None, al a list of
    -- history_size entries (None until set), t/H_diag/ro/al 0-d tensors.
    -- ember wrote line_search_fn = false (torch's step then raises "only
    -- 'strong_wolfe' is supported") and failed on torch's tensors
    -- ("add_: expected a number, got userdata")
    for _, lsf in ipairs({ false, "strong_wolfe" }) do
      local o = { line_search_fn = lsf or nil, max_iter = 4, history_size = 3 }
      local x = T.tensor({ -1.2, 1.0, -0.5, 0.8 }, f64):requires_grad_()
      local opt = T.optim.LBFGS({ x }, o)
      local function closure(opt, x)
        return function() opt:zero_grad(); local l = rosen(x); l:backward(); return l end
      end
      for _ = 1, 2 do opt:step(closure(opt, x)) end
      local sd = opt:state_dict()
      if not lsf then assert.equal(T.None, sd.param_groups[1].line_search_fn) end
      assert.equal(3, #sd.state[1].al)
      -- as torch keeps them: 0-d tensors, and a file's lists
      local st = sd.state[1]
      st.t, st.H_diag = T.tensor(st.t, f64), T.tensor(st.H_diag, f64)
      for i, v in ipairs(st.ro) do st.ro[i] = T.tensor(v, f64) end
      for i, v in ipairs(st.al) do if v ~= T.None then st.al[i] = T.tensor(v, f64) end end
      local path = os.tmpname()
      T.save_torch(path, sd)
      local loaded = T.load_torch(path)
      os.remove(path)
      local y = x:detach():clone():requires_grad_()
      for _ = 1, 3 do opt:step(closure(opt, x)) end
      local opt2 = T.optim.LBFGS({ y }, { max_iter = 4, history_size = 3, line_search_fn = "strong_wolfe" })
      opt2:load_state_dict(loaded)
      assert.equal(lsf, opt2.param_groups[1].line_search_fn)
      local n = #loaded.state[1].old_dirs
      for _ = 1, 3 do opt2:step(closure(opt2, y)) end
      assert.equal(n, #loaded.state[1].old_dirs)   -- the loaded dict is not changed
      assert.equal(0, maxdiff(x, y))
      assert.equal(opt.state[x].func_evals, opt2.state[y].func_evals)
    end
  end)
end)
