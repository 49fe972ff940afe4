-- T.fft against torch.fft 1.13 (tests/fixtures/gen_fft.py -> fft_cases.lua):
-- values of every transform over odd/even sizes, padding and truncation by
-- n/s, the three norms, several dims, non-contiguous and integer inputs;
-- fftfreq/rfftfreq and the shifts; gradients against torch's and gradcheck;
-- and the refusals.
local T = require "ember"
local F = dofile("tests/fixtures/fft_cases.lua")

local S = require "specutil"
local build, close = S.fixture, S.close_fixture

describe("T.fft conformance with torch.fft", function()
  it("matches every transform case", function()
    assert.is_true(#F.cases > 300)
    for i, c in ipairs(F.cases) do
      local x = build(c.x)
      if c.t then x = x:t() end
      local what = string.format("case %d: %s", i, c.fn)
      local ok, y = pcall(T.fft[c.fn], x, c.args)
      if not ok then error(what .. ": " .. tostring(y)) end
      close(y, c.y, what)
    end
  end)

  it("matches fftfreq and rfftfreq", function()
    for _, c in ipairs(F.freqs) do
      close(T.fft[c.fn](c.n, c.d), c.y, c.fn .. " " .. c.n)
    end
    local f = T.fft.fftfreq(4, { dtype = T.float64 })
    assert.are.equal(T.float64, f.dtype)
  end)

  it("matches fftshift and ifftshift", function()
    for _, c in ipairs(F.shifts) do
      local x = build(c.x)
      close(T.fft[c.fn](x, c.args.dim), c.y, c.fn)
    end
  end)

  it("matches torch's gradients of every transform (each norm, trimmed and padded n)", function()
    assert.is_true(#F.grads > 150)
    for i, c in ipairs(F.grads) do
      local x = build(c.x):requires_grad_()
      local what = string.format("gradient case %d: %s", i, c.fn)
      local ok, y = pcall(function()
        if c.fn == "fftshift" or c.fn == "ifftshift" then return T.fft[c.fn](x, c.args.dim) end
        return T.fft[c.fn](x, c.args)
      end)
      if not ok then error(what .. ": " .. tostring(y)) end
      local gx = T.autograd.grad({ y }, { x }, { grad_outputs = { build(c.g) } })[1]
      close(gx, c.gx, what)
    end
  end)

  it("gradchecks every transform in float64 and complex128", function()
    T.manual_seed(7)
    local gc = T.autograd.gradcheck
    local function r(...) return T.randn({ ... }, { dtype = T.float64 }):requires_grad_() end
    local function z(...)
      return T.complex(T.randn({ ... }, { dtype = T.float64 }),
        T.randn({ ... }, { dtype = T.float64 })):requires_grad_()
    end
    for _, norm in ipairs { "backward", "ortho", "forward" } do
      assert.is_true(gc(function(a) return T.fft.fft(a, 7, 1, norm) end, { z(5) }))
      assert.is_true(gc(function(a) return T.fft.ifft(a, 3, -1, norm) end, { z(2, 5) }))
      assert.is_true(gc(function(a) return T.fft.fft(a, nil, 1, norm) end, { r(4, 2) }))
      assert.is_true(gc(function(a) return T.fft.rfft(a, 5, -1, norm) end, { r(6) }))
      assert.is_true(gc(function(a) return T.fft.irfft(a, nil, -1, norm) end, { z(4) }))
      assert.is_true(gc(function(a) return T.fft.irfft(a, 9, -1, norm) end, { z(4) }))
      assert.is_true(gc(function(a) return T.fft.hfft(a, 5, -1, norm) end, { z(4) }))
      assert.is_true(gc(function(a) return T.fft.ihfft(a, 7, -1, norm) end, { r(6) }))
      assert.is_true(gc(function(a) return T.fft.rfft2(a, { 3, 4 }, nil, norm) end, { r(2, 5) }))
      assert.is_true(gc(function(a) return T.fft.irfftn(a, nil, nil, norm) end, { z(3, 3) }))
      assert.is_true(gc(function(a) return T.fft.fftn(a, { 2, 4 }, nil, norm) end, { z(3, 3) }))
    end
    assert.is_true(gc(function(a) return T.fft.fftshift(a) end, { z(3, 4) }))
    assert.is_true(gc(function(a) return T.fft.ifftshift(a, 1) end, { r(5, 2) }))
    -- second order: the backward of the backward is a transform again
    local a = z(4)
    local g = T.autograd.grad({ T.fft.fft(a):abs():sum() }, { a }, { create_graph = true })[1]
    assert.is_true(g.requires_grad)
    assert.is_true(gc(function(b)
      local h = T.autograd.grad({ T.fft.rfft(b):abs():sum() }, { b }, { create_graph = true })[1]
      return h
    end, { r(6) }))
  end)

  it("takes positional arguments", function()
    local x = T.randn(8)
    local a = T.fft.fft(x, 8, -1, "ortho")
    local b = T.fft.fft(x, { n = 8, dim = -1, norm = "ortho" })
    assert.is_true(T.equal(T.view_as_real(a), T.view_as_real(b)))
    local y = T.randn(3, 4, 5)
    local c = T.fft.fftn(y, { 4, 6 }, { 1, 3 })
    assert.are.same({ 4, 4, 6 }, { c:size(1), c:size(2), c:size(3) })
  end)

  it("round-trips", function()
    local x = T.randn(4, 9, { dtype = T.float64 })
    local r = T.fft.irfft(T.fft.rfft(x), 9)
    assert.is_true(T.allclose(r, x, 1e-12, 1e-12))
    local z = T.fft.ifftn(T.fft.fftn(x))
    assert.is_true(T.allclose(z.real, x, 1e-12, 1e-12))
  end)

  it("complex64 and float32 transforms (the float build) agree with the double ones within float32 rounding on every lane path, at 1 and 2 threads", function()
    -- the float build of pocketfft (cpu/pocketfft_f32.c) against the double
    -- one: the transformed dim innermost (in place; rfft in its output),
    -- in the middle with 3, 16 (a full block of lanes) and 37 lanes, even
    -- and odd lengths, a length with a large prime factor (Bluestein), and
    -- results equal at 1 and 2 threads
    local function close(a, b, what)
      local scale = b:abs():max():item()
      local err = (a:to(b.dtype) - b):abs():max():item()
      assert.is_true(err <= 2e-6 * scale, string.format("%s: %g off (scale %g)", what, err, scale))
    end
    local threads = T.get_num_threads()
    for _, shape in ipairs { { 64 }, { 63 }, { 4, 4096 }, { 2, 1031 }, { 5, 32, 3 }, { 2, 20, 16 }, { 3, 9, 37 } } do
      for _, d in ipairs { 1, #shape } do
        local x = T.randn((table.unpack or unpack)(shape))
        local z = T.complex(x, T.randn(x.shape))
        local what = string.format("(%s) dim %d", table.concat(shape, ", "), d)
        close(T.fft.fft(z, { dim = d }), T.fft.fft(z:to(T.complex128), { dim = d }), "fft " .. what)
        close(T.fft.ifft(z, { dim = d }), T.fft.ifft(z:to(T.complex128), { dim = d }), "ifft " .. what)
        local r = T.fft.rfft(x, { dim = d })
        assert.equal(T.complex64, r.dtype)
        close(r, T.fft.rfft(x:double(), { dim = d }), "rfft " .. what)
        T.set_num_threads(1)
        local r1, f1 = T.fft.rfft(x, { dim = d }), T.fft.fft(z, { dim = d })
        T.set_num_threads(2)
        local r2, f2 = T.fft.rfft(x, { dim = d }), T.fft.fft(z, { dim = d })
        T.set_num_threads(threads)
        assert.is_true(T.equal(T.view_as_real(r1), T.view_as_real(r2)), "rfft threads " .. what)
        assert.is_true(T.equal(T.view_as_real(f1), T.view_as_real(f2)), "fft threads " .. what)
      end
    end
    local x = T.randn(3, 64, 64)
    close(T.fft.irfft2(T.fft.rfft2(x)), x:double(), "irfft2(rfft2(x))")
    -- computed in float, not in double and rounded: the double transform
    -- cast to complex64 differs from it in some elements (it was that cast,
    -- bit for bit, when complex64 went through the double build)
    local y = T.randn(4096)
    local f, d = T.fft.rfft(y), T.fft.rfft(y:double()):to(T.complex64)
    assert.is_false(T.equal(T.view_as_real(f), T.view_as_real(d)))
    local z = T.complex(T.randn(64, 64), T.randn(64, 64))
    assert.is_false(T.equal(T.view_as_real(T.fft.fft2(z)), T.view_as_real(T.fft.fft2(z:to(T.complex128)):to(T.complex64))))
  end)

  it("refuses bad arguments with the op named", function()
    local x = T.randn(8)
    local function fails(pat, f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      assert.is_truthy(tostring(e):find(pat, 1, true), tostring(e))
    end
    fails("fft: Invalid normalization mode", T.fft.fft, x, { norm = "nope" })
    fails("fft: unknown option 'zz'", T.fft.fft, x, { zz = 1 })
    fails("fft: Invalid number of data points (0)", T.fft.fft, x, { n = 0 })
    fails("fft: dimension 2 out of range", T.fft.fft, x, { dim = 2 })
    fails("rfft: expects a real input tensor", T.fft.rfft, T.fft.fft(x))
    fails("fftn: dims must be unique", T.fft.fftn, T.randn(2, 2), { dim = { 1, -2 } })
    fails("fftn: When given, dim and shape", T.fft.fftn, T.randn(2, 2), { s = { 2 }, dim = { 1, 2 } })
    fails("irfft: Invalid number of data points (0)", T.fft.irfft, T.randn(1))
    fails("fft: expected a tensor", T.fft.fft, 3)
    fails("fftfreq: unknown option 'zz'", T.fft.fftfreq, 4, { zz = 1 })
  end)

  it("works on the meta device (shapes only)", function()
    local x = T.empty(4, 6, { device = "meta" })
    local y = T.fft.rfft(x)
    assert.are.equal("meta", tostring(y.device))
    assert.are.same({ 4, 4 }, { y:size(1), y:size(2) })
  end)
end)

describe("T.fft out=", function()
  local FFT = T.fft
  it("rfft writes a contiguous out of the right shape in place, and returns it", function()
    local x = T.randn(4, 16)
    local o = T.empty(4, 9, { dtype = T.complex64 })
    local ptr = o:data_ptr()
    local r = FFT.rfft(x, { out = o, norm = "ortho" })
    assert.equal(ptr, o:data_ptr())
    assert.is_true(rawequal(r, o))
    assert.is_true(T.equal(o, FFT.rfft(x, { norm = "ortho" })))
    local o64 = T.empty(9, { dtype = T.complex128 })
    FFT.rfft(x[1]:double(), { out = o64 })
    assert.is_true(T.equal(o64, FFT.rfft(x[1]:double())))
    -- along dim 1 (strided input), and with n padding
    local o1 = T.empty(3, 16, { dtype = T.complex64 })
    FFT.rfft(x, { dim = 1, out = o1 })
    assert.is_true(T.equal(o1, FFT.rfft(x, { dim = 1 })))
    local on = T.empty(4, 11, { dtype = T.complex64 })
    FFT.rfft(x, { n = 20, out = on })
    assert.is_true(T.equal(on, FFT.rfft(x, { n = 20 })))
  end)
  it("other outs are written as every out= op writes them", function()
    local x = T.randn(4, 16)
    local want = FFT.rfft(x)
    local e = T.empty(0, { dtype = T.complex64 })
    FFT.rfft(x, { out = e }) -- an empty out is resized
    assert.is_true(T.equal(e, want))
    local nc = T.empty(9, 4, { dtype = T.complex64 }):t() -- not contiguous
    FFT.rfft(x, { out = nc })
    assert.is_true(T.equal(nc, want))
    assert.has_error(function() FFT.rfft(x, { out = T.empty(3, 9, { dtype = T.complex64 }) }) end,
      "rfft: output with shape [3, 9] doesn't match the result shape [4, 9] (only an empty out tensor is resized)")
    assert.has_error(function() FFT.rfft(x, { out = T.empty(4, 9) }) end,
      "rfft: expected out to have dtype ember.complex64, got ember.float32")
    assert.has_error(function() FFT.rfft(x, { out = 3 }) end, "rfft: expected a tensor for out, got number")
    local y = T.randn(4, 16):requires_grad_()
    assert.has_error(function() FFT.rfft(y, { out = T.empty(4, 9, { dtype = T.complex64 }) }) end,
      "rfft: functions with out= arguments don't support automatic differentiation, but one of the arguments requires grad")
  end)
  it("every transform and fftfreq take out", function()
    local x = T.randn(4, 6)
    local c = T.complex(T.randn(4, 6), T.randn(4, 6))
    local cases = {
      { "fft", c }, { "ifft", c }, { "irfft", c }, { "hfft", c }, { "ihfft", x },
      { "fft2", c }, { "ifft2", c }, { "fftn", c }, { "ifftn", c }, { "rfft2", x }, { "rfftn", x },
      { "irfft2", c }, { "irfftn", c }, { "hfft2", c }, { "hfftn", c }, { "ihfft2", x }, { "ihfftn", x },
    }
    for _, k in ipairs(cases) do
      local want = FFT[k[1]](k[2])
      local o = T.empty(0, { dtype = want.dtype })
      local r = FFT[k[1]](k[2], { out = o })
      assert.is_true(rawequal(r, o), k[1])
      assert.is_true(T.equal(o, want), k[1])
    end
    -- the positional form ends with a table holding only out
    local o = T.empty(0, { dtype = T.complex64 })
    assert.is_true(rawequal(FFT.rfft(x, 8, 1, "ortho", { out = o }), o))
    assert.is_true(T.equal(o, FFT.rfft(x, 8, 1, "ortho")))
    local o2 = T.empty(0, { dtype = T.complex64 })
    FFT.fft2(c, { 4, 4 }, nil, { out = o2 })
    assert.is_true(T.equal(o2, FFT.fft2(c, { 4, 4 })))
    assert.has_error(function() FFT.rfft(x, 8, { out = o, dim = 1 }) end,
      "rfft: unknown option 'dim' (expected one of: out)")
    assert.has_error(function() FFT.rfft(x, 8, { out = o }, 1) end,
      "rfft: unexpected argument #4 (number): rfft takes at most 3 arguments")
    local f = T.empty(0)
    FFT.fftfreq(5, { out = f })
    assert.is_true(T.equal(f, FFT.fftfreq(5)))
    assert.has_error(function() FFT.rfftfreq(6, 0.5, { out = f }) end, -- a filled out of another shape
      "rfftfreq: output with shape [5] doesn't match the result shape [4] (only an empty out tensor is resized)")
  end)
end)
