-- T.stft and T.istft (docs/fft.md, "Short-time transforms"): PyTorch 1.13's
-- torch.stft/torch.istft, composed of ember ops (pad, unfold, the window's
-- product, T.fft's transforms, index_add for the overlap-add), so autograd
-- follows from theirs. Also as methods: x:stft(...), X:istft(...).
return function(T, C)
  local ARGS = require "ember.args"
  local AC = require("ember.argcheck")(T)
  local fmt, floor = string.format, math.floor
  local M = C._methods

  local function int_arg(op, v, what)
    if type(v) ~= "number" or v ~= floor(v) or v ~= v or math.abs(v) == math.huge then
      error(fmt("%s: expected an integer for %s, got %s", op, what, tostring(v)), 0)
    end
    return v
  end
  local function bool_arg(op, v, what, default)
    if v == nil then return default end
    if type(v) ~= "boolean" then
      error(fmt("%s: expected a boolean for %s, got %s", op, what, type(v)), 0)
    end
    return v
  end
  local function size_str(t)
    local s = {}
    for i = 1, t:dim() do s[i] = tostring(t:size(i)) end
    return "[" .. table.concat(s, ", ") .. "]"
  end
  local function real_of(dt)
    if dt == T.complex128 then return T.float64 end
    if dt == T.complex64 then return T.float32 end
    return dt
  end

  -- the window as n_fft points: the given one (ones of win_length in
  -- dtype when none) centred between zeros when win_length < n_fft; nil
  -- for a rectangular window of n_fft (no product). A given window keeps
  -- its dtype (the product with the frames promotes, as in torch 1.13).
  local function full_window(op, window, win_length, n_fft, dtype, device)
    if window ~= nil then
      if not T.is_tensor(window) then
        error(fmt("%s: expected a tensor for window, got %s", op, type(window)), 0)
      end
      if window:dim() ~= 1 or window:size(1) ~= win_length then
        error(fmt("%s: expected a 1D window tensor of size equal to win_length=%d, but got window with size %s",
          op, win_length, size_str(window)), 0)
      end
    end
    if win_length == n_fft then return window end
    local left = floor((n_fft - win_length) / 2)
    local right = n_fft - win_length - left
    if window ~= nil then -- out of place: the window's gradient flows
      local z = { dtype = window.dtype, device = window.device }
      return T.cat({ T.zeros(left, z), window, T.zeros(right, z) })
    end
    local w = T.zeros(n_fft, { dtype = dtype, device = device })
    w:narrow(1, left + 1, win_length):fill_(1)
    return w
  end

  -- what stft and istft both take: their options (positional in torch's
  -- order, or a table after n_fft), the input tensor and n_fft, and the
  -- framing arguments with torch's defaults
  local function common_args(op, names, x, n_fft, ...)
    local o = ARGS.checkopts(op, ARGS.positional(op, names, 3, ...), names, 0)
    AC.check_tensor(op, x, "input", 0)
    n_fft = int_arg(op, n_fft, "n_fft")
    local hop = o.hop_length == nil and floor(n_fft / 4) or int_arg(op, o.hop_length, "hop_length")
    local win_length = o.win_length == nil and n_fft or int_arg(op, o.win_length, "win_length")
    return o, n_fft, hop, win_length, bool_arg(op, o.center, "center", true),
      bool_arg(op, o.normalized, "normalized", false)
  end

  local STFT = { "hop_length", "win_length", "window", "center", "pad_mode", "normalized", "onesided",
    "return_complex" }
  -- stft(input, n_fft[, hop_length[, win_length[, window[, center[, pad_mode[, normalized[,
  -- onesided[, return_complex]]]]]]]]), or stft(input, n_fft, {name = value...})
  local function stft(x, n_fft, ...)
    local op = "stft"
    local o, hop, win_length, center, normalized
    o, n_fft, hop, win_length, center, normalized = common_args(op, STFT, x, n_fft, ...)
    if x:dim() ~= 1 and x:dim() ~= 2 then
      error(fmt("%s: expected a 1D or 2D tensor, but got %dD", op, x:dim()), 0)
    end
    if not (x:is_floating_point() or x:is_complex()) then
      error(fmt("%s: expected a tensor of floating point or complex values, got %s", op, tostring(x.dtype)), 0)
    end
    local pad_mode = o.pad_mode == nil and "reflect" or o.pad_mode
    if type(pad_mode) ~= "string" then
      error(fmt("%s: expected a string for pad_mode, got %s", op, type(pad_mode)), 0)
    end
    local window = o.window
    local cplx = x:is_complex() or (T.is_tensor(window) and window:is_complex())
    local return_complex = bool_arg(op, o.return_complex, "return_complex", nil)
    if return_complex == nil then
      if not cplx then
        error(op .. ": return_complex must be given for real inputs (true: the complex result; false: " ..
          "PyTorch's deprecated real form with a trailing dim of 2)", 0)
      end
      return_complex = true
    end
    local onesided = bool_arg(op, o.onesided, "onesided", not cplx)
    if onesided and cplx then
      error(op .. ": Cannot have onesided output if window or input is complex", 0)
    end
    if center then
      -- PyTorch pads a (1, 1, L) or (1, B, L) view at both ends by n_fft // 2
      local pad = floor(n_fft / 2)
      local ext = x:dim() == 1 and x:view(1, 1, -1) or x:unsqueeze(1)
      local padded = T.nn.functional.pad(ext, { pad, pad }, pad_mode)
      x = x:dim() == 1 and padded:view(-1) or padded:squeeze(1)
    end
    local len = x:size(-1)
    if n_fft <= 0 or n_fft > len then
      error(fmt("%s: expected 0 < n_fft <= %d (the %ssignal's length), but got n_fft=%d", op, len,
        center and "padded " or "", n_fft), 0)
    end
    if hop <= 0 then error(fmt("%s: expected hop_length > 0, but got hop_length=%d", op, hop), 0) end
    if win_length <= 0 or win_length > n_fft then
      error(fmt("%s: expected 0 < win_length <= n_fft, but got win_length=%d", op, win_length), 0)
    end
    local w = full_window(op, window, win_length, n_fft, x.dtype, x.device)
    local frames = x:unfold(-1, n_fft, hop) -- (B?, frames, n_fft)
    if w ~= nil then frames = frames * w end
    local norm = normalized and "ortho" or "backward"
    local y
    if onesided then
      y = T.fft.rfft(frames, nil, -1, norm)
    else
      y = T.fft.fft(frames, nil, -1, norm)
    end
    y = y:transpose(-1, -2) -- (B?, freq, frames), a view as PyTorch's
    if not return_complex then y = T.view_as_real(y) end
    return y
  end

  local ISTFT = { "hop_length", "win_length", "window", "center", "normalized", "onesided", "length",
    "return_complex" }
  -- istft(input, n_fft[, hop_length[, win_length[, window[, center[, normalized[, onesided[,
  -- length[, return_complex]]]]]]]]), or istft(input, n_fft, {name = value...})
  local function istft(X, n_fft, ...)
    local op = "istft"
    local o, hop, win_length, center, normalized
    o, n_fft, hop, win_length, center, normalized = common_args(op, ISTFT, X, n_fft, ...)
    if not X:is_complex() then
      error(fmt("%s: requires a complex-valued input tensor matching the output from stft with " ..
        "return_complex=true (got %s; T.view_as_complex makes one of a real (..., 2) tensor)", op,
        tostring(X.dtype)), 0)
    end
    if X:dim() ~= 2 and X:dim() ~= 3 then
      error(fmt("%s: expected a tensor with 2 or 3 dimensions of complex values, but got %d", op, X:dim()), 0)
    end
    if X:numel() == 0 then error(op .. ": input tensor cannot be empty.", 0) end
    local return_complex = bool_arg(op, o.return_complex, "return_complex", false)
    local length = o.length
    if length ~= nil then
      length = int_arg(op, length, "length")
      if length < 0 then error(fmt("%s: expected length >= 0, but got length=%d", op, length), 0) end
    end
    local n_frames, fft_size = X:size(-1), X:size(-2)
    local onesided = bool_arg(op, o.onesided, "onesided", fft_size ~= n_fft)
    if onesided then
      if floor(n_fft / 2) + 1 ~= fft_size then
        error(fmt("%s: expected the frequency dimension (2nd to the last) of the input tensor to match " ..
          "n_fft / 2 + 1 when onesided=true, but got %d", op, fft_size), 0)
      end
    elseif n_fft ~= fft_size then
      error(fmt("%s: expected the frequency dimension (2nd to the last) of the input tensor to match " ..
        "n_fft when onesided=false, but got %d", op, fft_size), 0)
    end
    if not (hop > 0 and hop <= win_length) then
      error(fmt("%s: expected 0 < hop_length <= win_length, but got hop_length=%d and win_length=%d", op, hop,
        win_length), 0)
    end
    if not (win_length > 0 and win_length <= n_fft) then
      error(fmt("%s: expected 0 < win_length <= n_fft, but got win_length=%d", op, win_length), 0)
    end
    local window = o.window
    local rdt = real_of(X.dtype)
    local w = full_window(op, window, win_length, n_fft, window and window.dtype or rdt, X.device)
    if w == nil then w = T.ones(n_fft, { dtype = rdt, device = X.device }) end
    local batched = X:dim() == 3
    local Y = (batched and X or X:unsqueeze(1)):transpose(-1, -2) -- (B, frames, freq)
    local norm = normalized and "ortho" or "backward"
    local y
    if return_complex then
      if onesided then error(op .. ": Cannot have onesided output if window or input is complex", 0) end
      y = T.fft.ifft(Y, nil, -1, norm)
    else
      if w:is_complex() then
        error(op .. ": Complex windows are incompatible with return_complex=false", 0)
      end
      if not onesided then Y = Y:narrow(-1, 1, floor(n_fft / 2) + 1) end
      y = T.fft.irfft(Y, n_fft, -1, norm)
    end
    y = y * w -- (B, frames, n_fft)
    local B = y:size(1)
    local total = n_fft + hop * (n_frames - 1)
    -- the overlap-add: frame f's point k (both 0-based) lands at f * hop + k
    local pos = (T.arange(n_frames, { dtype = T.int64 }) * hop):view(-1, 1)
      + T.arange(1, n_fft + 1, { dtype = T.int64 }):view(1, -1)
    pos = pos:reshape(-1):to(X.device)
    local out = T.zeros(B, total, { dtype = y.dtype, device = X.device })
      :index_add(2, pos, y:reshape(B, n_frames * n_fft))
    -- the envelope: the squared window (as PyTorch: w^2, complex for a
    -- complex window; its gradient flows to the window) overlap-added
    local w2 = w * w
    local env = T.zeros(total, { dtype = w2.dtype, device = X.device })
      :index_add(1, pos, w2:view(1, -1):expand(n_frames, n_fft):reshape(-1))
    local start = center and floor(n_fft / 2) or 0
    local stop
    if length ~= nil then stop = start + length
    elseif center then stop = total - floor(n_fft / 2)
    else stop = total end
    local keep = math.max(0, math.min(stop, total) - start)
    out = out:narrow(2, start + 1, keep)
    env = env:narrow(1, start + 1, keep)
    if keep > 0 and X.device.type ~= "meta" then -- the meta device has no values to check
      local lowest = env:abs():min():item()
      if lowest < 1e-11 then
        error(fmt("%s: window overlap add min: %g (the squared window's overlap-add must be nonzero " ..
          "everywhere in the output: the NOLA condition)", op, lowest), 0)
      end
    end
    if keep > 0 then out = out / env end
    if stop > total then
      out = T.cat({ out, T.zeros(B, stop - math.max(total, start), { dtype = out.dtype, device = X.device }) }, 2)
    end
    if not batched then out = out:squeeze(1) end
    return out
  end

  T.stft = AC.named("stft", stft)
  T.istft = AC.named("istft", istft)
  M.stft = T.stft
  M.istft = T.istft
end
