-- The index family and assembling (issue 4): the parts written in Lua.
-- The C module registers the kernels' entry points (index_select, gather,
-- scatter_, put_, masked_*, nonzero, where, cat/stack/split/...); here are
-- the out-of-place forms PyTorch offers next to its in-place ones (a clone
-- followed by the in-place op) and the method spelling of where.
return function(T, C)
  local M = C._methods

  -- masked_fill_/index_fill_ with a 0-d value tensor that requires grad: the
  -- C op reads the value as a number, which would cut the graph; as PyTorch,
  -- the value gets the sum of the gradient where it was written (a where)
  local function grad_value(v)
    return T.is_tensor(v) and v.requires_grad and v:dim() == 0 and T.is_grad_enabled()
  end
  local c_masked_fill_, c_index_fill_ = M.masked_fill_, M.index_fill_
  M.masked_fill_ = function(t, mask, v, ...)
    if select("#", ...) > 0 or not grad_value(v) or not T.is_tensor(t) or not T.is_tensor(mask) then
      return c_masked_fill_(t, mask, v, ...)
    end
    if mask.dtype ~= T.bool then return c_masked_fill_(t, mask, v) end -- its own error
    return t:copy_(T.where(mask, v:to(t.dtype), t))
  end
  T.masked_fill_ = M.masked_fill_
  M.index_fill_ = function(t, dim, idx, v, ...)
    if select("#", ...) > 0 or not grad_value(v) or not T.is_tensor(t) or type(dim) ~= "number"
      or not T.is_tensor(idx) then
      return c_index_fill_(t, dim, idx, v, ...)
    end
    local nd = math.max(t:dim(), 1)
    local d = dim < 0 and dim + nd + 1 or dim
    if d < 1 or d > nd then return c_index_fill_(t, dim, idx, v) end -- its own error
    local n = t:dim() == 0 and 1 or t:size(d)
    local m = T.zeros(n, { dtype = T.bool, device = t.device })
    c_index_fill_(m, 1, idx, true)
    if t:dim() > 0 then
      local shape = {}
      for i = 1, t:dim() do shape[i] = i == d and n or 1 end
      m = m:reshape(shape)
    else
      m = m:reshape({})
    end
    return t:copy_(T.where(m, v:to(t.dtype), t))
  end
  T.index_fill_ = M.index_fill_

  -- scatter_reduce_ with gradients for every reduction (the engine's node
  -- covers sum with include_self only): the result is computed without
  -- grad and joins the graph through a node whose backward is PyTorch 1.13's
  -- scatter_reduce_backward, written with ember ops (so create_graph
  -- records it). The node's self is a clone of t, which the in-place form
  -- then overwrites through copy_.
  local c_scatter_reduce_ = M.scatter_reduce_
  local function sr_opts(o)
    if type(o) == "boolean" then return o end
    if type(o) == "table" and getmetatable(o) == nil and o.include_self ~= nil then return o.include_self end
    return true
  end
  local function sr_backward(x, dim, idx, src, reduce, incl)
    return function(g)
      local gx, gs
      if reduce == "sum" then
        gx, gs = g, g:gather(dim, idx)
      elseif reduce == "mean" then
        local N = incl and T.ones_like(g) or T.zeros_like(g)
        N = N:scatter_add(dim, idx, T.ones_like(src))
        N = N:masked_fill(N:eq(0), 1)
        gx = g / N
        gs = g:gather(dim, idx) / N:gather(dim, idx)
      elseif reduce == "prod" then
        local r = T.scatter_reduce(x, dim, idx, src, "prod", { include_self = incl })
        local mx = x:masked_fill(x:eq(0), 1)
        gx = g * T.scatter_reduce(mx, dim, idx, src, "prod", { include_self = incl }) / mx
        local sz = src:eq(0)
        local nz = T.zeros_like(x):scatter_add(dim, idx, sz:to(x.dtype)):gather(dim, idx)
        local single = sz:logical_and(nz:eq(1))
        local msr = T.scatter_reduce(x, dim, idx, src:masked_fill(single, 1), "prod", { include_self = incl })
        gs = T.where(single, (g * msr):gather(dim, idx), (g * r):gather(dim, idx) / src:masked_fill(sz, 1))
      else -- amax / amin: the gradient shared evenly between the elements equal to the result
        local r = T.scatter_reduce(x, dim, idx, src, reduce, { include_self = incl })
        local value = r:gather(dim, idx)
        local self_is = x:eq(r)
        local src_is = src:eq(value)
        local n = self_is:to(x.dtype):scatter_add(dim, idx, src_is:to(x.dtype))
        local gd = g / n
        gx = self_is:to(x.dtype) * gd
        gs = src_is:to(x.dtype) * gd:gather(dim, idx)
      end
      if not incl then gx = gx:scatter(dim, idx, 0) end
      -- src elements past index's extent get no gradient
      local same = idx:dim() == src:dim()
      for i = 1, src:dim() do same = same and idx:size(i) == src:size(i) end
      if not same then
        local full, key = T.zeros_like(src), {}
        for i = 1, src:dim() do key[i] = { 1, idx:size(i) } end
        full[key] = gs
        gs = full
      end
      return { gx, gs }
    end
  end
  M.scatter_reduce_ = function(t, dim, idx, src, reduce, o, ...)
    local incl = sr_opts(o)
    if select("#", ...) > 0 or not (T.is_tensor(t) and T.is_tensor(src) and T.is_tensor(idx))
      or type(dim) ~= "number" or type(reduce) ~= "string" or not T.is_grad_enabled()
      or not (t.requires_grad or src.requires_grad) or (reduce == "sum" and incl)
      or not t.dtype.is_floating_point or t.dtype ~= src.dtype then
      return c_scatter_reduce_(t, dim, idx, src, reduce, o, ...)
    end
    local x = t:clone()
    local r = T.no_grad(function()
      return c_scatter_reduce_(x:detach():clone(), dim, idx, src:detach(), reduce, o)
    end)
    r = C._autograd_custom("ScatterReduceBackward0", { x, src, n = 2 }, r,
      sr_backward(x, dim, idx, src, reduce, incl))
    return t:copy_(r)
  end
  T.scatter_reduce_ = M.scatter_reduce_

  local masked = { masked_fill = true, masked_scatter = true }
  local keeps_layout = { index_fill = true, put = true }
  local ROW_MAJOR = { memory_format = "contiguous" }
  local function out_of_place(name)
    local inplace = M[name .. "_"]
    local f = function(t, ...)
      if not T.is_tensor(t) then
        error(name .. ": expected a tensor for argument #1, got " .. type(t), 2)
      end
      -- masked_fill/masked_scatter broadcast t with the mask first
      -- (PyTorch's expand_outplace): a larger mask makes a larger result
      if masked[name] then
        local mask = ...
        if T.is_tensor(mask) and mask.ndim > 0 then
          local ok, shape = pcall(T.broadcast_shapes, t.shape, mask.shape)
          if ok and table.concat(T.Size(shape):totable(), ",") ~= table.concat(t.shape:totable(), ",") then
            t = t:expand(shape)
          end
        end
      end
      -- a row-major copy (PyTorch's clone(contiguous) or structured
      -- output), except index_fill and put, which keep t's layout
      return inplace(keeps_layout[name] and t:clone() or t:clone(ROW_MAJOR), ...)
    end
    M[name] = f
    T[name] = f
  end
  for _, name in ipairs { "scatter", "scatter_add", "scatter_reduce", "index_fill",
                          "index_copy", "index_add", "masked_fill", "masked_scatter",
                          "put" } do
    out_of_place(name)
  end

  -- t:where(cond, other) is T.where(cond, t, other), as in PyTorch.
  function M.where(t, cond, other, ...)
    return T.where(cond, t, other, ...)
  end
end
