-- Tensor tools for sequence models (issue 18, item 3): tril/triu (and their
-- in-place forms), diag, diag_embed, T.einsum, T.meshgrid, F.pad, F.one_hot,
-- F.normalize, F.cosine_similarity, T.cdist (docs/tools.md).
--
-- Each is a composite of ember's differentiable engine ops, as PyTorch builds
-- einsum, normalize, cosine_similarity, cdist's matmul form, constant and
-- circular padding and one_hot from its own ops; tril/triu are a masked_fill
-- with a triangle mask, diag_embed a copy into a zero tensor's diagonal view,
-- reflect/replicate padding one index_select per padded dim (whose backward,
-- an index_add, sums the gradient of every copy of an element as PyTorch's
-- reflection/replication backward kernels do). So gradients, double
-- backward, the meta device and every dtype come from those ops, and hosts
-- in C get the same results by calling them. out= is honoured through
-- C._write_out (bindings/l_tools.c: em_write_out's rules). Argument helpers and the
-- error naming wrapper: lua/ember/argcheck.lua.
--
-- Positions are 1-based (dims, class ids); sizes and offsets (diagonal, pad
-- widths) are PyTorch's quantities.
return function(T, C)
  local M = C._methods
  local F = T.nn.functional

  -- -- argument helpers ---------------------------------------------------------
  local A = require("ember.argcheck")(T)
  local is_opts, check_opts, check_tensor, named = A.is_opts, A.check_opts, A.check_tensor, A.named
  local shape_of, fmt_shape = A.shape_of, A.fmt_shape

  local function check_int(op, v, what, level)
    if type(v) ~= "number" or v ~= math.floor(v) or v ~= v or v == math.huge or v == -math.huge then
      error(string.format("%s: expected an integer for %s, got %s", op, what, tostring(v)), level + 1)
    end
    return v
  end

  local function check_number(op, v, what, level)
    if type(v) ~= "number" then
      error(string.format("%s: expected a number for %s, got %s", op, what, tostring(v)), level + 1)
    end
    return v
  end

  local function is_meta(t) return tostring(t.device) == "meta" end

  -- the result, or the caller's out= holding it
  local finish = A.finish

  -- 1-based dim d of an ndim-d tensor to 1..ndim (negative from the end)
  local function wrap_dim(op, d, ndim, level)
    check_int(op, d, "dim", level + 1)
    if d == 0 or d < -ndim or d > ndim then
      error(string.format("%s: dimension %d out of range (expected to be in range of [%d, %d])",
        op, d, -ndim, ndim), level + 1)
    end
    return d < 0 and d + ndim + 1 or d
  end

  -- PyTorch's broadcast of two shapes (tables), or an error naming them
  local function broadcast_shapes(op, a, b, level)
    local n = math.max(#a, #b)
    local out = {}
    for i = 1, n do
      local x, y = a[#a - n + i] or 1, b[#b - n + i] or 1
      if x ~= y and x ~= 1 and y ~= 1 then
        error(string.format("%s: the size of tensor a (%d) must match the size of tensor b (%d) at "
          .. "non-singleton dimension %d", op, x, y, i), level + 1)
      end
      out[i] = x == 1 and y or x
    end
    return out
  end

  local function method_and_function(name, f)
    f = named(name, f)
    M[name] = f
    T[name] = f
  end

  -- -- tril / triu ----------------------------------------------------------------
  -- The elements a triangle op sets to zero: column - row > k (tril) or < k
  -- (triu), an (r, c) bool mask broadcast over the leading (batch) dims.
  local function tri_zero_mask(op, t, k, upper, level)
    if t.ndim < 2 then
      error(string.format("%s: input tensor must have at least 2 dimensions, got %d", op, t.ndim), level + 1)
    end
    local r, c = t.shape[t.ndim - 1], t.shape[t.ndim]
    local dev = t.device
    local d = T.arange(c, { device = dev }) - T.arange(r, { device = dev }):unsqueeze(2)
    if upper then return d:lt(k) end
    return d:gt(k)
  end

  local TRI = { diagonal = true, out = true }
  local function tri_args(op, t, a, b, level)
    check_tensor(op, t, "argument #1", level + 1)
    local o
    if is_opts(a) then o, a = a, nil else o = b end
    o = check_opts(op, o, TRI, level + 1)
    local k = a
    if k == nil then k = o.diagonal end
    if k == nil then k = 0 end
    check_int(op, k, "diagonal", level + 1)
    return k, o
  end

  local function triangle(name, upper)
    method_and_function(name, function(t, a, b)
      local k, o = tri_args(name, t, a, b, 2)
      -- row-major whatever t's layout, as PyTorch's (masked_fill's result is)
      return finish(name, t:masked_fill(tri_zero_mask(name, t, k, upper, 2), 0), o)
    end)
    local iname = name .. "_"
    M[iname] = named(iname, function(t, a, b)
      local k, o = tri_args(iname, t, a, b, 2)
      if o.out ~= nil then error(iname .. ": an in-place op takes no out= option", 2) end
      return t:masked_fill_(tri_zero_mask(iname, t, k, upper, 2), 0)
    end)
  end
  triangle("tril", false)
  triangle("triu", true)

  -- -- diag_embed / diag ----------------------------------------------------------
  -- A zero tensor with one more dim whose (offset, dim1, dim2) diagonal holds
  -- t's last dim; the gradient is the same diagonal of the output's gradient.
  local function diag_embed(op, t, offset, dim1, dim2, level)
    check_int(op, offset, "offset", level + 1)
    if math.abs(offset) > 2 ^ 40 then
      error(string.format("%s: offset %.0f is too large (at most 2^40 in magnitude)", op, offset), level + 1)
    end
    if t.ndim == 0 then
      error(op .. ": expected a tensor with at least 1 dimension, got a 0-d tensor", level + 1)
    end
    local nd = t.ndim + 1
    local a, b = wrap_dim(op, dim1, nd, level + 1), wrap_dim(op, dim2, nd, level + 1)
    if a == b then
      error(string.format("%s: diagonal dimensions cannot be identical %d, %d", op, dim1, dim2), level + 1)
    end
    local m = t.shape[t.ndim] + math.abs(offset)
    local shape, j = {}, 1
    for i = 1, nd do
      if i == a or i == b then
        shape[i] = m
      else
        shape[i] = t.shape[j]
        j = j + 1
      end
    end
    local res = T.zeros(shape, { dtype = t.dtype, device = t.device })
    res:diagonal(offset, a, b):copy_(t)
    return res
  end

  local DE = { offset = true, dim1 = true, dim2 = true, out = true }
  method_and_function("diag_embed", function(t, offset, dim1, dim2)
    local op = "diag_embed"
    check_tensor(op, t, "argument #1", 2)
    local o = {}
    if is_opts(offset) then
      o = check_opts(op, offset, DE, 2)
      offset, dim1, dim2 = o.offset, o.dim1, o.dim2
    end
    return finish(op, diag_embed(op, t, offset or 0, dim1 or -2, dim2 or -1, 2), o)
  end)

  method_and_function("diag", function(t, a, b)
    local op = "diag"
    local k, o = tri_args(op, t, a, b, 2)
    local res
    if t.ndim == 1 then
      res = diag_embed(op, t, k, 1, 2, 2)
    elseif t.ndim == 2 then
      res = t:diagonal(k):clone()
    else
      error(string.format("diag: supports 1-d or 2-d tensors, got a %d-d tensor", t.ndim), 2)
    end
    return finish(op, res, o)
  end)

  -- -- einsum -------------------------------------------------------------------------
  -- PyTorch's algorithm (aten/src/ATen/native/Linear.cpp): labels are
  -- numbered A-Z then a-z; every operand is aligned (repeated labels become
  -- diagonals, missing labels size-1 dims) to the output dims followed by the
  -- contracted ones; operands are contracted left to right, each pair by a
  -- permute + reshape to one bmm (sumproduct_pair).
  local ELL = 52 -- the ellipsis' code
  local function subscript(ch)
    local b = ch:byte()
    if b >= 65 and b <= 90 then return b - 65 end
    if b >= 97 and b <= 122 then return b - 97 + 26 end
    return nil
  end
  local function label_char(s)
    if s < 26 then return string.char(65 + s) end
    return string.char(97 + s - 26)
  end

  -- the product of left and right (same ndim) summed over sum_dims (0-based,
  -- kept as size-1 dims), through one bmm
  local function sumproduct_pair(left, right, sum_dims)
    if #sum_dims == 0 then return left * right end
    local nd = left.ndim
    local is_sum = {}
    for _, d in ipairs(sum_dims) do is_sum[d] = true end
    local lro, lo, ro = {}, {}, {}
    local lro_size, lo_size, ro_size, sum_size = 1, 1, 1, 1
    for i = 0, nd - 1 do
      local sl, sr = left.shape[i + 1] ~= 1, right.shape[i + 1] ~= 1
      if is_sum[i] then
        if sl and sr then
          sum_size = sum_size * left.shape[i + 1]
        elseif sl then
          left = left:sum(i + 1, true)
        elseif sr then
          right = right:sum(i + 1, true)
        end
      elseif sl and sr then
        lro[#lro + 1] = i
        lro_size = lro_size * left.shape[i + 1]
      elseif sl then
        lo[#lo + 1] = i
        lo_size = lo_size * left.shape[i + 1]
      else
        ro[#ro + 1] = i
        ro_size = ro_size * right.shape[i + 1]
      end
    end
    local out_size, lperm, rperm = {}, {}, {}
    local function add(dst, list, f)
      for _, d in ipairs(list) do dst[#dst + 1] = f(d) end
    end
    local function one() return 1 end
    local function lsize(d) return left.shape[d + 1] end
    local function rsize(d) return right.shape[d + 1] end
    local function pos(d) return d + 1 end
    add(out_size, lro, lsize); add(out_size, lo, lsize); add(out_size, sum_dims, one); add(out_size, ro, rsize)
    add(lperm, lro, pos); add(lperm, lo, pos); add(lperm, sum_dims, pos); add(lperm, ro, pos)
    add(rperm, lro, pos); add(rperm, sum_dims, pos); add(rperm, ro, pos); add(rperm, lo, pos)
    local operm, i = {}, 0
    for _, list in ipairs { lro, lo, sum_dims, ro } do
      for _, d in ipairs(list) do
        i = i + 1
        operm[d + 1] = i
      end
    end
    local l = left:permute(lperm):reshape(lro_size, lo_size, sum_size)
    local r = right:permute(rperm):reshape(lro_size, sum_size, ro_size)
    return T.bmm(l, r):view(out_size):permute(operm)
  end

  -- The sublist form, T.einsum(op1, sub1, op2, sub2, ..., [sub_out]), as
  -- PyTorch's: each sublist a list of labels, integers in [0, 52) (labels,
  -- not positions: the same numbers as in PyTorch) or "..." for an
  -- ellipsis; turned into the equation (0-25 are A-Z, 26-51 a-z).
  local function sublist_labels(sub, what)
    if type(sub) ~= "table" or T.is_tensor(sub) then
      error(string.format("einsum: expected a list of subscripts for %s, got %s", what,
                          T.is_tensor(sub) and "a tensor" or type(sub)), 4)
    end
    local n = #sub
    if next(sub, n > 0 and n or nil) ~= nil then
      error(string.format("einsum: the subscripts of %s must be a list (1..n, no holes or named keys)", what), 4)
    end
    local s = {}
    for j = 1, n do
      local v = sub[j]
      if v == nil then
        error(string.format("einsum: the subscripts of %s must be a list (1..n, no holes or named keys)", what), 4)
      elseif v == "..." then
        s[j] = "..."
      elseif type(v) == "number" and v == math.floor(v) and v >= 0 and v < 52 then
        s[j] = label_char(v)
      else
        error(string.format("einsum: subscript %s of %s is not within the valid range [0, 52) (nor \"...\")",
                            tostring(v), what), 4)
      end
    end
    return table.concat(s)
  end
  local function sublist_form(args, n)
    local parts, operands = {}, {}
    local i = 1
    while i + 1 <= n do
      operands[#operands + 1] = args[i]
      check_tensor("einsum", args[i], "operand " .. #operands, 3)
      parts[#parts + 1] = sublist_labels(args[i + 1], "operand " .. #operands)
      i = i + 2
    end
    local eq = table.concat(parts, ",")
    if i == n then
      if T.is_tensor(args[n]) then
        error(string.format("einsum: operand %d has no sublist (the sublist form is op1, sub1, op2, sub2, ..., [sub_out])",
                            #operands + 1), 3)
      end
      eq = eq .. "->" .. sublist_labels(args[n], "the output")
    end
    return eq, operands
  end

  function T.einsum(equation, ...)
    local op = "einsum"
    if T.is_tensor(equation) then
      local eq, operands = sublist_form({ equation, ... }, select("#", ...) + 1)
      return T.einsum(eq, operands)
    end
    if type(equation) ~= "string" then
      error("einsum: expected the equation string (or a tensor and its sublist) as argument #1, got " .. type(equation), 2)
    end
    local operands, num_ops = { ... }, select("#", ...)
    -- a trailing table with named keys is an options table: einsum takes none
    local last = operands[num_ops]
    if num_ops >= 1 and is_opts(last) and next(last) ~= nil and #last == 0 then
      check_opts(op, last, {}, 2)
      num_ops = num_ops - 1
    end
    if num_ops == 1 and is_opts(operands[1]) then
      operands = operands[1]
      num_ops = #operands
    end
    if num_ops == 0 then error("einsum: must provide at least one operand", 2) end
    for i = 1, num_ops do check_tensor(op, operands[i], "operand " .. i, 2) end
    local arrow = equation:find("->", 1, true)
    local lhs = arrow and equation:sub(1, arrow - 1) or equation

    local op_labels = { {} }
    local cur, ell_in_input, i = 1, false, 1
    while i <= #lhs do
      local ch = lhs:sub(i, i)
      if ch == " " then
        i = i + 1
      elseif ch == "." then
        if ell_in_input then
          error(string.format("einsum: found '.' for operand %d for which an ellipsis was already found", cur), 2)
        end
        if lhs:sub(i, i + 2) ~= "..." then
          error(string.format("einsum: found '.' for operand %d that is not part of any ellipsis", cur), 2)
        end
        op_labels[cur][#op_labels[cur] + 1] = ELL
        ell_in_input = true
        i = i + 3
      elseif ch == "," then
        cur = cur + 1
        if cur > num_ops then error("einsum: fewer operands were provided than specified in the equation", 2) end
        op_labels[cur] = {}
        ell_in_input = false
        i = i + 1
      else
        local s = subscript(ch)
        if not s then
          error(string.format("einsum: invalid subscript given at index %d in the equation string, "
            .. "subscripts must be in [a-zA-Z]", i), 2)
        end
        op_labels[cur][#op_labels[cur] + 1] = s
        i = i + 1
      end
    end
    if cur ~= num_ops then error("einsum: more operands were provided than specified in the equation", 2) end

    local label_count = {}
    for s = 0, 51 do label_count[s] = 0 end
    local ell_num_dim = 0
    for k = 1, num_ops do
      local nd, nlabels, has_ell = operands[k].ndim, #op_labels[k], false
      for _, s in ipairs(op_labels[k]) do
        if s == ELL then
          nlabels = nlabels - 1
          has_ell = true
        else
          label_count[s] = label_count[s] + 1
        end
      end
      if has_ell then ell_num_dim = math.max(ell_num_dim, nd - nlabels) end
      if (has_ell and nlabels > nd) or (not has_ell and nlabels ~= nd) then
        error(string.format("einsum: the number of subscripts in the equation (%d) %s the number of "
          .. "dimensions (%d) for operand %d%s", nlabels,
          has_ell and "is more than" or "does not match", nd, k, has_ell and "" or " and no ellipsis was given"), 2)
      end
    end

    local perm_index_of = {}
    local perm_index, ell_index, ell_in_output = 0, 0, false
    if not arrow then
      perm_index = ell_num_dim
      ell_in_output = true
      for s = 0, 51 do
        if label_count[s] == 1 then
          perm_index_of[s] = perm_index
          perm_index = perm_index + 1
        end
      end
    else
      local rhs = equation:sub(arrow + 2)
      local j = 1
      while j <= #rhs do
        local ch = rhs:sub(j, j)
        if ch == " " then
          j = j + 1
        elseif ch == "." then
          if ell_in_output then
            error("einsum: found '.' for output but an ellipsis (...) was already found", 2)
          end
          if rhs:sub(j, j + 2) ~= "..." then
            error("einsum: found '.' for output that is not part of any ellipsis (...)", 2)
          end
          ell_index = perm_index
          perm_index = perm_index + ell_num_dim
          ell_in_output = true
          j = j + 3
        else
          local s = subscript(ch)
          if not s then
            error(string.format("einsum: invalid subscript given at index %d in the equation string, "
              .. "subscripts must be in [a-zA-Z]", #lhs + 2 + j), 2)
          end
          if perm_index_of[s] then
            error(string.format("einsum: output subscript %s appears more than once in the output", ch), 2)
          end
          if label_count[s] == 0 then
            error(string.format("einsum: output subscript %s does not appear in the equation for any input operand", ch), 2)
          end
          perm_index_of[s] = perm_index
          perm_index = perm_index + 1
          j = j + 1
        end
      end
    end
    local out_num_dim = perm_index
    if not ell_in_output then
      ell_index = perm_index
      perm_index = perm_index + ell_num_dim
    end
    for s = 0, 51 do
      if label_count[s] > 0 and not perm_index_of[s] then
        perm_index_of[s] = perm_index
        perm_index = perm_index + 1
      end
    end

    -- align each operand to the perm_index dims
    local label_size, ell_sizes, dim_counts = {}, {}, {}
    for d = 0, perm_index - 1 do dim_counts[d] = 0 end
    for d = 0, ell_num_dim - 1 do ell_sizes[d] = 1 end
    local ops = {}
    for k = 1, num_ops do
      local t = operands[k]
      local permutation = {}
      local dim = 0
      for _, s in ipairs(op_labels[k]) do
        if s == ELL then
          local ndim = operands[k].ndim - (#op_labels[k] - 1)
          for j = ell_num_dim - ndim, ell_num_dim - 1 do
            local size = t.shape[dim + 1]
            if size ~= 1 then
              if ell_sizes[j] ~= 1 and ell_sizes[j] ~= size then
                error(string.format("einsum: dimension %d covered by ellipsis in operand %d has size %d which "
                  .. "does not broadcast with previously seen ellipsis with size %d for the respective dimension",
                  dim + 1, k, size, ell_sizes[j]), 2)
              end
              ell_sizes[j] = size
              dim_counts[ell_index + j] = dim_counts[ell_index + j] + 1
            end
            permutation[ell_index + j] = dim
            dim = dim + 1
          end
        elseif permutation[perm_index_of[s]] == nil then
          local size = t.shape[dim + 1]
          if size ~= 1 then
            if label_size[s] and label_size[s] ~= 1 and label_size[s] ~= size then
              error(string.format("einsum: subscript %s has size %d for operand %d which does not broadcast "
                .. "with previously seen size %d", label_char(s), size, k, label_size[s]), 2)
            end
            label_size[s] = size
            dim_counts[perm_index_of[s]] = dim_counts[perm_index_of[s]] + 1
          end
          permutation[perm_index_of[s]] = dim
          dim = dim + 1
        else
          local prev = permutation[perm_index_of[s]]
          if t.shape[dim + 1] ~= t.shape[prev + 1] then
            error(string.format("einsum: subscript %s is repeated for operand %d but the sizes don't match, %d != %d",
              label_char(s), k, t.shape[dim + 1], t.shape[prev + 1]), 2)
          end
          t = t:diagonal(0, prev + 1, dim + 1):movedim(-1, prev + 1)
        end
      end
      local perm = {}
      for d = 0, perm_index - 1 do
        if permutation[d] == nil then
          t = t:unsqueeze(dim + 1)
          permutation[d] = dim
          dim = dim + 1
        end
        perm[d + 1] = permutation[d] + 1
      end
      ops[k] = t:permute(perm)
    end

    -- contract left to right
    while #ops > 1 do
      local a, b = ops[1], ops[2]
      table.remove(ops, 1)
      table.remove(ops, 1)
      local sum_dims, a_sum, b_sum = {}, {}, {}
      for d = out_num_dim, perm_index - 1 do
        local sa, sb = a.shape[d + 1] ~= 1, b.shape[d + 1] ~= 1
        if sa and sb then
          dim_counts[d] = dim_counts[d] - 1
          if dim_counts[d] == 1 then
            sum_dims[#sum_dims + 1] = d
            dim_counts[d] = 0
          end
        elseif dim_counts[d] == 1 then
          if sa then
            a_sum[#a_sum + 1] = d + 1
            dim_counts[d] = 0
          elseif sb then
            b_sum[#b_sum + 1] = d + 1
            dim_counts[d] = 0
          end
        end
      end
      if #a_sum > 0 then a = a:sum(a_sum, true) end
      if #b_sum > 0 then b = b:sum(b_sum, true) end
      table.insert(ops, 1, sumproduct_pair(a, b, sum_dims))
    end

    local res = ops[1]
    if perm_index - out_num_dim > 0 then
      if num_ops > 1 then
        local sizes = {}
        for d = 1, out_num_dim do sizes[d] = res.shape[d] end
        return res:view(sizes)
      end
      local dims = {}
      for d = out_num_dim + 1, perm_index do dims[#dims + 1] = d end
      return res:sum(dims)
    end
    return res
  end

  -- -- meshgrid ----------------------------------------------------------------------
  local MG = { indexing = true }
  function T.meshgrid(...)
    local op = "meshgrid"
    local args, n = { ... }, select("#", ...)
    local o
    if n > 0 and is_opts(args[n]) and not T.is_tensor(args[n][1]) and args[n][1] == nil then
      o = args[n]
      args[n] = nil
      n = n - 1
    end
    o = check_opts(op, o, MG, 2)
    local as_table = false
    if n == 1 and is_opts(args[1]) then
      args, as_table = args[1], true
      n = #args
    end
    if n == 0 then error("meshgrid: expects a non-empty list of tensors", 2) end
    local indexing = o.indexing or "ij"
    if indexing ~= "ij" and indexing ~= "xy" then
      error(string.format("meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s",
        tostring(indexing)), 2)
    end
    local ts = {}
    for i = 1, n do
      local t = check_tensor(op, args[i], "tensor " .. i, 2)
      if t.ndim > 1 then
        error(string.format("meshgrid: expected 0-d or 1-d tensors, got a %d-d tensor at position %d", t.ndim, i), 2)
      end
      if t.dtype ~= args[1].dtype then
        error(string.format("meshgrid: expects all tensors to have the same dtype, got %s and %s",
          tostring(args[1].dtype), tostring(t.dtype)), 2)
      end
      if tostring(t.device) ~= tostring(args[1].device) then
        error(string.format("meshgrid: expects all tensors to have the same device, got %s and %s",
          tostring(args[1].device), tostring(t.device)), 2)
      end
      ts[i] = t
    end
    local swap = indexing == "xy" and n >= 2
    if swap then ts[1], ts[2] = ts[2], ts[1] end
    local shape = {}
    for i = 1, n do shape[i] = ts[i]:numel() end
    local out = {}
    for i = 1, n do
      local vs = {}
      for j = 1, n do vs[j] = 1 end
      vs[i] = -1
      out[i] = ts[i]:view(vs):expand(shape)
    end
    if swap then out[1], out[2] = out[2], out[1] end
    if as_table then return out end
    return (table.unpack or unpack)(out, 1, n)
  end

  -- -- F.pad -------------------------------------------------------------------------
  local PAD_MODES = { constant = true, reflect = true, replicate = true, circular = true }
  local PAD = { mode = true, value = true }

  -- The source position (1-based) of each output position along a dim of
  -- size s padded by (lo, hi) in a non-constant mode, an int64 tensor on dev.
  local function pad_index(mode, s, lo, hi, dev)
    if mode == "circular" then
      -- PyTorch crops by the negative widths first, then wraps within the
      -- cropped part
      local c0, c1 = math.max(-lo, 0), math.max(-hi, 0)
      local sc, plo, phi = s - c0 - c1, math.max(lo, 0), math.max(hi, 0)
      return T.arange(-plo, sc + phi, { dtype = T.int64, device = dev }) % sc + (c0 + 1)
    end
    local i = T.arange(-lo, s + hi, { dtype = T.int64, device = dev })
    if mode == "replicate" then
      i = i:clamp(0, s - 1)
    else -- reflect
      i = (s - 1) - ((s - 1) - i:abs()):abs()
    end
    return i + 1
  end

  function F.pad(x, pad, mode, value)
    local op = "pad"
    check_tensor(op, x, "argument #1", 2)
    if is_opts(mode) then
      local o = check_opts(op, mode, PAD, 2)
      mode, value = o.mode, o.value
    end
    mode = mode or "constant"
    if not PAD_MODES[mode] then
      error(string.format("pad: unrecognised padding mode %s (expected constant, reflect, replicate or circular)",
        tostring(mode)), 2)
    end
    if type(pad) ~= "table" or T.is_tensor(pad) then
      error("pad: expected the padding as a table of numbers (last dim first), got " .. type(pad), 2)
    end
    local np = #pad
    for i = 1, np do check_int(op, pad[i], "pad[" .. i .. "]", 2) end
    if np % 2 ~= 0 then error(string.format("pad: padding length must be divisible by 2, got %d", np), 2) end
    local nd = x.ndim
    if np > 2 * nd then
      error(string.format("pad: padding length too large: %d values for a %d-d input (at most %d)", np, nd, 2 * nd), 2)
    end
    local pairs_n = np / 2
    if mode == "constant" then
      if value ~= nil then check_number(op, value, "value", 2) end
      local shape = shape_of(x)
      local src = x
      for k = 1, pairs_n do
        local d = nd - k + 1
        local lo, hi = pad[2 * k - 1], pad[2 * k]
        local s = shape[d] + lo + hi
        if s < 0 then
          error(string.format("pad: the input size %d, plus negative padding %d and %d resulted in a negative "
            .. "output size, which is invalid. Check dimension %d of your input", shape[d], lo, hi, d), 2)
        end
        shape[d] = s
        -- negative widths crop the input
        local start, stop = math.max(-lo, 0), x.shape[d] - math.max(-hi, 0)
        src = src:narrow(d, start + 1, math.max(stop - start, 0))
      end
      local res = T.full(shape, value or 0, { dtype = x.dtype, device = x.device })
      local dst = res
      for k = 1, pairs_n do
        local d = nd - k + 1
        local lo = math.max(pad[2 * k - 1], 0)
        dst = dst:narrow(d, lo + 1, src.shape[d])
      end
      dst:copy_(src)
      return res
    end
    if value ~= nil and value ~= 0 then
      error(string.format("pad: padding mode \"%s\" doesn't take in value argument", mode), 2)
    end
    local ok = (np == 2 and (nd == 2 or nd == 3)) or (np == 4 and (nd == 3 or nd == 4))
      or (np == 6 and (nd == 4 or nd == 5))
    if not ok then
      error(string.format("pad: %s padding pads the last 1, 2 or 3 dims of a 2-d/3-d, 3-d/4-d or 4-d/5-d input "
        .. "(PyTorch's 1-d, 2-d, 3-d padding), got %d values for a %d-d input", mode, np, nd), 2)
    end
    if mode == "circular" and np ~= 2 * (nd - 2) then
      error(string.format("pad: circular padding needs a batch and a channel dim: expected %d padding values "
        .. "for a %d-d input, got %d", 2 * (nd - 2), nd, np), 2)
    end
    local xs = shape_of(x)
    if mode ~= "circular" then
      -- torch 1.13's input checks: replicate and 3-d reflect want every dim
      -- but a batch non-zero; 1-d/2-d reflect every dim but the first
      -- (the batch, or the channels of an unbatched input)
      local batched = nd == pairs_n + 2
      local first = (mode == "reflect" and pairs_n < 3) and 2 or (batched and 2 or 1)
      for d = first, nd do
        if xs[d] == 0 then
          error(string.format("pad: %s padding expected a %d-d or %d-d (batch mode) input with %s, but got %s",
            mode, pairs_n + 1, pairs_n + 2,
            first == 1 and "non-zero dimensions" or (mode == "reflect" and pairs_n < 3)
              and "non-zero dimensions after the first" or "possibly 0 batch size and other non-zero dimensions",
            fmt_shape(xs)), 2)
        end
      end
    end
    local res = x
    for k = 1, pairs_n do
      local d = nd - k + 1
      local lo, hi, s = pad[2 * k - 1], pad[2 * k], x.shape[d]
      if mode == "reflect" and (lo >= s or hi >= s) then
        error(string.format("pad: padding size should be less than the corresponding input dimension, but got: "
          .. "padding (%d, %d) at dimension %d of input %s", lo, hi, d, fmt_shape(shape_of(x))), 2)
      end
      if mode == "circular" and (lo > s or hi > s) then
        error(string.format("pad: padding value causes wrapping around more than once: padding (%d, %d) at "
          .. "dimension %d of input %s", lo, hi, d, fmt_shape(shape_of(x))), 2)
      end
      if s + lo + hi < 0 or (s == 0 and lo + hi > 0) then
        error(string.format("pad: %s padding (%d, %d) of dimension %d (size %d) gives an invalid output size",
          mode, lo, hi, d, s), 2)
      end
      if mode == "circular" and s + math.min(lo, 0) + math.min(hi, 0) <= 0 and s + lo + hi > 0 then
        -- torch 1.13 wraps within nothing there (it reads outside the input)
        error(string.format("pad: circular padding (%d, %d) of dimension %d (size %d) crops the whole dimension "
          .. "and then wraps within it", lo, hi, d, s), 2)
      end
    end
    if mode ~= "circular" then
      -- torch 1.13 refuses an output whose padded dims are all below 1
      local small, names, ins, outs = true, { "W", "H", "D" }, {}, {}
      for k = pairs_n, 1, -1 do
        local d = nd - k + 1
        local o = x.shape[d] + pad[2 * k - 1] + pad[2 * k]
        if o >= 1 then small = false end
        ins[#ins + 1] = names[k] .. ": " .. x.shape[d]
        outs[#outs + 1] = names[k] .. ": " .. o
      end
      if small then
        error(string.format("pad: %s padding: input (%s) is too small. Calculated output %s", mode,
          table.concat(ins, ", "), table.concat(outs, " ")), 2)
      end
    end
    for k = 1, pairs_n do
      local d = nd - k + 1
      local lo, hi, s = pad[2 * k - 1], pad[2 * k], x.shape[d]
      if lo ~= 0 or hi ~= 0 then
        res = res:index_select(d, pad_index(mode, s, lo, hi, x.device))
      end
    end
    if res == x then res = x:clone() end
    return res
  end

  -- -- F.one_hot ---------------------------------------------------------------------
  -- Class ids are 1-based, as cross_entropy takes them: id c sets position c.
  function F.one_hot(t, num_classes)
    local op = "one_hot"
    check_tensor(op, t, "argument #1", 2)
    if is_opts(num_classes) then
      num_classes = check_opts(op, num_classes, { num_classes = true }, 2).num_classes
    end
    if t.dtype ~= T.int64 then
      error(string.format("one_hot: is only applicable to index tensors (ember.int64), got %s", tostring(t.dtype)), 2)
    end
    local n = num_classes
    if n ~= nil then check_int(op, n, "num_classes", 2) end
    local meta = is_meta(t)
    if n == nil or n == -1 then
      if meta then error("one_hot: num_classes must be given for a meta tensor (the default reads the values)", 2) end
      if t:numel() == 0 then
        error("one_hot: can not infer the total number of classes from an empty tensor; pass num_classes", 2)
      end
      n = t:max():item()
    elseif n < 0 then
      error(string.format("one_hot: num_classes must be positive (or -1 for the largest id), got %d", n), 2)
    end
    if not meta and t:numel() > 0 then
      local lo, hi = t:min():item(), t:max():item()
      if lo < 1 then
        error(string.format("one_hot: class ids are 1-based: got id %d (expected 1 <= id <= %d)", lo, n), 2)
      end
      if hi > n then
        error(string.format("one_hot: class id %d is larger than num_classes %d", hi, n), 2)
      end
    end
    local shape = shape_of(t)
    shape[#shape + 1] = n
    local res = T.zeros(shape, { dtype = T.int64, device = t.device })
    if t:numel() > 0 then res:scatter_(t.ndim + 1, t:unsqueeze(-1), 1) end
    return res
  end

  -- -- F.normalize, F.cosine_similarity ------------------------------------------------
  local NORM = { p = true, dim = true, eps = true, out = true }
  -- PyTorch's defaults: p = 2, dim = 1 (0-based: the second dim; ember's 2), eps = 1e-12
  function F.normalize(x, p, dim, eps, out)
    local op = "normalize"
    check_tensor(op, x, "argument #1", 2)
    local o = { out = out }
    if is_opts(p) then
      o = check_opts(op, p, NORM, 2)
      p, dim, eps = o.p, o.dim, o.eps
    end
    p, dim, eps = p or 2, dim or 2, eps or 1e-12
    check_number(op, p, "p", 2)
    check_number(op, eps, "eps", 2)
    wrap_dim(op, dim, math.max(x.ndim, 1), 2)
    local denom = x:norm(p, dim, true):clamp_min(eps):expand(x.shape)
    return finish(op, x / denom, o)
  end

  local COS = { dim = true, eps = true }
  local function cosine_similarity(x1, x2, dim, eps)
    local op = "cosine_similarity"
    check_tensor(op, x1, "x1", 3)
    check_tensor(op, x2, "x2", 3)
    if is_opts(dim) then
      local o = check_opts(op, dim, COS, 3)
      dim, eps = o.dim, o.eps
    end
    dim, eps = dim or 2, eps or 1e-8
    check_number(op, eps, "eps", 3)
    local common = T.result_type(x1, x2)
    if not common.is_floating_point then
      error(string.format("cosine_similarity: expected common dtype to be floating point, yet common dtype is %s",
        tostring(common)), 3)
    end
    local shape = broadcast_shapes(op, shape_of(x1), shape_of(x2), 3)
    wrap_dim(op, dim, math.max(#shape, 1), 3)
    local a, b = x1:to(common):expand(shape), x2:to(common):expand(shape)
    -- PyTorch 1.13 (ATen's cosine_similarity): each input divided by the
    -- square root of its sum of squares, that sum clamped to eps^2 in place
    -- under no_grad (so its gradient passes the clamp unchanged, and the
    -- square root's backward sees the clamped value), then the sum of the
    -- products.
    local sa, sb = a:pow(2):sum(dim, true), b:pow(2):sum(dim, true)
    T.no_grad(function()
      sa:clamp_min_(eps * eps)
      sb:clamp_min_(eps * eps)
    end)
    return ((a / sa:sqrt()) * (b / sb:sqrt())):sum(dim)
  end
  function F.cosine_similarity(x1, x2, dim, eps) return cosine_similarity(x1, x2, dim, eps) end

  -- -- T.cdist -----------------------------------------------------------------------
  local CDIST = { p = true, compute_mode = true }
  local CMODES = { use_mm_for_euclid_dist_if_necessary = 0, use_mm_for_euclid_dist = 1,
                   donot_use_mm_for_euclid_dist = 2 }

  -- sqrt(s) (or s^(1/p)) with a zero gradient where s == 0, as PyTorch's
  -- _cdist_backward gives
  -- s^(1/p) with a zero gradient at s = 0; NaN stays NaN (a NaN coordinate
  -- gives a NaN distance, as PyTorch)
  local function root(s, p)
    local pos = s:gt(0)
    local safe = T.where(pos, s, 1)
    safe = p == 2 and safe:sqrt() or safe:pow(1 / p)
    return T.where(pos, safe, T.where(s:isnan(), s, 0))
  end

  -- PyTorch's _euclidean_dist: |a|^2 - 2 a.b + |b|^2 through one matmul
  local function euclid_mm(x1, x2)
    local n1, n2 = x1:pow(2):sum(-1, true), x2:pow(2):sum(-1, true)
    local a = T.cat({ x1 * -2, n1, T.ones_like(n1) }, -1)
    local b = T.cat({ x2, T.ones_like(n2), n2 }, -1)
    -- the gradient is 0 where a distance is 0, as PyTorch's _euclidean_dist_backward
    return root(T.matmul(a, b.mT):clamp_min(0), 2)
  end

  local function cdist_direct(x1, x2, p)
    local diff = x1:unsqueeze(-2) - x2:unsqueeze(-3)
    if p == 0 then
      return diff:ne(0):to(x1.dtype):sum(-1) + (diff * 0):sum(-1)
    elseif p == 1 then
      return diff:abs():sum(-1)
    elseif p == 2 then
      return root(diff:pow(2):sum(-1), 2)
    elseif p == math.huge then
      -- no columns: every distance 0 (PyTorch's), not an empty max
      if diff.shape[diff.ndim] == 0 then return diff:abs():sum(-1) end
      return diff:abs():amax(-1)
    end
    local ad = diff:abs()
    local nz = ad:ne(0)  -- NaN counts (its power is NaN)
    local adp = T.where(nz, T.where(nz, ad, 1):pow(p), 0)
    return root(adp:sum(-1), p)
  end

  function T.cdist(x1, x2, p, compute_mode)
    local op = "cdist"
    check_tensor(op, x1, "x1", 2)
    check_tensor(op, x2, "x2", 2)
    if is_opts(p) then
      local o = check_opts(op, p, CDIST, 2)
      p, compute_mode = o.p, o.compute_mode
    elseif is_opts(compute_mode) then
      compute_mode = check_opts(op, compute_mode, CDIST, 2).compute_mode
    end
    p = p or 2
    check_number(op, p, "p", 2)
    if p < 0 or p ~= p then error(string.format("cdist: only supports non-negative p values, got %g", p), 2) end
    local mode = CMODES[compute_mode or "use_mm_for_euclid_dist_if_necessary"]
    if not mode then error(string.format("cdist: %s is not a valid value for compute_mode", tostring(compute_mode)), 2) end
    if x1.ndim < 2 then error(string.format("cdist: only supports at least 2-d tensors, x1 got: %d-d", x1.ndim), 2) end
    if x2.ndim < 2 then error(string.format("cdist: only supports at least 2-d tensors, x2 got: %d-d", x2.ndim), 2) end
    if not x1.dtype.is_floating_point then
      error(string.format("cdist: only supports floating-point dtypes, x1 got: %s", tostring(x1.dtype)), 2)
    end
    if x2.dtype ~= x1.dtype then
      error(string.format("cdist: expected both inputs to have the same dtype, got %s and %s",
        tostring(x1.dtype), tostring(x2.dtype)), 2)
    end
    local c1, c2 = x1.shape[x1.ndim], x2.shape[x2.ndim]
    if c1 ~= c2 then
      error(string.format("cdist: x1 and x2 must have the same number of columns. x1: %d x2: %d", c1, c2), 2)
    end
    local r1, r2 = x1.shape[x1.ndim - 1], x2.shape[x2.ndim - 1]
    local b1, b2 = shape_of(x1), shape_of(x2)
    b1[#b1], b1[#b1 - 1], b2[#b2], b2[#b2 - 1] = nil, nil, nil, nil
    local batch = broadcast_shapes(op, b1, b2, 2)
    local s1, s2 = {}, {}
    for i = 1, #batch do s1[i], s2[i] = batch[i], batch[i] end
    s1[#s1 + 1], s1[#s1 + 2] = r1, c1
    s2[#s2 + 1], s2[#s2 + 2] = r2, c2
    local a, b = x1:expand(s1), x2:expand(s2)
    if x1:numel() > 0 and x2:numel() > 0 and p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))) then
      return euclid_mm(a, b)
    end
    return cdist_direct(a, b, p)
  end

  T.einsum, T.meshgrid, T.cdist = named("einsum", T.einsum), named("meshgrid", T.meshgrid), named("cdist", T.cdist)
  for _, name in ipairs { "pad", "one_hot", "normalize", "cosine_similarity" } do F[name] = named(name, F[name]) end
  T.cosine_similarity = F.cosine_similarity
end
