-- Spatial transformers and the 3-d layers (docs/nn.md, "Grid sampling and
-- 3-d layers"), each a composite of ember's differentiable ops with PyTorch
-- 1.13's semantics, so autograd gives its gradients:
--   F.affine_grid (4-d and 5-d sizes) and F.grid_sample (4-d input:
--   bilinear, nearest, bicubic; 5-d input: bilinear (trilinear), nearest;
--   zeros / border / reflection padding): the source coordinates as
--   PyTorch's grid_sampler_compute_source_index, the corners read by gather
--   on the flattened H x W plane (D x H x W volume);
--   F.conv3d (on F.conv2d: the strided depth slices of each kernel depth
--   offset stacked into the channels, depth folded into the batch, one
--   conv2d) and F.conv_transpose3d (on F.conv_transpose2d: each kernel depth
--   offset's output added at its depth by index_add);
--   F.max_pool3d / F.avg_pool3d (the 2-d kernels over the depth slices of
--   each window, then a max / sum over the window's depth), the adaptive 3-d
--   pools (separable over W, H, D, as the 2-d ones), and their modules.
-- Dims, pooling indices (1-based flat positions in the D x H x W volume)
-- are 1-based as everywhere in ember.
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local is_opts, named, set, shape_of = A.is_opts, A.named, A.set, A.shape_of
  local fmt, unpack = string.format, table.unpack or unpack

  local function check_tensor(op, x, what)
    if not T.is_tensor(x) then error(fmt("%s: expected a tensor for %s, got %s", op, what or "input", type(x)), 3) end
  end
  local function check_opts(op, o, allowed) return A.check_opts(op, o, allowed, 3) end
  -- a number or n of them (argcheck.lua), every element an integer: an
  -- infinite or fractional kernel, stride, padding or dilation is refused
  -- here, before any size is computed from it; raised at the op's caller
  local function tuple(op, v, n, what)
    local t = A.tuple(op, v, n, what, 4)
    for i = 1, n do
      local e = t[i]
      if type(e) ~= "number" or e ~= math.floor(e) or e == math.huge or e == -math.huge then
        error(fmt("%s: expected %s to be integers, got %s", op, what, tostring(e)), 4)
      end
    end
    return t
  end
  local function list_repr(v) return "[" .. table.concat(v, ", ") .. "]" end
  local function sizes_of(op, size)
    if T.is_tensor(size) then size = size:tolist() end
    if type(size) == "table" and size.totable then size = size:totable() end
    if type(size) ~= "table" then error(fmt("%s: expected size to be a list of sizes, got %s", op, type(size)), 4) end
    for i = 1, #size do
      if type(size[i]) ~= "number" then error(fmt("%s: expected size to be a list of sizes, got %s", op, tostring(size[i])), 4) end
    end
    return { unpack(size) }
  end

  -- -- affine_grid ------------------------------------------------------------------------
  -- PyTorch's linspace_from_neg_one: 0 for one step; scaled by (n - 1) / n
  -- without align_corners
  local function base_coords(n, align, dtype, device)
    if n <= 1 then return T.zeros({ 1 }, { dtype = dtype, device = device }) end
    local r = T.linspace(-1, 1, n, { dtype = dtype, device = device })
    if not align then r = r * ((n - 1) / n) end
    return r
  end

  local AG = set { "align_corners" }
  function F.affine_grid(theta, size, align_corners, ...)
    local op = "affine_grid"
    if is_opts(align_corners) then
      nomore(op, 3, ...)
      align_corners = check_opts(op, align_corners, AG).align_corners
    else
      nomore(op, 3, ...)
    end
    check_tensor(op, theta, "theta")
    size = sizes_of(op, size)
    local align = align_corners == true
    if not theta.dtype.is_floating_point then
      error(fmt("%s: Expected theta to have floating point type, but got %s", op, tostring(theta.dtype)), 2)
    end
    local nd = #size - 2
    if nd == 2 then
      if theta.ndim ~= 3 or theta.shape[2] ~= 2 or theta.shape[3] ~= 3 then
        error(fmt("%s: Expected a batch of 2D affine matrices of shape Nx2x3 for size %s. Got %s.", op,
          list_repr(size), list_repr(shape_of(theta))), 2)
      end
    elseif nd == 3 then
      if theta.ndim ~= 3 or theta.shape[2] ~= 3 or theta.shape[3] ~= 4 then
        error(fmt("%s: Expected a batch of 3D affine matrices of shape Nx3x4 for size %s. Got %s.", op,
          list_repr(size), list_repr(shape_of(theta))), 2)
      end
    else
      error(fmt("%s: affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
        .. "Got size %s.", op, list_repr(size)), 2)
    end
    local smallest = math.huge
    for i = 1, #size do smallest = math.min(smallest, size[i]) end
    if smallest <= 0 and not (align and smallest == 1) then
      error(fmt("%s: Expected non-zero, positive output size. Got %s", op, list_repr(size)), 2)
    end
    if theta.shape[1] ~= size[1] then
      error(fmt("%s: expected theta's batch size %d to match size[1] = %d", op, theta.shape[1], size[1]), 2)
    end
    local dt, dev = theta.dtype, theta.device
    -- the base grid: (x, y[, z], 1) at each output position, x along the last dim
    local spatial = { unpack(size, 3) }
    local count = 1
    for i = 1, nd do count = count * spatial[i] end
    local cols = {}
    for i = 1, nd do
      -- coordinate i (x = the last spatial dim) broadcast over the grid
      local d = nd - i + 1
      local shape = {}
      for j = 1, nd do shape[j] = 1 end
      shape[d] = spatial[d]
      cols[i] = base_coords(spatial[d], align, dt, dev):view(shape):expand(spatial):reshape(count, 1)
    end
    cols[nd + 1] = T.ones({ count, 1 }, { dtype = dt, device = dev })
    local base = T.cat(cols, 2) -- (count, nd + 1)
    local grid = base:unsqueeze(1):expand(size[1], count, nd + 1):matmul(theta:transpose(2, 3))
    local out = { size[1] }
    for i = 1, nd do out[i + 1] = spatial[i] end
    out[nd + 2] = nd
    return grid:view(out)
  end
  F.affine_grid = named("affine_grid", F.affine_grid)

  -- -- grid_sample --------------------------------------------------------------------------
  -- PyTorch's grid_sampler_unnormalize
  local function unnormalize(c, n, align)
    if align then return ((c + 1) / 2) * (n - 1) end
    return ((c + 1) * n - 1) / 2
  end
  -- clip_coordinates with clip_coordinates_set_grad's gradient: 0 at and
  -- beyond the bounds, 1 strictly inside. +-inf go to the bounds; NaN to
  -- nan_at: torch 1.13's 2-d (vectorised) kernel clamps NaN to 0, its 3-d
  -- one (std::min(n - 1, std::max(NaN, 0))) to n - 1
  local function clip(c, n, nan_at)
    local inside = c:gt(0):logical_and(c:lt(n - 1))
    return T.where(inside, c, c:detach():nan_to_num(nan_at, n - 1, 0):clamp(0, n - 1))
  end
  -- reflect_coordinates(c, twice_low, twice_high): the triangle wave;
  -- gradient +-1 (the flips' parity and the side of min)
  local function reflect(c, twice_low, twice_high)
    if twice_low == twice_high then return c * 0 end
    local min, span = twice_low / 2, (twice_high - twice_low) / 2
    local a = (c - min):abs()
    local flips = (a / span):detach():floor()
    local extra = a - flips * span
    local even = flips:remainder(2):eq(0)
    return T.where(even, extra + min, (-extra) + (span + min))
  end
  -- the padded source coordinate; reflection turns +-inf and NaN into NaN,
  -- which clip sends to nan_at (0 for a 4-d input, n - 1 for a 5-d one)
  local function source_coords(c, n, padding, align, nan_at)
    if padding == "border" then return clip(c, n, nan_at) end
    if padding == "reflection" then
      if align then c = reflect(c, 0, 2 * (n - 1)) else c = reflect(c, -1, 2 * n - 1) end
      return clip(c, n, nan_at)
    end
    return c
  end

  -- the values of input (N, C, H, W) at integer coordinates ix, iy (float
  -- tensors (N, Ho, Wo)), and where they lie inside the image (the
  -- position read elsewhere, NaN and +-inf included, is the first element)
  local function read(flat, ix, iy, H, W, N, Cn, Ho, Wo)
    local valid = ix:ge(0):logical_and(ix:le(W - 1)):logical_and(iy:ge(0)):logical_and(iy:le(H - 1))
    local pos = T.where(valid, iy * W + ix, 0)
    local idx = pos:to(T.int64):add(1):view(N, 1, Ho * Wo):expand(N, Cn, Ho * Wo)
    local v = flat:gather(3, idx):view(N, Cn, Ho, Wo)
    return v, valid:unsqueeze(2)
  end

  -- PyTorch's cubic convolution coefficients (A = -0.75) for t in [0, 1)
  local CUBIC_A = -0.75
  local function cubic_coeffs(t)
    local function c1(x) return ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1 end
    local function c2(x) return ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A end
    return { c2(t + 1), c1(t), c1(1 - t), c2(2 - t) }
  end

  -- volumetric: input (N, C, D, H, W), grid (N, Do, Ho, Wo, 3) of (x, y, z);
  -- x indexes W, y H, z D (torch's 3-d grid sampler). bilinear is
  -- trilinear over the 8 corners, nearest rounds half away from zero
  -- (torch 1.13's std::round; its 2-d sampler rounds half to even); each
  -- coordinate goes through the padding mode as in 2-d, NaN clipped to
  -- n - 1. As torch's 3-d kernel, only the corners inside the volume are
  -- added: a NaN or infinite coordinate under zeros padding gives 0.
  -- mode, padding and align checked by the caller.
  local function grid_sample3d(op, input, grid, mode, padding_mode, align)
    if mode == "bicubic" then
      error(fmt("%s: grid_sampler(): bicubic interpolation only supports 4D input", op), 3)
    end
    if grid.ndim ~= 5 or grid.shape[5] ~= 3 then
      error(fmt("%s: grid_sampler(): expected grid to have size 3 in last dimension and 5 dims (for a 5-d input), "
        .. "but got grid with sizes %s", op, list_repr(shape_of(grid))), 3)
    end
    if input.dtype ~= grid.dtype then
      error(fmt("%s: grid_sampler(): expected input and grid to have same dtype, but input has %s and grid has %s",
        op, tostring(input.dtype), tostring(grid.dtype)), 3)
    end
    if not input.dtype.is_floating_point then
      error(fmt("%s: expected a floating point input, got %s", op, tostring(input.dtype)), 3)
    end
    if input.shape[1] ~= grid.shape[1] then
      error(fmt("%s: grid_sampler(): expected grid and input to have same batch size, but got input with sizes %s "
        .. "and grid with sizes %s", op, list_repr(shape_of(input)), list_repr(shape_of(grid))), 3)
    end
    local N, Cn, D, H, W = input.shape[1], input.shape[2], input.shape[3], input.shape[4], input.shape[5]
    local Do, Ho, Wo = grid.shape[2], grid.shape[3], grid.shape[4]
    if D == 0 or H == 0 or W == 0 then
      error(fmt("%s: grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes %s",
        op, list_repr(shape_of(input))), 3)
    end
    local P = Do * Ho * Wo
    local flat = input:reshape(N, Cn, D * H * W)
    local gx, gy, gz = grid:select(5, 1), grid:select(5, 2), grid:select(5, 3)
    if mode == "nearest" then gx, gy, gz = gx:detach(), gy:detach(), gz:detach() end
    local ix = source_coords(unnormalize(gx, W, align), W, padding_mode, align, W - 1)
    local iy = source_coords(unnormalize(gy, H, align), H, padding_mode, align, H - 1)
    local iz = source_coords(unnormalize(gz, D, align), D, padding_mode, align, D - 1)
    -- the values at integer coordinates (float tensors (N, Do, Ho, Wo)),
    -- and where they lie inside the volume
    local function read3(x, y, z)
      local valid = x:ge(0):logical_and(x:le(W - 1)):logical_and(y:ge(0)):logical_and(y:le(H - 1))
        :logical_and(z:ge(0)):logical_and(z:le(D - 1))
      local pos = T.where(valid, (z * H + y) * W + x, 0)
      local idx = pos:to(T.int64):add(1):view(N, 1, P):expand(N, Cn, P)
      return flat:gather(3, idx):view(N, Cn, Do, Ho, Wo), valid:unsqueeze(2)
    end
    if mode == "nearest" then
      local function round_away(c)
        local t = c:trunc()
        return T.where((c - t):abs():ge(0.5), t + c:sign(), t)
      end
      local v, valid = read3(round_away(ix), round_away(iy), round_away(iz))
      return T.where(valid, v, 0)
    end
    local x0, y0, z0 = ix:detach():floor(), iy:detach():floor(), iz:detach():floor()
    local x1, y1, z1 = x0 + 1, y0 + 1, z0 + 1
    local wx = { x1 - ix, ix - x0 }
    local wy = { y1 - iy, iy - y0 }
    local wz = { z1 - iz, iz - z0 }
    local xs, ys, zs = { x0, x1 }, { y0, y1 }, { z0, z1 }
    local out
    for a = 1, 2 do
      for b = 1, 2 do
        for c = 1, 2 do
          local v, valid = read3(xs[c], ys[b], zs[a])
          local term = T.where(valid, v * (wz[a] * wy[b] * wx[c]):unsqueeze(2), 0)
          out = out and out + term or term
        end
      end
    end
    return out
  end

  local MODES = { bilinear = true, nearest = true, bicubic = true }
  local PADS = { zeros = true, border = true, reflection = true }
  local GS = set { "mode", "padding_mode", "align_corners" }
  function F.grid_sample(input, grid, mode, padding_mode, align_corners, ...)
    local op = "grid_sample"
    if is_opts(mode) then
      nomore(op, 3, padding_mode, align_corners, ...)
      local o = check_opts(op, mode, GS)
      mode, padding_mode, align_corners = o.mode, o.padding_mode, o.align_corners
    else
      nomore(op, 5, ...)
    end
    check_tensor(op, input, "input")
    check_tensor(op, grid, "grid")
    mode, padding_mode = mode or "bilinear", padding_mode or "zeros"
    if not MODES[mode] then
      error(fmt("%s: expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '%s'", op, tostring(mode)), 2)
    end
    if not PADS[padding_mode] then
      error(fmt("%s: expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '%s'", op,
        tostring(padding_mode)), 2)
    end
    local align = align_corners == true
    if input.ndim == 5 then return grid_sample3d(op, input, grid, mode, padding_mode, align) end
    if input.ndim ~= 4 then
      error(fmt("%s: expected a 4-d input (N, C, H, W) or a 5-d one (N, C, D, H, W), got %d-d", op, input.ndim), 2)
    end
    if grid.ndim ~= 4 or grid.shape[4] ~= 2 then
      error(fmt("%s: grid_sampler(): expected grid to have size 2 in last dimension and 4 dims, but got grid with "
        .. "sizes %s", op, list_repr(shape_of(grid))), 2)
    end
    if input.dtype ~= grid.dtype then
      error(fmt("%s: grid_sampler(): expected input and grid to have same dtype, but input has %s and grid has %s",
        op, tostring(input.dtype), tostring(grid.dtype)), 2)
    end
    if not input.dtype.is_floating_point then
      error(fmt("%s: expected a floating point input, got %s", op, tostring(input.dtype)), 2)
    end
    if input.shape[1] ~= grid.shape[1] then
      error(fmt("%s: grid_sampler(): expected grid and input to have same batch size, but got input with sizes %s "
        .. "and grid with sizes %s", op, list_repr(shape_of(input)), list_repr(shape_of(grid))), 2)
    end
    local N, Cn, H, W = input.shape[1], input.shape[2], input.shape[3], input.shape[4]
    local Ho, Wo = grid.shape[2], grid.shape[3]
    if H == 0 or W == 0 then
      error(fmt("%s: grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes %s",
        op, list_repr(shape_of(input))), 2)
    end
    local flat = input:reshape(N, Cn, H * W)
    local gx, gy = grid:select(4, 1), grid:select(4, 2)
    if mode == "nearest" then
      -- no gradient w.r.t. the grid (PyTorch's is zero)
      gx, gy = gx:detach(), gy:detach()
    end
    -- torch 1.13's 2-d (vectorised) CPU kernel: border and reflection clip
    -- NaN to 0; an out-of-image corner or tap adds 0 * its weight, so a NaN
    -- or infinite coordinate gives NaN under zeros padding (bilinear) and
    -- always (bicubic: its weights come from the unpadded coordinate);
    -- nearest reads 0 there (zeros padding)
    local ix, iy = unnormalize(gx, W, align), unnormalize(gy, H, align)
    if mode == "bilinear" or mode == "nearest" then
      ix, iy = source_coords(ix, W, padding_mode, align, 0), source_coords(iy, H, padding_mode, align, 0)
    end
    if mode == "nearest" then
      local v, valid = read(flat, ix:round(), iy:round(), H, W, N, Cn, Ho, Wo)
      return T.where(valid, v, 0)
    end
    local x0, y0 = ix:detach():floor(), iy:detach():floor()
    if mode == "bilinear" then
      local x1, y1 = x0 + 1, y0 + 1
      local wx1, wy1 = ix - x0, iy - y0   -- the weights of the far corners
      local wx0, wy0 = x1 - ix, y1 - iy
      local out
      for _, c in ipairs { { x0, y0, wx0 * wy0 }, { x1, y0, wx1 * wy0 }, { x0, y1, wx0 * wy1 }, { x1, y1, wx1 * wy1 } } do
        local v, valid = read(flat, c[1], c[2], H, W, N, Cn, Ho, Wo)
        local term = T.where(valid, v, 0) * c[3]:unsqueeze(2)
        out = out and out + term or term
      end
      return out
    end
    -- bicubic: the 4 x 4 taps around the point, each tap's coordinate
    -- through the padding (get_value_bounded)
    local cx, cy = cubic_coeffs(ix - x0), cubic_coeffs(iy - y0)
    local out
    for i = 0, 3 do
      local ty = source_coords(y0 + (i - 1), H, padding_mode, align, 0)
      local row
      for j = 0, 3 do
        local tx = source_coords(x0 + (j - 1), W, padding_mode, align, 0)
        local v, valid = read(flat, tx, ty, H, W, N, Cn, Ho, Wo)
        local term = T.where(valid, v, 0) * cx[j + 1]:unsqueeze(2)
        row = row and row + term or term
      end
      local term = row * cy[i + 1]:unsqueeze(2)
      out = out and out + term or term
    end
    return out
  end
  F.grid_sample = named("grid_sample", F.grid_sample)

  -- -- conv3d -----------------------------------------------------------------------------
  -- x (N, C, D, H, W), w (O, C/g, kD, kH, kW). The depth slices that kernel
  -- depth offset kd reads (kd dD + t sD of the depth-padded input, t < Do)
  -- are taken for every kd by one index_select, stacked into the channels
  -- (group-major: (g, kd, C/g), so conv2d's groups still split them), depth
  -- folded into the batch, and convolved by one conv2d with the weight
  -- (O, kD C/g, kH, kW): the sum over kd is the conv2d's channel sum.
  local CONV3 = set { "stride", "padding", "dilation", "groups" }
  -- an options table, not a list of sizes
  local function is_table_opts(v) return is_opts(v) and v[1] == nil end
  local function conv_args(op, args)
    if is_table_opts(args[1]) then
      nomore(op, 4, unpack(args, 2, args.n))
      local o = check_opts(op, args[1], CONV3)
      return o.stride, o.padding, o.dilation, o.groups
    end
    nomore(op, 7, unpack(args, 5, args.n))
    return args[1], args[2], args[3], args[4]
  end
  local function depth_index(starts, count, step, kD, dil, dev)
    local idx = {}
    for kd = 0, kD - 1 do
      for t = 0, count - 1 do idx[#idx + 1] = starts + kd * dil + t * step + 1 end
    end
    -- made on the CPU and moved (a meta tensor holds no data to write)
    return T.tensor(idx, { dtype = T.int64 }):to(dev)
  end

  function F.conv3d(x, w, b, ...)
    local op = "conv3d"
    if is_opts(b) then return F.conv3d(x, w, nil, b, ...) end -- (x, w, {options}): no bias
    check_tensor(op, x, "input")
    check_tensor(op, w, "weight")
    if b ~= nil and not T.is_tensor(b) then error(op .. ": bias must be a tensor or nil (pass options after it)", 2) end
    local stride, padding, dilation, groups = conv_args(op, { n = select("#", ...), ... })
    local s, d = tuple(op, stride or 1, 3, "stride"), tuple(op, dilation or 1, 3, "dilation")
    local g = groups or 1
    if w.ndim ~= 5 then error(fmt("%s: expected a 5-d weight (out, in/groups, kD, kH, kW), got %d-d", op, w.ndim), 2) end
    local unbatched = x.ndim == 4
    if unbatched then x = x:unsqueeze(1) end
    if x.ndim ~= 5 then error(fmt("%s: expected a 4-d (unbatched) or 5-d (batched) input, got %d-d", op, x.ndim), 2) end
    if type(g) ~= "number" or g < 1 or g ~= math.floor(g) then error(fmt("%s: non-positive groups is not supported", op), 2) end
    local N, Cin, D, H, W = unpack(shape_of(x))
    local O, Cg, kD, kH, kW = unpack(shape_of(w))
    if O < g then
      error(fmt("%s: Given groups=%d, expected weight to be at least %d at dimension 1, but got weight of size %s "
        .. "instead", op, g, g, list_repr(shape_of(w))), 2)
    end
    if Cin ~= Cg * g then
      error(fmt("%s: Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels "
        .. "instead", op, g, list_repr(shape_of(w)), list_repr(shape_of(x)), Cg * g, Cin), 2)
    end
    if O % g ~= 0 then
      error(fmt("%s: Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s "
        .. "instead", op, g, g, list_repr(shape_of(w))), 2)
    end
    if b ~= nil and (b.ndim ~= 1 or b:numel() ~= O) then
      error(fmt("%s: Given weight of size %s, expected bias to be 1-dimensional with %d elements, but got bias of "
        .. "size %s instead", op, list_repr(shape_of(w)), O, list_repr(shape_of(b))), 2)
    end
    for i, v in ipairs(s) do if v < 1 then error(fmt("%s: non-positive stride is not supported", op), 2) end end
    for i, v in ipairs(d) do
      if v < 1 then error(fmt("%s: dilation should be greater than zero, but got %s", op, list_repr(d)), 2) end
    end
    local k = { kD, kH, kW }
    local l, r = {}, {}
    if padding == "same" then
      for i = 1, 3 do
        if s[i] ~= 1 then error(op .. ": padding='same' is not supported for strided convolutions", 2) end
        local total = d[i] * (k[i] - 1)
        l[i] = math.floor(total / 2)
        r[i] = total - l[i]
      end
    elseif padding == "valid" then
      l, r = { 0, 0, 0 }, { 0, 0, 0 }
    elseif padding == nil or type(padding) == "number" or type(padding) == "table" then
      l = tuple(op, padding or 0, 3, "padding")
      r = { l[1], l[2], l[3] }
      for i = 1, 3 do if l[i] < 0 then error(fmt("%s: negative padding is not supported", op), 2) end end
    else
      error(fmt("%s: Invalid padding string '%s', should be one of {'valid', 'same'}", op, tostring(padding)), 2)
    end
    -- the depth padding and 'same''s odd extra (after) by F.pad; H and W's symmetric part by conv2d
    if l[1] + r[1] + (r[2] - l[2]) + (r[3] - l[3]) > 0 then
      x = F.pad(x, { 0, r[3] - l[3], 0, r[2] - l[2], l[1], r[1] })
    end
    local Dp = x.shape[3]
    local Do = math.floor((Dp - d[1] * (kD - 1) - 1) / s[1]) + 1
    local Hq, Wq = x.shape[4] + 2 * l[2], x.shape[5] + 2 * l[3] -- the padded H and W
    if Dp < d[1] * (kD - 1) + 1 or Hq < d[2] * (kH - 1) + 1 or Wq < d[3] * (kW - 1) + 1 then
      -- all three dims here (conv2d below would name only H and W)
      error(fmt("%s: Calculated padded input size per channel: (%d x %d x %d). Kernel size: (%d x %d x %d). Kernel "
        .. "size can't be greater than actual input size", op, Dp, Hq, Wq,
        d[1] * (kD - 1) + 1, d[2] * (kH - 1) + 1, d[3] * (kW - 1) + 1), 2)
    end
    local Hp, Wp = x.shape[4], x.shape[5]
    local xs = x:index_select(3, depth_index(0, Do, s[1], kD, d[1], x.device))
      :view(N, g, Cg, kD, Do, Hp, Wp):permute(1, 5, 2, 4, 3, 6, 7):reshape(N * Do, g * kD * Cg, Hp, Wp)
    local w2 = w:permute(1, 3, 2, 4, 5):reshape(O, kD * Cg, kH, kW)
    local y = F.conv2d(xs, w2, nil, { stride = { s[2], s[3] }, padding = { l[2], l[3] }, dilation = { d[2], d[3] },
      groups = g })
    local Ho, Wo = y.shape[3], y.shape[4]
    y = y:view(N, Do, O, Ho, Wo):permute(1, 3, 2, 4, 5):contiguous()
    if b ~= nil then y = y + b:view(1, O, 1, 1, 1) end
    return unbatched and y:squeeze(1) or y
  end
  F.conv3d = named("conv3d", F.conv3d)

  -- -- conv_transpose3d ------------------------------------------------------------------------
  -- x (N, Cin, D, H, W), w (Cin, Cout/g, kD, kH, kW): depth folded into the
  -- batch and the kernel depth offsets into the output channels
  -- ((g, kd, Cout/g) group-major), one conv_transpose2d; the output of input
  -- depth t and offset kd is added at depth t sD + kd dD by index_add, and
  -- the depth padding cut off (output_padding's extra zeros at the end).
  local CT3 = set { "stride", "padding", "output_padding", "groups", "dilation" }
  function F.conv_transpose3d(x, w, b, ...)
    local op = "conv_transpose3d"
    if is_opts(b) then return F.conv_transpose3d(x, w, nil, b, ...) end
    check_tensor(op, x, "input")
    check_tensor(op, w, "weight")
    if b ~= nil and not T.is_tensor(b) then error(op .. ": bias must be a tensor or nil (pass options after it)", 2) end
    local args = { n = select("#", ...), ... }
    local o
    if is_table_opts(args[1]) then
      nomore(op, 4, unpack(args, 2, args.n))
      o = check_opts(op, args[1], CT3)
    else
      nomore(op, 8, unpack(args, 6, args.n))
      o = { stride = args[1], padding = args[2], output_padding = args[3], groups = args[4], dilation = args[5] }
    end
    local s, p = tuple(op, o.stride or 1, 3, "stride"), tuple(op, o.padding or 0, 3, "padding")
    local opad, d = tuple(op, o.output_padding or 0, 3, "output_padding"), tuple(op, o.dilation or 1, 3, "dilation")
    local g = o.groups or 1
    if w.ndim ~= 5 then error(fmt("%s: expected a 5-d weight (in, out/groups, kD, kH, kW), got %d-d", op, w.ndim), 2) end
    local unbatched = x.ndim == 4
    if unbatched then x = x:unsqueeze(1) end
    if x.ndim ~= 5 then error(fmt("%s: expected a 4-d (unbatched) or 5-d (batched) input, got %d-d", op, x.ndim), 2) end
    local N, Cin, D, H, W = unpack(shape_of(x))
    local _, Cg, kD, kH, kW = unpack(shape_of(w))
    if w.shape[1] ~= Cin then
      error(fmt("%s: expected the weight's first dim (%d) to match the input's channels (%d)", op, w.shape[1], Cin), 2)
    end
    if type(g) ~= "number" or g < 1 then error(op .. ": non-positive groups is not supported", 2) end
    if Cin % g ~= 0 then
      error(fmt("%s: the input's channels (%d) must be divisible by groups (%d)", op, Cin, g), 2)
    end
    -- every dim checked here (the depth is not the 2-d op's)
    for i = 1, 3 do
      if s[i] < 1 then error(fmt("%s: non-positive stride is not supported, got %s", op, list_repr(s)), 2) end
      if d[i] < 1 then error(fmt("%s: dilation should be greater than zero, but got %s", op, list_repr(d)), 2) end
      if p[i] < 0 then error(fmt("%s: negative padding is not supported, got %s", op, list_repr(p)), 2) end
      if opad[i] < 0 then error(fmt("%s: negative output_padding is not supported, got %s", op, list_repr(opad)), 2) end
    end
    if opad[1] >= s[1] and opad[1] >= d[1] then
      error(fmt("%s: output padding must be smaller than either stride or dilation, but got output_padding=%d, "
        .. "stride=%d, dilation=%d", op, opad[1], s[1], d[1]), 2)
    end
    local Dout = (D - 1) * s[1] - 2 * p[1] + d[1] * (kD - 1) + opad[1] + 1
    if Dout <= 0 then
      error(fmt("%s: the output size %d is too small (input %d, kernel %d, stride %d, padding %d)", op, Dout, D, kD,
        s[1], p[1]), 2)
    end
    local xf = x:permute(1, 3, 2, 4, 5):reshape(N * D, Cin, H, W)
    local w2 = w:permute(1, 3, 2, 4, 5):reshape(Cin, kD * Cg, kH, kW)
    local y = F.conv_transpose2d(xf, w2, nil, { stride = { s[2], s[3] }, padding = { p[2], p[3] },
      output_padding = { opad[2], opad[3] }, groups = g, dilation = { d[2], d[3] } })
    local Ho, Wo = y.shape[3], y.shape[4]
    local Cout = Cg * g
    y = y:view(N, D, g, kD, Cg, Ho, Wo):permute(1, 3, 5, 2, 4, 6, 7):reshape(N, Cout, D * kD, Ho, Wo)
    local pos = {}
    for t = 0, D - 1 do
      for kd = 0, kD - 1 do pos[#pos + 1] = t * s[1] + kd * d[1] + 1 end
    end
    local full = math.max((D - 1) * s[1] + d[1] * (kD - 1) + 1, p[1] + Dout)
    local out = T.zeros({ N, Cout, full, Ho, Wo }, { dtype = y.dtype, device = y.device })
      :index_add(3, T.tensor(pos, { dtype = T.int64 }):to(y.device), y):narrow(3, p[1] + 1, Dout)
    if b ~= nil then
      if b.ndim ~= 1 or b:numel() ~= Cout then
        error(fmt("%s: expected a bias of %d elements, got %d", op, Cout, b:numel()), 2)
      end
      out = out + b:view(1, Cout, 1, 1, 1)
    end
    return unbatched and out:squeeze(1) or out
  end
  F.conv_transpose3d = named("conv_transpose3d", F.conv_transpose3d)

  -- -- max_pool3d / avg_pool3d -------------------------------------------------------------
  -- torch's pooling_output_shape
  local function pool_out(n, k, s, p, d, ceil)
    local o = math.floor((n + 2 * p - d * (k - 1) - 1 + (ceil and s - 1 or 0)) / s) + 1
    if ceil and (o - 1) * s >= n + p then o = o - 1 end
    return o
  end
  local MP3 = set { "stride", "padding", "dilation", "ceil_mode", "return_indices" }
  local AP3 = set { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" }
  local function pool_args(op, allowed, names, kernel, args)
    if type(kernel) == "table" and kernel.kernel_size ~= nil and args.n == 0 then
      local o = {}
      for key, v in pairs(kernel) do if key ~= "kernel_size" then o[key] = v end end
      kernel, args = kernel.kernel_size, { n = 1, o }
    end
    local o
    if is_table_opts(args[1]) then
      nomore(op, 3, unpack(args, 2, args.n))
      o = check_opts(op, args[1], allowed)
    else
      nomore(op, 2 + #names, unpack(args, #names + 1, args.n))
      o = {}
      for i, name in ipairs(names) do o[name] = args[i] end
    end
    if kernel == nil then error(op .. ": kernel_size is required", 3) end
    local k = tuple(op, kernel, 3, "kernel_size")
    local s = o.stride ~= nil and tuple(op, o.stride, 3, "stride") or k
    local p = tuple(op, o.padding or 0, 3, "padding")
    local d = tuple(op, o.dilation or 1, 3, "dilation")
    for i = 1, 3 do
      if k[i] < 1 or s[i] < 1 or d[i] < 1 then
        error(fmt("%s: kernel_size, stride and dilation must be positive, got kernel_size=%s, stride=%s, dilation=%s",
          op, list_repr(k), list_repr(s), list_repr(d)), 3)
      end
      if p[i] < 0 then error(fmt("%s: pad must be non-negative, but got padding=%s", op, list_repr(p)), 3) end
      if p[i] > math.floor(k[i] / 2) then
        error(fmt("%s: pad should be smaller than or equal to half of kernel size, but got kT=%d kW=%d kH=%d padT=%d "
          .. "padW=%d padH=%d", op, k[1], k[3], k[2], p[1], p[3], p[2]), 3)
      end
    end
    return k, s, p, d, o
  end
  local function pool_input(op, x)
    check_tensor(op, x, "input")
    if x.ndim == 4 then
      A.pool_nonempty(op, x, 3, 3)
      return x:unsqueeze(1), true
    end
    if x.ndim ~= 5 then error(fmt("%s: expected a 4-d (unbatched) or 5-d (batched) input, got %d-d", op, x.ndim), 3) end
    A.pool_nonempty(op, x, 3, 3)
    return x, false
  end
  -- the depth slices of every window (offset kd, output t), padded with
  -- `fill`, as (N, C kD Do, H, W), and the output depth
  local function depth_slices(op, x, k, s, p, d, ceil, fill)
    local N, Cn, D, H, W = unpack(shape_of(x))
    local outs = {}
    for i = 1, 3 do
      outs[i] = pool_out(x.shape[i + 2], k[i], s[i], p[i], d[i], ceil)
      if outs[i] < 1 then
        error(fmt("%s: Given input size: (%dx%dx%dx%d). Calculated output size: (%dx%dx%dx%d). Output size is too "
          .. "small", op, Cn, D, H, W, Cn, outs[1], outs[2] or 0, outs[3] or 0), 4)
      end
    end
    local Do = outs[1]
    local need = (Do - 1) * s[1] + d[1] * (k[1] - 1) + 1
    local after = math.max(0, need - D - p[1])
    local xp = x
    if p[1] + after > 0 then xp = F.pad(x, { 0, 0, 0, 0, p[1], after }, "constant", fill) end
    local xs = xp:index_select(3, depth_index(0, Do, s[1], k[1], d[1], x.device)):reshape(N, Cn * k[1] * Do, H, W)
    return xs, Do
  end

  function F.max_pool3d(x, kernel, ...)
    local op = "max_pool3d"
    local k, s, p, d, o = pool_args(op, MP3, { "stride", "padding", "dilation", "ceil_mode", "return_indices" }, kernel,
      { n = select("#", ...), ... })
    local xb, unb = pool_input(op, x)
    local N, Cn, D, H, W = unpack(shape_of(xb))
    local ceil = o.ceil_mode or false
    local xs, Do = depth_slices(op, xb, k, s, p, d, ceil, -math.huge)
    local v2, i2 = F.max_pool2d(xs, { k[2], k[3] }, { stride = { s[2], s[3] }, padding = { p[2], p[3] },
      dilation = { d[2], d[3] }, ceil_mode = ceil, return_indices = true })
    local Ho, Wo = v2.shape[3], v2.shape[4]
    -- the max over the window's depth (the first maximal offset, as torch's
    -- scan; of several NaNs the last, as its val > max || isnan(val))
    local v5 = v2:view(N, Cn, k[1], Do, Ho, Wo)
    local v, a = v5:max(3)
    local isn = x.device.type ~= "meta" and v5:isnan()
    if isn and isn:any():item() then
      local last = (isn:long() * T.arange(1, k[1] + 1, { device = x.device }):view(1, 1, -1, 1, 1, 1)):argmax(3)
      a = T.where(isn:any(3), last, a)
      v = v5:gather(3, a:unsqueeze(3)):squeeze(3)
    end
    local out, idx = v, nil
    if o.return_indices then
      -- a window of -inf only (its maximum is -inf) points at its first
      -- in-bounds element, as torch's scan (not a depth-padding slice)
      local first = {}
      for t = 0, Do - 1 do first[t + 1] = math.max(0, math.ceil((p[1] - t * s[1]) / d[1])) + 1 end
      local lo = T.tensor(first, { dtype = T.int64 }):to(x.device):view(1, 1, Do, 1, 1)
      a = T.where(v:detach():eq(-math.huge), T.maximum(a, lo), a)
      local within = i2:view(N, Cn, k[1], Do, Ho, Wo):gather(3, a:unsqueeze(3)):squeeze(3)
      local t = T.arange(Do, { device = x.device }):view(1, 1, Do, 1, 1) * s[1] - p[1]
      idx = ((a - 1) * d[1] + t) * (H * W) + within
    end
    if unb then
      out = out:squeeze(1)
      if idx then idx = idx:squeeze(1) end
    end
    if o.return_indices then return out, idx end
    return out
  end
  F.max_pool3d = named("max_pool3d", F.max_pool3d)

  -- the divisor of each window along one dim: its size within input +
  -- padding, or (count_include_pad = false) within the input
  local function divisors(n, k, s, p, O, include_pad)
    local f = {}
    for i = 0, O - 1 do
      local st = i * s - p
      local en = math.min(st + k, n + p)
      local pool = en - st
      st, en = math.max(st, 0), math.min(en, n)
      f[i + 1] = include_pad and pool or (en - st)
    end
    return f
  end
  function F.avg_pool3d(x, kernel, ...)
    local op = "avg_pool3d"
    local k, s, p, d, o = pool_args(op, AP3, { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" },
      kernel, { n = select("#", ...), ... })
    local xb, unb = pool_input(op, x)
    local N, Cn, D, H, W = unpack(shape_of(xb))
    local ceil = o.ceil_mode or false
    local cip = o.count_include_pad
    if cip == nil then cip = true end
    local div = o.divisor_override
    if div ~= nil and (type(div) ~= "number" or div ~= math.floor(div) or math.abs(div) == math.huge) then
      error(fmt("%s: expected an integer for divisor_override, got %s", op, tostring(div)), 2)
    end
    if div == 0 then error(fmt("%s: divisor must be not zero, got 0", op), 2) end
    -- half types: summed and divided in float32, rounded once (as the 2-d
    -- pools); float16 on the CPU refused as theirs
    local hd = nn._half_dtype(xb) and xb.dtype
    if hd == T.float16 and xb.device.type == "cpu" then
      error(fmt("%s: float16 input is not supported on the CPU (as torch 1.13); bfloat16, float32 and float64 are",
        op), 2)
    end
    if hd then xb = xb:float() end
    local xs, Do = depth_slices(op, xb, k, s, p, d, ceil, 0)
    -- window sums over H x W (a divisor of 1), then over the window's depth
    local sums = F.avg_pool2d(xs, { k[2], k[3] }, { stride = { s[2], s[3] }, padding = { p[2], p[3] }, ceil_mode = ceil,
      divisor_override = 1 })
    local Ho, Wo = sums.shape[3], sums.shape[4]
    local out = sums:view(N, Cn, k[1], Do, Ho, Wo):sum(3)
    -- int64: truncated, torch's integer division (the sums are int64, avg_pool2d's)
    local function divide(a, b)
      if xb.dtype == T.int64 then return T.div(a, b, { rounding_mode = "trunc" }) end
      return a / b
    end
    if div ~= nil then
      out = divide(out, div)
    else
      local function divs(v) return T.tensor(v, { dtype = xb.dtype }):to(x.device) end -- meta: made on the CPU
      local fd = divs(divisors(D, k[1], s[1], p[1], Do, cip)):view(Do, 1, 1)
      local fh = divs(divisors(H, k[2], s[2], p[2], Ho, cip)):view(1, Ho, 1)
      local fw = divs(divisors(W, k[3], s[3], p[3], Wo, cip)):view(1, 1, Wo)
      out = divide(out, fd * fh * fw)
    end
    if hd then out = out:to(hd) end
    return unb and out:squeeze(1) or out
  end
  F.avg_pool3d = named("avg_pool3d", F.avg_pool3d)

  -- -- adaptive 3-d pools --------------------------------------------------------------------
  -- torch's window i of O over L: [floor(i L / O), ceil((i + 1) L / O)),
  -- one dim at a time (W, H, D): a box's mean is the mean of its rows'
  -- means, its max the max of maxes; the max's position along each dim is
  -- carried (gathered at the chosen rows), so the indices are the first
  -- maximum in (d, h, w) order, as torch's scan
  local adaptive_dim = nn._adaptive_dim -- extra_layers.lua: all windows of a dim at once
  local function adaptive3d(op, x, output_size, kind, with_idx)
    check_tensor(op, x, "input")
    if x.ndim ~= 4 and x.ndim ~= 5 then
      error(fmt("%s: expected a 4-d (unbatched) or 5-d (batched) input, got %d-d", op, x.ndim), 3)
    end
    if type(output_size) == "number" then output_size = { output_size } end
    if type(output_size) ~= "table" then error(fmt("%s: expected output_size as a number or a table", op), 3) end
    local o = {}
    for i = 1, 3 do
      local v = output_size[i]
      if v == nil and #output_size == 1 then v = output_size[1] end
      if v == T.None or v == false then v = x.shape[x.ndim - 3 + i] end
      -- 0 is torch's empty output
      if type(v) ~= "number" or v < 0 or v ~= math.floor(v) then
        error(fmt("%s: output size must be a non-negative integer, got %s", op, tostring(v)), 3)
      end
      if v > 2 ^ 31 - 1 then error(fmt("%s: output size %s is too large (at most 2^31 - 1)", op, tostring(v)), 3) end
      o[i] = v
    end
    -- torch 1.13 refuses an empty dim after the first (the channels too)
    for i = 2, x.ndim do
      if x.shape[i] == 0 then
        error(fmt("%s: expected input to have non-zero size for non-batch dimensions, but input has sizes %s with "
          .. "dimension %d being empty", op, list_repr(shape_of(x)), i), 3)
      end
    end
    local nd = x.ndim
    if o[1] == 0 or o[2] == 0 or o[3] == 0 then
      -- an empty output (torch's), still on x's graph
      local shape = shape_of(x)
      shape[nd - 2], shape[nd - 1], shape[nd] = o[1], o[2], o[3]
      local v = x:narrow(nd, 1, 0):reshape(shape)
      return v, T.zeros(shape, { dtype = T.int64, device = x.device })
    end
    if kind == "avg" then
      -- half types: in float32, rounded once (extra_layers.lua)
      local h = nn._half_dtype(x)
      local y = adaptive_dim(adaptive_dim(adaptive_dim(h and x:float() or x, nd, o[3], "avg"), nd - 1, o[2], "avg"),
        nd - 2, o[1], "avg")
      return h and y:to(x.dtype) or y
    end
    local v1, iw = adaptive_dim(x, nd, o[3], "max")
    local v2, ih = adaptive_dim(v1, nd - 1, o[2], "max")
    if not with_idx then return (adaptive_dim(v2, nd - 2, o[1], "max")) end
    iw = iw:gather(nd - 1, ih)
    local v3, id = adaptive_dim(v2, nd - 2, o[1], "max")
    iw, ih = iw:gather(nd - 2, id), ih:gather(nd - 2, id)
    local H, W = x.shape[nd - 1], x.shape[nd]
    return v3, ((id - 1) * H + (ih - 1)) * W + iw
  end
  function F.adaptive_avg_pool3d(x, output_size, ...)
    nomore("adaptive_avg_pool3d", 2, ...)
    return adaptive3d("adaptive_avg_pool3d", x, output_size, "avg")
  end
  local AMP3 = set { "return_indices" }
  function F.adaptive_max_pool3d(x, output_size, return_indices, ...)
    local op = "adaptive_max_pool3d"
    nomore(op, 3, ...)
    if is_opts(return_indices) then return_indices = check_opts(op, return_indices, AMP3).return_indices end
    local v, i = adaptive3d(op, x, output_size, "max", return_indices)
    if return_indices then return v, i end
    return v
  end
  F.adaptive_avg_pool3d = named("adaptive_avg_pool3d", F.adaptive_avg_pool3d)
  F.adaptive_max_pool3d = named("adaptive_max_pool3d", F.adaptive_max_pool3d)

  -- -- modules ---------------------------------------------------------------------------------
  local function repr(v)
    if type(v) == "table" then return require("ember.nn.util").size_repr(T, v) end
    return tostring(v)
  end
  local function pool_class(name, f, allowed, reprf)
    local M = Module:extend(name)
    function M:init(kernel, o, ...)
      nomore(name, 2, ...)
      if type(o) == "number" then o = { stride = o } end
      o = check_opts(name, o, allowed)
      if kernel == nil then error(name .. ": kernel_size is required", 3) end
      self.kernel_size = kernel
      for key in pairs(allowed) do self[key] = o[key] end
      if self.stride == nil then self.stride = kernel end
      self.padding = self.padding or 0
    end
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      local o = {}
      for key in pairs(allowed) do o[key] = self[key] end
      return f(x, self.kernel_size, o)
    end
    M.extra_repr = reprf
    nn[name] = M
  end
  pool_class("MaxPool3d", F.max_pool3d, MP3, function(self)
    return fmt("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s", repr(self.kernel_size),
      repr(self.stride), repr(self.padding), repr(self.dilation or 1), tostring(self.ceil_mode or false))
  end)
  pool_class("AvgPool3d", F.avg_pool3d, AP3, function(self)
    return fmt("kernel_size=%s, stride=%s, padding=%s", repr(self.kernel_size), repr(self.stride), repr(self.padding))
  end)
  for _, spec in ipairs { { "AdaptiveAvgPool3d", "adaptive_avg_pool3d", false },
                          { "AdaptiveMaxPool3d", "adaptive_max_pool3d", true } } do
    local name, fname, has_idx = spec[1], spec[2], spec[3]
    local M = Module:extend(name)
    function M:init(output_size, o, ...)
      nomore(name, 2, ...)
      o = check_opts(name, o, has_idx and AMP3 or {})
      if output_size == nil then error(name .. ": output_size is required", 3) end
      self.output_size, self.return_indices = output_size, o.return_indices or false
    end
    function M:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      if has_idx then return F[fname](x, self.output_size, self.return_indices) end
      return F[fname](x, self.output_size)
    end
    function M:extra_repr() return "output_size=" .. repr(self.output_size) end
    nn[name] = M
  end
end
