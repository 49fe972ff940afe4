-- math: elementwise ops, type promotion, metamethods (issue 5).
-- Nearly everything is bound in C (bindings/l_math.c): the methods and
-- T.functions, their in-place variants and the arithmetic metamethods of
-- the tensor metatable. Written here, as compositions of those ops (so
-- differentiable as they are): positive, deg2rad/rad2deg (and their in-place
-- forms), rot90 and fill_diagonal_. docs/math.md is the reference.
return function(T, C)
  local M = C._methods
  local ARGS = require("ember.args")
  local fmt = string.format
  local function check_tensor(op, t)
    if not T.is_tensor(t) then error(fmt("%s: expected a tensor, got %s", op, type(t)), 3) end
  end
  local function define(name, f) M[name], T[name] = f, f end

  -- positive(t): t itself (PyTorch's unary +); refused for bool
  define("positive", function(t, ...)
    ARGS.nooptions("positive", 2, 1, ...)
    check_tensor("positive", t)
    if t.dtype == T.bool then
      error("positive: The `+` operator, on a bool tensor is not supported.", 2)
    end
    return t
  end)

  -- deg2rad / rad2deg: t times pi/180 or 180/pi; an integer or bool input
  -- gives the default float dtype, complex input is refused (PyTorch's)
  for name, c in pairs { deg2rad = math.pi / 180, rad2deg = 180 / math.pi } do
    local function prep(t)
      check_tensor(name, t)
      if t:is_complex() then error(fmt("%s: %s is not supported for complex tensors.", name, name), 3) end
    end
    define(name, function(t, o, ...)
      ARGS.nomore(name, 2, ...)
      prep(t)
      o = ARGS.checkopts(name, o, { "out" })
      if not t:is_floating_point() then t = t:to(T.get_default_dtype()) end
      if o.out ~= nil then -- mul's errors about out, renamed
        local ok, r = pcall(T.mul, t, c, { out = o.out })
        if not ok then error((tostring(r):gsub("^mul:", name .. ":")), 2) end
        return r
      end
      return t * c
    end)
    define(name .. "_", function(t, ...)
      ARGS.nooptions(name .. "_", 2, 1, ...)
      prep(t)
      local ok, r = pcall(t.mul_, t, c) -- an integer t: mul_'s can't-cast error, renamed
      if not ok then error((tostring(r):gsub("^mul_:", name .. "_:")), 2) end
      return r
    end)
  end

  -- equal(a, b): the values compared in the two dtypes' promoted type, as
  -- PyTorch's (torch.equal(int64 16777217, float32 16777216) is true: the
  -- int64 value rounds to float32 first)
  local c_equal = T.equal
  define("equal", function(a, b, ...)
    if select("#", ...) == 0 and T.is_tensor(a) and T.is_tensor(b) and a.dtype ~= b.dtype
      and a.shape == b.shape then
      local dt = T.promote_types(a.dtype, b.dtype)
      a, b = a:to(dt), b:to(dt)
    end
    return c_equal(a, b, ...)
  end)

  -- rot90(t, k = 1, dims = {1, 2}): k quarter turns from the first dim
  -- towards the second (PyTorch's: flips and a transpose)
  define("rot90", function(t, k, dims, ...)
    local op = "rot90"
    ARGS.nomore(op, 3, ...)
    check_tensor(op, t)
    if ARGS.is_opts(k) and dims == nil and next(k) ~= nil and type(next(k)) == "string" then
      local o = ARGS.checkopts(op, k, { "k", "dims" })
      k, dims = o.k, o.dims
    end
    k = k == nil and 1 or k
    if type(k) ~= "number" or k % 1 ~= 0 then
      error(fmt("%s: expected an integer k, got %s", op, tostring(k)), 2)
    end
    dims = dims == nil and { 1, 2 } or dims
    if type(dims) ~= "table" then error(fmt("%s: expected dims as a table of two dims, got %s", op, type(dims)), 2) end
    if #dims ~= 2 then
      error(fmt("%s: expected total rotation dims == 2, but got dims = %d", op, #dims), 2)
    end
    local nd = t:dim()
    if nd < 2 then error(fmt("%s: expected total dims >= 2, but got total dims = %d", op, nd), 2) end
    local d = {}
    for i = 1, 2 do
      local v = dims[i]
      if type(v) ~= "number" or v % 1 ~= 0 then
        error(fmt("%s: expected integer dims, got %s", op, tostring(v)), 2)
      end
      d[i] = v < 0 and v + nd + 1 or v
      if d[i] < 1 or d[i] > nd then
        error(fmt("%s: Rotation dim%d out of range, dim%d = %d", op, i - 1, i - 1, v), 2)
      end
    end
    if d[1] == d[2] then
      error(fmt("%s: expected rotation dims to be different, but got dim0 = %d and dim1 = %d", op,
        dims[1], dims[2]), 2)
    end
    k = k % 4
    if k == 1 then return t:flip({ d[2] }):transpose(d[1], d[2]) end
    if k == 2 then return t:flip({ d[1], d[2] }) end
    if k == 3 then return t:flip({ d[1] }):transpose(d[1], d[2]) end
    return t:clone({ memory_format = "contiguous" })  -- PyTorch's: row-major whatever t's layout
  end)

  -- fill_diagonal_(t, value, wrap = false): the main diagonal (t[i, i, ...];
  -- every dim of equal length past 2-d) set to value; wrap: a tall matrix
  -- starts again N + 1 rows further down (NumPy's and PyTorch's wrap)
  M.fill_diagonal_ = function(t, value, wrap, ...)
    local op = "fill_diagonal_"
    if ARGS.is_opts(wrap) then
      local o = ARGS.checkopts(op, wrap, { "wrap" })
      wrap = o.wrap
    end
    ARGS.nomore(op, 3, ...)
    check_tensor(op, t)
    if type(value) ~= "number" and type(value) ~= "boolean" then
      error(fmt("%s: expected a number for the fill value, got %s", op, type(value)), 2)
    end
    if wrap ~= nil and type(wrap) ~= "boolean" then
      error(fmt("%s: expected a boolean for wrap, got %s", op, type(wrap)), 2)
    end
    local nd = t:dim()
    if nd < 2 then error(fmt("%s: dimensions must larger than 1", op), 2) end
    if nd > 2 then
      for i = 2, nd do
        if t:size(i) ~= t:size(1) then
          error(fmt("%s: all dimensions of input must be of equal length", op), 2)
        end
      end
    end
    local function fill(d)
      local ok, e = pcall(d.fill_, d, value)
      if not ok then error((tostring(e):gsub("^.-fill_:", op .. ":", 1)), 3) end
    end
    if nd == 2 and wrap and t:size(1) > t:size(2) + 1 then
      local h, w = t:size(1), t:size(2)
      for s = 1, h, w + 1 do
        fill(t:narrow(1, s, math.min(w, h - s + 1)):diagonal())
      end
      return t
    end
    local d = t
    for _ = 1, nd - 1 do d = d:diagonal(0, 1, 2) end
    fill(d)
    return t
  end
end
