-- Printing: tostring(t) as PyTorch 1.13 prints, character for character
-- (torch/_tensor_str.py), with "ember." in place of "torch." in dtype
-- suffixes, and T.set_printoptions / T.get_printoptions.
--
-- The values come from C._print_values, which reads only the elements the
-- summary shows (PyTorch's get_summarized_data), so printing a huge tensor
-- costs a few dozen reads. Numbers are formatted by C._fmt_float (C's
-- printf, exact like Python's format; LuaJIT's string.format is not exact
-- on ties). docs/printing.md describes the rules.
return function(T, C)
  local values_of, fmt_float = C._print_values, C._fmt_float
  local floor, ceil, abs, huge = math.floor, math.ceil, math.abs, math.huge
  local concat, srep = table.concat, string.rep

  -- PRINT_OPTS; sci_mode nil means "chosen per tensor".
  local opts = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80, sci_mode = nil }

  local profiles = {
    default = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 },
    short = { precision = 2, threshold = 1000, edgeitems = 2, linewidth = 80 },
    full = { precision = 4, threshold = huge, edgeitems = 3, linewidth = 80 },
  }

  local function check_count(name, v, min)
    if type(v) ~= "number" or v ~= floor(v) or v < min or v == huge then
      error(string.format("set_printoptions: %s must be an integer >= %d, got %s",
        name, min, tostring(v)), 3)
    end
  end

  -- T.set_printoptions{precision=, threshold=, edgeitems=, linewidth=,
  -- profile=, sci_mode=}. As in PyTorch, sci_mode is reset to automatic
  -- (nil) by any call that does not name it.
  local nomore = require("ember.args").nomore
  function T.set_printoptions(o, ...)
    nomore("set_printoptions", 1, ...)
    o = o or {}
    if type(o) ~= "table" then
      error("set_printoptions: expected an options table, got " .. type(o), 2)
    end
    for k in pairs(o) do
      if k ~= "precision" and k ~= "threshold" and k ~= "edgeitems" and k ~= "linewidth"
          and k ~= "profile" and k ~= "sci_mode" then
        error("set_printoptions: unknown option '" .. tostring(k) .. "'", 2)
      end
    end
    if o.profile ~= nil then
      local p = profiles[o.profile]
      if not p then
        error("set_printoptions: profile must be 'default', 'short' or 'full', got "
          .. tostring(o.profile), 2)
      end
      for k, v in pairs(p) do opts[k] = v end
    end
    if o.precision ~= nil then
      check_count("precision", o.precision, 0)
      -- Python formats any precision up to INT_MAX ("precision too big" past it)
      if o.precision > 2147483647 then
        error("set_printoptions: precision too big (at most 2147483647), got "
          .. string.format("%.0f", o.precision), 2)
      end
    end
    if o.edgeitems ~= nil then check_count("edgeitems", o.edgeitems, 0) end
    if o.linewidth ~= nil then check_count("linewidth", o.linewidth, 1) end
    if o.threshold ~= nil and (type(o.threshold) ~= "number" or o.threshold ~= o.threshold
        or o.threshold < 0) then
      error("set_printoptions: threshold must be a number >= 0 (math.huge for no "
        .. "summarisation), got " .. tostring(o.threshold), 2)
    end
    if o.sci_mode ~= nil and type(o.sci_mode) ~= "boolean" then
      error("set_printoptions: sci_mode must be true, false or nil, got " .. tostring(o.sci_mode), 2)
    end
    if o.precision ~= nil then opts.precision = o.precision end
    if o.threshold ~= nil then opts.threshold = o.threshold end
    if o.edgeitems ~= nil then opts.edgeitems = o.edgeitems end
    if o.linewidth ~= nil then opts.linewidth = o.linewidth end
    opts.sci_mode = o.sci_mode
  end

  function T.get_printoptions(...)
    nomore("get_printoptions", 0, ...)
    return { precision = opts.precision, threshold = opts.threshold, edgeitems = opts.edgeitems,
      linewidth = opts.linewidth, sci_mode = opts.sci_mode }
  end

  -- _Formatter: decides int_mode / sci_mode and the column width from the
  -- (summarised) values.
  local function make_formatter(vals, floating)
    local f = { floating = floating, int_mode = true, sci_mode = false, width = 1 }
    local prec = opts.precision
    if not floating then
      for i = 1, #vals do
        local n = #vals[i]
        if n > f.width then f.width = n end
      end
      return f
    end
    local nz, mn, mx = {}, huge, 0
    for i = 1, #vals do
      local v = vals[i]
      if v == v and v ~= huge and v ~= -huge and v ~= 0 then
        nz[#nz + 1] = v
        local a = abs(v)
        if a < mn then mn = a end
        if a > mx then mx = a end
      end
    end
    if #nz == 0 then return f end -- PyTorch returns before applying sci_mode
    for i = 1, #nz do
      if nz[i] ~= ceil(nz[i]) then f.int_mode = false; break end
    end
    local w = 1
    if f.int_mode then
      if mx / mn > 1000.0 or mx > 1.0e8 then
        f.sci_mode = true
        for i = 1, #nz do w = math.max(w, #fmt_float(nz[i], "e", prec)) end
      else
        for i = 1, #nz do w = math.max(w, #fmt_float(nz[i], "f", 0) + 1) end
      end
    else
      if mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4 then
        f.sci_mode = true
        for i = 1, #nz do w = math.max(w, #fmt_float(nz[i], "e", prec)) end
      else
        for i = 1, #nz do w = math.max(w, #fmt_float(nz[i], "f", prec)) end
      end
    end
    f.width = w
    if opts.sci_mode ~= nil then f.sci_mode = opts.sci_mode end
    return f
  end

  local function format(f, v)
    local s
    if f.floating then
      if f.sci_mode then
        s = fmt_float(v, "e", opts.precision, f.width)
      elseif f.int_mode then
        s = fmt_float(v, "f", 0)
        if v == v and v ~= huge and v ~= -huge then s = s .. "." end
      else
        s = fmt_float(v, "f", opts.precision)
      end
    else
      s = v
    end
    local pad = f.width - #s
    return pad > 0 and srep(" ", pad) .. s or s
  end

  -- The walk of _tensor_str_with_formatter over the flat summarised list.
  -- kept[d]: entries of dim d in the list; fstride[d]: list stride of dim d;
  -- split[d]: the number of leading entries before "..." (nil: no "...").
  local function tensor_str(t, indent)
    local sz = t:size()
    local nd = #sz
    local summarize = t:numel() > opts.threshold
    local e = opts.edgeitems
    local cplx = t:is_complex()
    local vals, f, fmt_el, width
    if cplx then
      -- PyTorch's two formatters: the real parts and the imaginary parts
      -- each decide their own mode and width; an element is real, sign,
      -- imag, "j" (torch's _vector_str counts both widths + 1, plus the
      -- ", " every element gets below)
      local re, im = values_of(t.real, e, summarize), values_of(t.imag, e, summarize)
      local f1, f2 = make_formatter(re, true), make_formatter(im, true)
      vals = {}
      for i = 1, #re do vals[i] = i end
      fmt_el = function(i)
        local is = (format(f2, im[i]) .. "j"):gsub("^%s+", "")
        local c = is:sub(1, 1)
        return format(f1, re[i]) .. ((c == "+" or c == "-") and "" or "+") .. is
      end
      width = f1.width + f2.width + 1
    else
      vals = values_of(t, e, summarize)
      f = make_formatter(vals, t.dtype.is_floating_point)
      fmt_el = function(v) return format(f, v) end
      width = f.width
    end
    if nd == 0 then return fmt_el(vals[1]) end
    local kept, split, fstride = {}, {}, {}
    for d = 1, nd do
      if summarize and sz[d] > 2 * e then
        kept[d] = e > 0 and 2 * e or sz[d]
        split[d] = 0 + e
      else
        kept[d] = sz[d]
      end
    end
    local s = 1
    for d = nd, 1, -1 do fstride[d] = s; s = s * kept[d] end
    local lw = opts.linewidth

    local function walk(d, base, ind)
      if d == nd then
        local data = {}
        for i = 0, kept[d] - 1 do
          if split[d] == i then data[#data + 1] = " ..." end
          data[#data + 1] = fmt_el(vals[base + i + 1])
        end
        local per_line = math.max(1, floor((lw - ind) / (width + 2)))
        local lines = {}
        for i = 1, #data, per_line do
          lines[#lines + 1] = concat(data, ", ", i, math.min(i + per_line - 1, #data))
        end
        return "[" .. concat(lines, ",\n" .. srep(" ", ind + 1)) .. "]"
      end
      local slices = {}
      for i = 0, kept[d] - 1 do
        if split[d] == i then slices[#slices + 1] = "..." end
        slices[#slices + 1] = walk(d + 1, base + i * fstride[d], ind + 1)
      end
      return "[" .. concat(slices, "," .. srep("\n", nd - d) .. srep(" ", ind + 1)) .. "]"
    end
    return walk(1, 0, indent)
  end

  local function add_suffixes(s, suffixes, indent)
    local parts = { s }
    local nl = s:find("\n[^\n]*$")
    -- Python: len(s) - s.rfind("\n") + 1 (rfind is -1 without a newline)
    local last_len = nl and (#s - (nl - 1) + 1) or (#s + 2)
    for _, suffix in ipairs(suffixes) do
      if last_len + #suffix + 2 > opts.linewidth then
        parts[#parts + 1] = ",\n" .. srep(" ", indent) .. suffix
        last_len = indent + #suffix
      else
        parts[#parts + 1] = ", " .. suffix
        last_len = last_len + #suffix + 2
      end
    end
    parts[#parts + 1] = ")"
    return concat(parts)
  end

  local function grad_fn_name(t)
    local ok, gf = pcall(function() return t.grad_fn end)
    if not ok or gf == nil then return nil end
    local ok2, name = pcall(function()
      local n = gf.name
      if type(n) == "function" then n = n(gf) end
      return n
    end)
    return (ok2 and type(name) == "string") and name or tostring(gf)
  end

  local function tostring_tensor(t)
    local prefix = "tensor("
    local indent = #prefix
    local suffixes = {}
    local dev = tostring(t.device)
    if dev ~= "cpu" then suffixes[#suffixes + 1] = "device='" .. dev .. "'" end
    local dt, default = t.dtype, T.get_default_dtype()
    -- the default complex dtype (PyTorch 1.13 prints it without dtype=)
    local default_c = default == T.float64 and T.complex128 or T.complex64
    local body
    if dev == "meta" then
      -- no values: PyTorch's form, tensor(..., device='meta', size=(2, 3))
      local sz, parts = t:size(), {}
      for i = 1, #sz do parts[i] = string.format("%d", sz[i]) end
      suffixes[#suffixes + 1] = "size=(" .. concat(parts, ", ") .. (#sz == 1 and ",)" or ")")
      if dt ~= default then suffixes[#suffixes + 1] = "dtype=" .. tostring(dt) end
      body = "..."
    elseif t:numel() == 0 then
      local sz = t:size()
      if #sz ~= 1 then
        local parts = {}
        for i = 1, #sz do parts[i] = string.format("%d", sz[i]) end
        suffixes[#suffixes + 1] = "size=(" .. concat(parts, ", ") .. (#sz == 1 and ",)" or ")")
      end
      if dt ~= default then suffixes[#suffixes + 1] = "dtype=" .. tostring(dt) end
      body = "[]"
    else
      if dt ~= default and dt ~= default_c and dt ~= T.int64 and dt ~= T.bool then
        suffixes[#suffixes + 1] = "dtype=" .. tostring(dt)
      end
      -- the values are read on the host (a device tensor is copied first)
      -- in no-grad mode: reading the values (views, items) of a tensor that
      -- requires grad must not record graph nodes
      local prev = C.set_grad_enabled and C.set_grad_enabled(false)
      local ok, res = pcall(tensor_str, dev ~= "cpu" and t:cpu() or t, indent)
      if C.set_grad_enabled then C.set_grad_enabled(prev) end
      if not ok then error(res, 0) end
      body = res
    end
    local gname = grad_fn_name(t)
    if gname then
      suffixes[#suffixes + 1] = "grad_fn=<" .. gname .. ">"
    elseif t.requires_grad then
      suffixes[#suffixes + 1] = "requires_grad=True"
    end
    local s = add_suffixes(prefix .. body, suffixes, indent)
    -- a parameter (nn.Parameter's, or one a module holds) prints as
    -- PyTorch's Parameter.__repr__ prints it
    local nn = rawget(T, "nn")
    if nn and nn.Module and nn.Module._is_marked(t) then s = "Parameter containing:\n" .. s end
    return s
  end

  C._Tensor_mt.__tostring = tostring_tensor
  T._tensor_str = function(t, ...)
    require("ember.args").nomore("_tensor_str", 1, ...)
    return tostring_tensor(t)
  end
end
