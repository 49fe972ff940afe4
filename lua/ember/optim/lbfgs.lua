-- T.optim.LBFGS: PyTorch 1.13's torch/optim/lbfgs.py over tensor ops
-- (docs/optim.md), with its strong-Wolfe line search. step(closure) is
-- required: the closure clears the gradients, computes the loss, calls
-- backward and returns the loss (a number or a one-element tensor).
-- Scalars PyTorch keeps as 0-d tensors (dot products, ro, H_diag) are Lua
-- numbers here (double): equal in float64, within rounding in float32.
return function(T, optim, Optimizer)
  local ARGS = require "ember.args"
  local abs, min, max = math.abs, math.min, math.max

  local LBFGS = setmetatable({}, { __index = Optimizer })
  LBFGS.__index = LBFGS

  local DEFAULTS = { lr = 1, max_iter = 20, max_eval = false, tolerance_grad = 1e-7,
    tolerance_change = 1e-9, history_size = 100, line_search_fn = false }

  local function new(params, o, ...)
    ARGS.nomore("LBFGS", 2, ...)
    if type(o) == "number" then o = { lr = o } end
    o = o or {}
    local lsf = o.line_search_fn
    if lsf ~= nil and lsf ~= false and lsf ~= "strong_wolfe" then
      error("LBFGS: only 'strong_wolfe' is supported as line_search_fn, got " .. tostring(lsf), 2)
    end
    -- torch 1.13 takes history_size = 0 and fails at the step that keeps a
    -- first curvature pair (pop from an empty list); a non-integer or
    -- negative one never equals the history's length, so the history grew
    -- without bound: refused here
    local hs = o.history_size
    if hs ~= nil and not (type(hs) == "number" and hs >= 1 and hs == math.floor(hs)) then
      error("LBFGS: history_size must be a positive integer (got " .. tostring(hs) .. ")", 2)
    end
    local self = Optimizer.create(LBFGS, "LBFGS", params, DEFAULTS, o)
    local g = self.param_groups[1]
    if not g.max_eval then g.max_eval = math.floor(g.max_iter * 5 / 4) end
    if #self.param_groups ~= 1 then
      error("LBFGS: LBFGS doesn't support per-parameter options (parameter groups)", 2)
    end
    self._params = g.params
    return self
  end

  function LBFGS:add_param_group(g, ...)
    if #self.param_groups >= 1 then
      error("LBFGS: LBFGS doesn't support per-parameter options (parameter groups)", 2)
    end
    return Optimizer.add_param_group(self, g, ...)
  end

  -- PyTorch's LBFGS state: line_search_fn None (false here), `al` a list of
  -- history_size entries (None until set), and t, H_diag, ro, al 0-d tensors
  -- (Lua numbers here); state_dict writes what torch.optim.LBFGS loads
  -- (T.save_torch), load_state_dict reads either form
  function LBFGS:state_dict(...)
    local sd = Optimizer.state_dict(self, ...)
    for _, g in ipairs(sd.param_groups) do
      if g.line_search_fn == false then g.line_search_fn = T.None end
    end
    local hs = self.param_groups[1].history_size
    for _, st in pairs(sd.state) do
      if type(st.al) == "table" then
        for i = 1, max(hs, #st.al) do if st.al[i] == nil then st.al[i] = T.None end end
      end
    end
    return sd
  end

  function LBFGS:load_state_dict(sd, ...)
    ARGS.nomore("load_state_dict", 2, ...)
    Optimizer.load_state_dict(self, sd)
    local sg = sd.param_groups[1]
    if sg.line_search_fn == T.None then self.param_groups[1].line_search_fn = false end
    local lsf = self.param_groups[1].line_search_fn
    if lsf ~= false and lsf ~= "strong_wolfe" then
      error("load_state_dict: LBFGS: only 'strong_wolfe' is supported as line_search_fn, got " .. tostring(lsf), 2)
    end
    local function num(v) if T.is_tensor(v) then return v:item() end return v end
    for _, st in pairs(self.state) do
      st.t, st.H_diag, st.prev_loss = num(st.t), num(st.H_diag), num(st.prev_loss)
      for _, k in ipairs({ "ro", "al" }) do
        if type(st[k]) == "table" then
          local l = {}
          for i, v in pairs(st[k]) do
            v = num(v)
            if type(v) == "number" then l[i] = v end   -- None: not set yet
          end
          st[k] = l
        end
      end
    end
  end

  function LBFGS:_numel()
    if not self._numel_cache then
      local n = 0
      for _, p in ipairs(self._params) do n = n + p:numel() end
      self._numel_cache = n
    end
    return self._numel_cache
  end

  function LBFGS:_gather_flat_grad()
    local views = {}
    for i, p in ipairs(self._params) do
      local g = optim.grad_of(p)
      if g == nil then views[i] = T.zeros(p:numel(), { dtype = p.dtype }) else views[i] = g:reshape(-1) end
    end
    return T.cat(views, 1)
  end

  function LBFGS:_add_grad(step_size, update)
    local offset = 0
    for _, p in ipairs(self._params) do
      local n = p:numel()
      p:add_(update:narrow(1, offset + 1, n):view_as(p), { alpha = step_size })
      offset = offset + n
    end
  end

  function LBFGS:_clone_param()
    local out = {}
    for i, p in ipairs(self._params) do out[i] = p:clone() end
    return out
  end
  function LBFGS:_set_param(data)
    for i, p in ipairs(self._params) do p:copy_(data[i]) end
  end

  local function tonum(v, what)
    if T.is_tensor(v) then return v:item() end
    if type(v) ~= "number" then
      error(string.format("LBFGS: the closure must return the loss (a number or a tensor), got %s", type(v)), 4)
    end
    return v
  end
  local function dot(a, b) return a:dot(b):item() end
  local function absmax(a) return a:abs():max():item() end

  function LBFGS:_directional_evaluate(closure, x, t, d)
    self:_add_grad(t, d)
    local loss = tonum(T.enable_grad(closure))
    local flat_grad = self:_gather_flat_grad()
    self:_set_param(x)
    return loss, flat_grad
  end

  local function cubic_interpolate(x1, f1, g1, x2, f2, g2, lo, hi)
    local xmin_bound, xmax_bound
    if lo ~= nil then
      xmin_bound, xmax_bound = lo, hi
    elseif x1 <= x2 then
      xmin_bound, xmax_bound = x1, x2
    else
      xmin_bound, xmax_bound = x2, x1
    end
    local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    local d2_square = d1 ^ 2 - g1 * g2
    if d2_square >= 0 then
      local d2 = math.sqrt(d2_square)
      local min_pos
      if x1 <= x2 then
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
      else
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
      end
      return min(max(min_pos, xmin_bound), xmax_bound)
    end
    return (xmin_bound + xmax_bound) / 2.
  end

  local function strong_wolfe(obj_func, x, t, d, f, g, gtd)
    local c1, c2, tolerance_change, max_ls = 1e-4, 0.9, 1e-9, 25
    local d_norm = absmax(d)
    g = g:clone()
    local f_new, g_new = obj_func(x, t, d)
    local ls_func_evals = 1
    local gtd_new = dot(g_new, d)
    local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    local done = false
    local ls_iter = 0
    local bracket, bracket_f, bracket_g, bracket_gtd
    while ls_iter < max_ls do
      if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev) then
        bracket, bracket_f = { t_prev, t }, { f_prev, f_new }
        bracket_g, bracket_gtd = { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
        break
      end
      if abs(gtd_new) <= -c2 * gtd then
        bracket, bracket_f, bracket_g = { t }, { f_new }, { g_new }
        done = true
        break
      end
      if gtd_new >= 0 then
        bracket, bracket_f = { t_prev, t }, { f_prev, f_new }
        bracket_g, bracket_gtd = { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
        break
      end
      local min_step = t + 0.01 * (t - t_prev)
      local max_step = t * 10
      local tmp = t
      t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step)
      t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:clone(), gtd_new
      f_new, g_new = obj_func(x, t, d)
      ls_func_evals = ls_func_evals + 1
      gtd_new = dot(g_new, d)
      ls_iter = ls_iter + 1
    end
    if ls_iter == max_ls then
      bracket, bracket_f, bracket_g = { 0, t }, { f, f_new }, { g, g_new }
      bracket_gtd = bracket_gtd or {}
    end
    local insuf_progress = false
    -- positions in the bracket are 1 and 2 (PyTorch's 0 and 1)
    local low, high
    if bracket_f[1] <= bracket_f[#bracket_f] then low, high = 1, 2 else low, high = 2, 1 end
    while not done and ls_iter < max_ls do
      if abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
      t = cubic_interpolate(bracket[1], bracket_f[1], bracket_gtd[1], bracket[2], bracket_f[2], bracket_gtd[2])
      local bmax, bmin = max(bracket[1], bracket[2]), min(bracket[1], bracket[2])
      local eps = 0.1 * (bmax - bmin)
      if min(bmax - t, t - bmin) < eps then
        if insuf_progress or t >= bmax or t <= bmin then
          if abs(t - bmax) < abs(t - bmin) then t = bmax - eps else t = bmin + eps end
          insuf_progress = false
        else
          insuf_progress = true
        end
      else
        insuf_progress = false
      end
      f_new, g_new = obj_func(x, t, d)
      ls_func_evals = ls_func_evals + 1
      gtd_new = dot(g_new, d)
      ls_iter = ls_iter + 1
      if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low] then
        bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new:clone(), gtd_new
        if bracket_f[1] <= bracket_f[2] then low, high = 1, 2 else low, high = 2, 1 end
      else
        if abs(gtd_new) <= -c2 * gtd then
          done = true
        elseif gtd_new * (bracket[high] - bracket[low]) >= 0 then
          bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
          bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
        end
        bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new:clone(), gtd_new
      end
    end
    -- a one-entry bracket (the first loop's success) has only position 1
    if bracket[low] == nil then low = 1 end
    return bracket_f[low], bracket_g[low], bracket[low], ls_func_evals
  end

  -- step(closure): up to max_iter iterations; returns the closure's first loss
  function LBFGS:step(closure, ...)
    ARGS.nomore("step", 2, ...)
    if type(closure) ~= "function" then
      error("step: LBFGS needs a closure (a function that computes the loss and its gradients), got "
        .. type(closure), 2)
    end
    local group = self.param_groups[1]
    local lr, max_iter, max_eval = group.lr, group.max_iter, group.max_eval
    local tolerance_grad, tolerance_change = group.tolerance_grad, group.tolerance_change
    local line_search_fn, history_size = group.line_search_fn, group.history_size
    local state = self.state[self._params[1]]
    if not state then
      state = {}
      self.state[self._params[1]] = state
    end
    state.func_evals = state.func_evals or 0
    state.n_iter = state.n_iter or 0

    local orig_loss = T.enable_grad(closure)
    local loss = tonum(orig_loss)
    local current_evals = 1
    state.func_evals = state.func_evals + 1
    return T.no_grad(function()
      local flat_grad = self:_gather_flat_grad()
      local opt_cond = absmax(flat_grad) <= tolerance_grad
      if opt_cond then return orig_loss end

      local d, t = state.d, state.t
      local old_dirs, old_stps, ro = state.old_dirs, state.old_stps, state.ro
      local H_diag, prev_flat_grad, prev_loss = state.H_diag, state.prev_flat_grad, state.prev_loss
      local n_iter = 0
      while n_iter < max_iter do
        n_iter = n_iter + 1
        state.n_iter = state.n_iter + 1
        if state.n_iter == 1 then
          d = flat_grad:neg()
          old_dirs, old_stps, ro = {}, {}, {}
          H_diag = 1
        else
          local y = flat_grad:sub(prev_flat_grad)
          local s = d:mul(t)
          local ys = dot(y, s)
          if ys > 1e-10 then
            if #old_dirs == history_size then
              table.remove(old_dirs, 1)
              table.remove(old_stps, 1)
              table.remove(ro, 1)
            end
            old_dirs[#old_dirs + 1] = y
            old_stps[#old_stps + 1] = s
            ro[#ro + 1] = 1. / ys
            H_diag = ys / dot(y, y)
          end
          local num_old = #old_dirs
          state.al = state.al or {}
          local al = state.al
          local q = flat_grad:neg()
          for i = num_old, 1, -1 do
            al[i] = dot(old_stps[i], q) * ro[i]
            q:add_(old_dirs[i], { alpha = -al[i] })
          end
          local r = T.mul(q, H_diag)
          d = r
          for i = 1, num_old do
            local be_i = dot(old_dirs[i], r) * ro[i]
            r:add_(old_stps[i], { alpha = al[i] - be_i })
          end
        end
        if prev_flat_grad == nil then prev_flat_grad = flat_grad:clone() else prev_flat_grad:copy_(flat_grad) end
        prev_loss = loss
        if state.n_iter == 1 then
          t = min(1., 1. / flat_grad:abs():sum():item()) * lr
        else
          t = lr
        end
        local gtd = dot(flat_grad, d)
        if gtd > -tolerance_change then break end
        local ls_func_evals = 0
        if line_search_fn then
          local x_init = self:_clone_param()
          local function obj_func(x, tt, dd) return self:_directional_evaluate(closure, x, tt, dd) end
          loss, flat_grad, t, ls_func_evals = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd)
          self:_add_grad(t, d)
          opt_cond = absmax(flat_grad) <= tolerance_grad
        else
          self:_add_grad(t, d)
          if n_iter ~= max_iter then
            loss = tonum(T.enable_grad(closure))
            flat_grad = self:_gather_flat_grad()
            opt_cond = absmax(flat_grad) <= tolerance_grad
            ls_func_evals = 1
          end
        end
        current_evals = current_evals + ls_func_evals
        state.func_evals = state.func_evals + ls_func_evals
        if n_iter == max_iter then break end
        if current_evals >= max_eval then break end
        if opt_cond then break end
        if absmax(d:mul(t)) <= tolerance_change then break end
        if abs(loss - prev_loss) < tolerance_change then break end
      end
      state.d, state.t = d, t
      state.old_dirs, state.old_stps, state.ro = old_dirs, old_stps, ro
      state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_flat_grad, prev_loss
      return orig_loss
    end)
  end

  -- errors raised at the caller's position, not at a line of this file
  return require("ember.argcheck")(T).named("LBFGS", new)
end
