-- The long-transform path (cpu/fft_fourstep_tpl.h): a contiguous lane of at
-- least 2^15 complex points (rfft: 2^16 real ones) whose length has a
-- divisor of 32 or more up to its square root is computed as many short
-- transforms. A lane along a dim that is not the last is strided and takes
-- the other path (one pocketfft call per lane), so the same data along the
-- two layouts compares two different algorithms in one process; a few
-- frequencies are also checked against the DFT's sum in float64.
local T = require "ember"

-- max |a - b| / max |b|
local function relerr(a, b)
  local d = (a - b):abs():max():item()
  local s = b:abs():max():item()
  return d / s
end

-- the same transform through the strided path: x's last dim moved first
local function strided(f, x, ...)
  local xs = x:movedim(-1, 1):contiguous():movedim(1, -1) -- same values, lanes strided
  assert.is_false(xs:is_contiguous())
  return f(xs, ...)
end

local SIZES = {
  65536, -- 2^16: the smallest rfft length taken (m = 2^15)
  3 ^ 10 * 2, -- rfft: m = 59049 = 243 x 243, blocks with a partial last one
  2 * 3 * 5 * 7 * 11 * 13 * 4, -- mixed radices
  131072, -- 2^17
  97200, -- m = 48600 = 216 x 225: even rows, odd columns
  124416, -- m = 62208 = 243 x 256: odd rows, even columns
}

describe("the four-step FFT of long lanes", function()
  it("rfft equals the strided path's and the DFT at sampled frequencies", function()
    T.manual_seed(11)
    for _, n in ipairs(SIZES) do
      for _, dt in ipairs { T.float64, T.float32 } do
        local tol = dt == T.float64 and 1e-13 or 2e-6
        local x = T.randn(2, n, { dtype = dt })
        local r = T.fft.rfft(x)
        assert.are.same({ 2, math.floor(n / 2) + 1 }, r:size())
        local e = relerr(r, strided(T.fft.rfft, x))
        assert(e < tol, ("rfft n=%d %s: %.3g"):format(n, tostring(dt), e))
        for _, norm in ipairs { "ortho", "forward" } do
          local a, b = T.fft.rfft(x, nil, -1, norm), strided(T.fft.rfft, x, nil, -1, norm)
          assert(relerr(a, b) < tol, ("rfft %s n=%d"):format(norm, n))
        end
        -- X[k] = sum_j x[j] exp(-2 pi i j k / n), in float64
        local x1 = x[2]:double()
        local j = T.arange(0, n, { dtype = T.float64 })
        local scale = r[2]:abs():max():item()
        for _, k in ipairs { 0, 1, 2, 17, math.floor(n / 4) - 1, math.floor(n / 4), math.floor(n / 3), math.floor(n / 2) - 1, math.floor(n / 2) } do
          local th = T.remainder(j * k, n) * (-2 * math.pi / n) -- (j k mod n) exactly
          local re = (x1 * th:cos()):sum():item()
          local im = (x1 * th:sin()):sum():item()
          local got = r[2][k + 1]
          local gr, gi = T.real(got):item(), T.imag(got):item()
          local err = math.max(math.abs(gr - re), math.abs(gi - im)) / scale
          assert(err < (dt == T.float64 and 1e-12 or 2e-6),
            ("rfft n=%d %s frequency %d: %.3g"):format(n, tostring(dt), k, err))
        end
      end
    end
  end)

  it("fft and ifft (and an in-place round trip) equal the strided path's", function()
    T.manual_seed(12)
    for _, n in ipairs { 32768, 3 ^ 10, 40000, 65536 } do
      for _, dt in ipairs { T.complex128, T.complex64 } do
        local tol = dt == T.complex128 and 1e-13 or 2e-6
        local x = T.randn(3, n, { dtype = dt })
        for _, f in ipairs { T.fft.fft, T.fft.ifft } do
          local a, b = f(x), strided(f, x)
          local e = relerr(a, b)
          assert(e < tol, ("n=%d %s: %.3g"):format(n, tostring(dt), e))
        end
        local back = T.fft.ifft(T.fft.fft(x))
        assert(relerr(back, x) < tol, "ifft(fft(x)) = x")
      end
    end
  end)

  it("lengths without a divisor of 32 near their square root take the other path", function()
    -- 2 x 32771 (prime): no split; the result is still the transform
    T.manual_seed(13)
    local n = 2 * 32771
    local x = T.randn(n, { dtype = T.float64 })
    local r = T.fft.rfft(x)
    local back = T.fft.irfft(r, n)
    assert(relerr(back, x) < 1e-12)
  end)

  it("gradients through the long path are the strided path's", function()
    T.manual_seed(14)
    local n = 65536
    local x = T.randn(n, { dtype = T.float64, requires_grad = true })
    local w = T.randn(math.floor(n / 2) + 1, { dtype = T.complex128 })
    local y = T.fft.rfft(x)
    T.real(y * w):sum():backward()
    local g1 = x.grad:clone()
    x.grad = nil
    local xs = x:reshape(n, 1):expand(n, 2)
    local y2 = T.fft.rfft(xs, nil, 1)
    T.real(y2[{ {}, 1 }] * w):sum():backward()
    assert(relerr(x.grad, g1) < 1e-12)
  end)
end)
