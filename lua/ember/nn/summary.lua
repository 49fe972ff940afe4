-- T.nn.summary(model, input_shape [, options]): torchinfo's summary table
-- (docs/nn.md): each module's output shape and parameter count, in call
-- order and nested by depth, then the totals. Runs the model once (under
-- no_grad, in its current train/eval mode) on zeros of input_shape (the
-- batch dimension included, as torchinfo's input_size); input_shape may be
-- a list of shapes for a model taking several tensors.
-- Returns the table as a string and a statistics table; prints the string
-- unless verbose = 0.
return function(T, nn)
  local ARGS = require "ember.args"
  local OPTS = { "dtype", "verbose", "depth", "col_width" }

  local function fmt_shape(v)
    if T.is_tensor(v) then
      local s = {}
      for i, n in ipairs(v:size():totable()) do s[i] = tostring(n) end
      return "[" .. table.concat(s, ", ") .. "]"
    end
    if type(v) == "table" and getmetatable(v) == nil then
      local parts = {}
      for i = 1, #v do parts[#parts + 1] = fmt_shape(v[i]) end
      if #parts > 0 then return table.concat(parts, ", ") end
    end
    return "--"
  end
  local function commas(n)
    local s = tostring(math.floor(n))
    local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
    return (out:gsub("^,", ""))
  end
  -- padded to w characters (UTF-8: continuation bytes do not count)
  local function pad(s, w)
    local n = #(s:gsub("[\128-\191]", ""))
    if n >= w then return s .. " " end
    return s .. string.rep(" ", w - n)
  end

  function nn.summary(model, input_shape, o, ...)
    ARGS.nomore("summary", 3, ...)
    o = ARGS.checkopts("summary", o, OPTS)
    if type(model) ~= "table" or rawget(model, "_modules") == nil then
      error("summary: expected a module, got " .. type(model), 2)
    end
    if type(input_shape) ~= "table" or #input_shape == 0 then
      error("summary: input_shape must be a list of sizes (batch dimension included) or a list of such lists", 2)
    end
    local shapes = type(input_shape[1]) == "table" and input_shape or { input_shape }
    local dtype = o.dtype or T.get_default_dtype()
    local verbose = o.verbose == nil and 1 or o.verbose
    if verbose ~= 0 and verbose ~= 1 then error("summary: verbose must be 0 or 1, got " .. tostring(verbose), 2) end
    local max_depth = o.depth or 3
    local width = o.col_width or 25

    -- depth and index of every module ("depth-idx" as torchinfo: idx counts
    -- the children of the parent, 1-based)
    local info = {}
    local function walk(m, name, depth, idx)
      info[m] = info[m] or { depth = depth, idx = idx, name = name }
      for i, n in ipairs(rawget(m, "_module_names")) do walk(rawget(m, "_modules")[n], n, depth + 1, i) end
    end
    walk(model, "", 0, 1)

    local rows, handles = {}, {}
    for m in pairs(info) do
      local pre = m:register_forward_pre_hook(function(mod)
        local r = { module = mod, info = info[mod] }
        rows[#rows + 1] = r
        rawset(mod, "_summary_row", r)
      end)
      local post = m:register_forward_hook(function(mod, _, out)
        local r = rawget(mod, "_summary_row")
        if r then r.out = fmt_shape(out) end
        rawset(mod, "_summary_row", nil)
      end)
      handles[#handles + 1] = pre
      handles[#handles + 1] = post
    end
    local inputs = {}
    for i, s in ipairs(shapes) do inputs[i] = T.zeros(s, { dtype = dtype }) end
    local unpack = table.unpack or unpack
    local ok, err = pcall(T.no_grad, function() return model(unpack(inputs)) end)
    for _, h in ipairs(handles) do h.remove() end
    for m in pairs(info) do rawset(m, "_summary_row", nil) end
    if not ok then error("summary: the model's forward failed: " .. tostring(err), 2) end

    local total, trainable = 0, 0
    for _, p in ipairs(model:parameters()) do
      total = total + p:numel()
      if p.requires_grad then trainable = trainable + p:numel() end
    end
    local line = string.rep("=", 40 + 2 * width)
    local out = { line, pad("Layer (type:depth-idx)", 40) .. pad("Output Shape", width) .. "Param #", line }
    local layers = {}
    for _, r in ipairs(rows) do
      local d = r.info.depth
      local own = 0
      for _, p in ipairs(r.module:parameters(false)) do own = own + p:numel() end
      -- a module's own parameters (a container's are its children's): "--" for none
      local nparams = own == 0 and "--" or commas(own)
      if d <= max_depth then
        local label = d == 0 and r.module.__name or
          (string.rep("│    ", d - 1) .. "├─" .. r.module.__name .. ": " .. d .. "-" .. r.info.idx)
        out[#out + 1] = pad(label, 40) .. pad(r.out or "--", width) .. nparams
      end
      layers[#layers + 1] = { name = r.info.name, type = r.module.__name, depth = d,
        output_shape = r.out, params = own }
    end
    out[#out + 1] = line
    out[#out + 1] = "Total params: " .. commas(total)
    out[#out + 1] = "Trainable params: " .. commas(trainable)
    out[#out + 1] = "Non-trainable params: " .. commas(total - trainable)
    out[#out + 1] = line
    local s = table.concat(out, "\n")
    if verbose == 1 then print(s) end
    return s, { total_params = total, trainable_params = trainable, layers = layers }
  end
end
