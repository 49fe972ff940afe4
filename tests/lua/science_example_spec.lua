-- examples/science.lua's pieces (issue 19, item 7) at small sizes: the
-- fit recovers known coefficients and its band covers the truth, the PCA
-- finds the dominant direction and its plot is a PNG of the asked size, the
-- spectrum's peaks are the tones put in.
local T = require "ember"

local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local S = assert(loadfile(here .. "../../examples/science.lua"))("library")

local function tmp_png()
  local base = os.tmpname()
  os.remove(base)
  return base .. ".png"
end

local function png_size(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  local function be32(i) local a, b, c, d = s:byte(i, i + 3) return ((a * 256 + b) * 256 + c) * 256 + d end
  return s:sub(1, 8) == "\137PNG\r\n\26\n" and s:sub(13, 16) == "IHDR" and s:find("IEND", #s - 12, true) ~= nil,
    be32(17), be32(21)
end

describe("examples/science.lua", function()
  local f64 = { dtype = T.float64 }

  it("fits a quadratic: the coefficients within their errors, a band around the truth", function()
    T.manual_seed(1)
    local x = T.linspace(-1, 2, 60, f64)
    local y = 1 - 2 * x + 3 * x:square() + 0.1 * T.randn(60, f64)
    local f = S.fit(x, y, 2)
    local truth = { 1, -2, 3 }
    for i = 1, 3 do
      assert.is_true(math.abs(f.beta[i]:item() - truth[i]) < 5 * f.se[i]:item())
      assert.is_true(f.se[i]:item() > 0 and f.se[i]:item() < 0.1)
    end
    assert.is_true(math.abs(f.sigma - 0.1) < 0.04)
    -- the covariance is sigma^2 (X^T X)^-1: symmetric, positive diagonal
    assert.is_true(f.cov:allclose(f.cov:t(), 1e-10, 1e-12))
    local xs = T.linspace(-1, 2, 7, f64)
    local yhat, lo, hi = S.band(f, xs)
    local true_y = 1 - 2 * xs + 3 * xs:square()
    assert.is_true(lo:le(yhat):all():item() and yhat:le(hi):all():item())
    assert.is_true((hi - lo):max():item() < 0.3)
    assert.is_true(true_y:sub(yhat):abs():max():item() < 0.15)
    -- noise-free data: the coefficients exactly, a zero-width band
    local exact = S.fit(x, 1 - 2 * x + 3 * x:square(), 2)
    assert.is_true(exact.beta:allclose(T.tensor({ 1, -2, 3 }, f64), 1e-9, 1e-9))
    local path = tmp_png()
    S.plot_fit(path, x, y, f)
    local ok, w, h = png_size(path)
    os.remove(path)
    assert.is_true(ok)
    assert.are.equal(640, w)
    assert.are.equal(400, h)
  end)

  it("finds the principal axes and plots the scores coloured by label", function()
    T.manual_seed(2)
    -- 200 points stretched along (3, 4)/5 with a little spread across
    local t = T.randn(200, 1, f64)
    local dir = T.tensor({ { 0.6, 0.8 } }, f64)
    local data = t:mm(dir) * 5 + 0.1 * T.randn(200, 2, f64) + 7
    local scores, explained = S.pca(data, 2)
    assert.are.same({ 200, 2 }, scores.shape)
    assert.is_true(explained[1]:item() > 0.99)
    -- the first score is the position along the axis (up to sign)
    local c = math.abs(T.corrcoef(T.stack({ scores:select(2, 1), t:squeeze(2) }))[1][2]:item())
    assert.is_true(c > 0.999)
    assert.is_true(scores:mean(1):abs():max():item() < 1e-9)
    local labels = T.arange(0, 200):remainder(10)
    local path = tmp_png()
    assert.are.equal(path, S.plot_pca(path, scores, labels, { width = 320, height = 240 }))
    local ok, w, h = png_size(path)
    os.remove(path)
    assert.is_true(ok)
    assert.are.equal(320, w)
    assert.are.equal(240, h)
  end)

  it("finds the tones of a noisy signal in its spectrum", function()
    T.manual_seed(3)
    local rate, n = 200, 400
    local t = T.arange(0, n, f64) / rate
    local signal = 0.7 * (2 * math.pi * 12 * t):sin() + (2 * math.pi * 31 * t):sin() + 0.5 * T.randn(n, f64)
    local peaks, amp, freq = S.spectrum(signal, rate, 2)
    assert.are.same({ 12, 31 }, peaks:tolist())
    assert.are.equal(n / 2 + 1, amp:size(1))
    assert.are.equal(100, freq[-1]:item())
    -- the amplitudes of the tones come back (2/n scaling)
    local function at(hz) return amp[hz * n / rate + 1]:item() end
    assert.is_true(math.abs(at(12) - 0.7) < 0.15)
    assert.is_true(math.abs(at(31) - 1) < 0.15)
  end)

  it("the scatter plot refuses x and values of different lengths", function()
    assert.has_error(function()
      T.train.plot_curves(tmp_png(), { { series = { { values = { 1, 2 }, x = { 1 }, points = true } } } })
    end, "plot_png: series 1 has 2 values but 1 x")
  end)
end)
