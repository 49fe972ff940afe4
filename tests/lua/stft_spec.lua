-- T.stft and T.istft against torch 1.13 (tests/fixtures/gen_stft.py ->
-- stft_cases.lua): values over windows, hops, pad modes, norms, one- and
-- two-sided and real results, batched, complex and non-contiguous inputs;
-- istft's round trips and least-squares inverses; gradients against
-- torch's and gradcheck; the refusals, by name.
local T = require "ember"
local S = require "specutil"
local F = dofile("tests/fixtures/stft_cases.lua")

local build, close = S.fixture, S.close_fixture

local function window(w)
  if w == nil then return nil end
  local o = { dtype = T[w.dtype] }
  if w.kind == "hann" then return T.hann_window(w.n, o) end
  if w.kind == "hamming" then return T.hamming_window(w.n, o) end
  return T.ones(w.n, o)
end

local function opts(c, w)
  local o = {}
  for k, v in pairs(c.args) do o[k] = v end
  o.window = w
  return o
end

describe("T.stft", function()
  it("matches torch.stft over every case", function()
    assert.is_true(#F.stft >= 40)
    for i, c in ipairs(F.stft) do
      local x = build(c.x)
      if c.col then x = x:select(2, c.col) end
      local what = string.format("stft case %d", i)
      local ok, y = pcall(T.stft, x, c.n_fft, opts(c, window(c.window)))
      if not ok then error(what .. ": " .. tostring(y)) end
      close(y, c.y, what)
    end
  end)

  it("takes PyTorch's positional order and works as a method", function()
    local x = T.randn(50, { dtype = T.float64 })
    local w = T.hann_window(12, { dtype = T.float64 })
    local a = T.stft(x, 12, 3, nil, w, true, "constant", true, false, true)
    local b = x:stft(12, { hop_length = 3, window = w, pad_mode = "constant", normalized = true,
      onesided = false, return_complex = true })
    assert.are.same(a.shape:totable(), { 12, 17 })
    assert.is_true(T.equal(a, b))
    -- the result is the (freq, frames) view of a (frames, freq) transform, as torch's
    assert.are.equal(1, a:stride()[1])
  end)

  it("refuses bad arguments by name", function()
    local x = T.randn(40)
    S.err(function() T.stft(x, 16) end, "return_complex must be given for real inputs")
    S.err(function()
      T.stft(x, 41, { center = false, return_complex = true })
    end, "stft: expected 0 < n_fft <= 40 (the signal's length), but got n_fft=41")
    S.err(function() T.stft(x, 0, { return_complex = true }) end, "stft: expected 0 < n_fft")
    S.err(function()
      T.stft(x, 16, { hop_length = 0, return_complex = true })
    end, "stft: expected hop_length > 0, but got hop_length=0")
    S.err(function()
      T.stft(x, 16, { win_length = 20, return_complex = true })
    end, "stft: expected 0 < win_length <= n_fft, but got win_length=20")
    S.err(function() T.stft(x, 16, { window = T.ones(10), return_complex = true }) end,
      "stft: expected a 1D window tensor of size equal to win_length=16, but got window with size [10]")
    S.err(function()
      T.stft(T.randn(2, 2, 40), 16, { return_complex = true })
    end, "stft: expected a 1D or 2D tensor, but got 3D")
    S.err(function()
      T.stft(T.arange(40), 16, { center = false, return_complex = true })
    end, "stft: expected a tensor of floating point or complex values")
    S.err(function()
      T.stft(x, 16, { pad_mode = "zeros", return_complex = true })
    end, "stft: unrecognised padding mode zeros")
    S.err(function()
      T.stft(x:narrow(1, 1, 5), 16, { return_complex = true })
    end, "stft: padding size should be less than the corresponding input dimension")
    S.err(function()
      T.stft(T.randn(40, { dtype = T.complex64 }), 16, { onesided = true })
    end, "stft: Cannot have onesided output if window or input is complex")
    S.err(function() T.stft(x, 16, { hop = 4, return_complex = true }) end, "stft: unknown option 'hop'")
    S.err(function()
      T.stft(x, 16, { center = "yes", return_complex = true })
    end, "stft: expected a boolean for center, got string")
    S.err(function() T.stft(x, 16.5, { return_complex = true }) end, "stft: expected an integer for n_fft")
  end)
end)

describe("T.istft", function()
  it("matches torch.istft over every case", function()
    assert.is_true(#F.istft >= 20)
    for i, c in ipairs(F.istft) do
      local X = build(c.x)
      local what = string.format("istft case %d", i)
      local ok, y = pcall(T.istft, X, c.n_fft, opts(c, window(c.window)))
      if not ok then error(what .. ": " .. tostring(y)) end
      close(y, c.y, what)
    end
  end)

  it("inverts stft (a round trip restores the signal)", function()
    T.manual_seed(3)
    local x = T.randn(4, 300, { dtype = T.float64 })
    local w = T.hann_window(64, { dtype = T.float64 })
    local X = T.stft(x, 64, { hop_length = 16, window = w, return_complex = true })
    local back = T.istft(X, 64, { hop_length = 16, window = w, length = 300 })
    assert.are.same({ 4, 300 }, back.shape:totable())
    assert.is_true((back - x):abs():max():item() < 1e-12)
  end)

  it("refuses bad arguments by name", function()
    local X = T.stft(T.randn(40), 16, { window = T.hann_window(16), return_complex = true })
    S.err(function() T.istft(T.view_as_real(X), 16) end, "istft: requires a complex-valued input tensor")
    S.err(function()
      T.istft(X, 16, { window = T.hann_window(16), center = false })
    end, "istft: window overlap add min: 0")
    S.err(function() T.istft(X, 16, { onesided = false }) end, "istft: expected the frequency dimension (2nd to the last) of the input tensor to match n_fft " ..
      "when onesided=false, but got 9")
    S.err(function() T.istft(X, 12, { onesided = true }) end, "match n_fft / 2 + 1 when onesided=true, but got 9")
    S.err(function() T.istft(X, 16, { hop_length = 20 }) end, "istft: expected 0 < hop_length <= win_length")
    S.err(function() T.istft(X, 16, { win_length = 20 }) end, "istft: expected 0 < win_length <= n_fft")
    S.err(function()
      T.istft(X, 16, { window = T.ones(10) })
    end, "istft: expected a 1D window tensor of size equal to win_length=16")
    S.err(function() T.istft(X:narrow(2, 1, 0), 16) end, "istft: input tensor cannot be empty")
    S.err(function()
      T.istft(X:view(1, 1, 9, 11), 16)
    end, "istft: expected a tensor with 2 or 3 dimensions of complex values, but got 4")
    S.err(function() T.istft(X, 16, { return_complex = true }) end, "istft: Cannot have onesided output")
    S.err(function() T.istft(X, 16, { pad_mode = "reflect" }) end, "istft: unknown option 'pad_mode'")
  end)
end)

describe("stft and istft on the meta device", function()
  it("compute shapes and dtypes only", function()
    local S = T.stft(T.empty(3, 40, { device = "meta" }), 16, { hop_length = 5, return_complex = true })
    assert.are.same({ 3, 9, 9 }, S.shape:totable())
    assert.are.equal(T.complex64, S.dtype)
    assert.are.equal("meta", S.device.type)
    local y = T.istft(T.empty(9, 11, { dtype = T.complex128, device = "meta" }), 16, { length = 30 })
    assert.are.same({ 30 }, y.shape:totable())
    assert.are.equal(T.float64, y.dtype)
  end)
end)

describe("stft and istft gradients", function()
  it("match torch's for the signal (or spectrum) and the window", function()
    for i, c in ipairs(F.grads) do
      local x = build(c.x):requires_grad_()
      local w = window(c.window):requires_grad_()
      local what = string.format("gradient case %d (%s)", i, c.fn)
      local y = T[c.fn](x, c.n_fft, opts(c, w))
      local gx, gw = table.unpack(T.autograd.grad({ y }, { x, w }, { grad_outputs = { build(c.g) } }))
      close(gx, c.gx, what .. ", signal")
      close(gw, c.gw, what .. ", window")
    end
  end)

  it("gradcheck in float64", function()
    T.manual_seed(11)
    local gc = T.autograd.gradcheck
    local x = T.randn(30, { dtype = T.float64 }):requires_grad_()
    local w = T.hann_window(8, { dtype = T.float64 }):add(0.1):requires_grad_()
    assert.is_true(gc(function(a, b)
      return T.view_as_real(T.stft(a, 8, { hop_length = 3, window = b, return_complex = true }))
    end, { x, w }))
    local X = T.complex(T.randn(5, 7, { dtype = T.float64 }), T.randn(5, 7, { dtype = T.float64 })):requires_grad_()
    assert.is_true(gc(function(a, b) return T.istft(a, 8, { hop_length = 2, window = b, length = 14 }) end, { X, w }))
  end)
end)
