-- Three small pieces of science with T.linalg and T.fft:
--   1. a least-squares polynomial fit with its coefficients' standard errors
--      and a 95% confidence band for the fitted curve (T.linalg.lstsq, inv);
--   2. a PCA of the handwritten digits (T.linalg.svd of the centered data),
--      drawn as a PNG scatter plot of the first two components, one colour
--      per digit;
--   3. the spectrum of a noisy signal (T.fft.rfft, rfftfreq) and its peaks.
--
--   tools/fetch_digits.sh && bin/ember examples/science.lua [out_dir]
--
-- The PNGs go to out_dir (default runs/science). Loaded with
-- loadfile("examples/science.lua")("library") it returns its pieces
-- (fit, band, pca, spectrum, plots) without running them
-- (tests/lua/science_example_spec.lua does).
local T = require "ember"
local fmt = string.format
local S = {}

-- -- 1. least squares with a confidence band --------------------------------------
-- y ~ b0 + b1 x + ... + bd x^d: the coefficients, their covariance
-- sigma^2 (X^T X)^-1 and standard errors
function S.fit(x, y, degree)
  local X = x:unsqueeze(2):pow(T.arange(0, degree + 1, { dtype = x.dtype })) -- [n, d+1]
  local beta = T.linalg.lstsq(X, y:unsqueeze(2)).solution:squeeze(2)
  local resid = y - X:mv(beta)
  local n, p = X:size(1), X:size(2)
  local sigma2 = resid:square():sum():item() / (n - p)
  local cov = T.linalg.inv(X:t():mm(X)) * sigma2
  return { beta = beta, cov = cov, se = cov:diagonal():sqrt(), sigma = math.sqrt(sigma2),
           degree = degree }
end

-- the fitted curve at xs and its 95% band (z = 1.96): yhat, lower, upper
function S.band(f, xs, z)
  local X = xs:unsqueeze(2):pow(T.arange(0, f.degree + 1, { dtype = xs.dtype }))
  local yhat = X:mv(f.beta)
  local half = (X:mm(f.cov) * X):sum(2):sqrt() * (z or 1.96)
  return yhat, yhat - half, yhat + half
end

-- -- 2. PCA -----------------------------------------------------------------------
-- the data's projections on its first k principal axes and the share of the
-- variance each axis explains
function S.pca(data, k)
  local centered = data - data:mean(1, true)
  local _, sv, Vh = T.linalg.svd(centered, { full_matrices = false })
  local var = sv:square()
  return centered:mm(Vh:narrow(1, 1, k):t()), (var / var:sum()):narrow(1, 1, k)
end

local PALETTE = { { 31, 119, 180 }, { 255, 127, 14 }, { 44, 160, 44 }, { 214, 39, 40 },
  { 148, 103, 189 }, { 140, 86, 75 }, { 227, 119, 194 }, { 127, 127, 127 }, { 188, 189, 34 },
  { 23, 190, 207 } }

-- scores [n, 2] and labels (0..9, a tensor) drawn as a scatter plot
function S.plot_pca(path, scores, labels, o)
  local series = {}
  for d = 0, 9 do
    local mask = labels:eq(d)
    if mask:any():item() then
      series[#series + 1] = { x = scores:select(2, 1)[mask]:tolist(), values = scores:select(2, 2)[mask]:tolist(),
        points = true, color = PALETTE[d + 1], label = tostring(d) }
    end
  end
  o = o or {}
  return T.train.plot_curves(path, { { series = series, title = "digits: PC1 vs PC2" } },
    { width = o.width or 640, height = o.height or 480 })
end

-- the data, the fit and its band
function S.plot_fit(path, x, y, f)
  local xs = T.linspace(x:min():item(), x:max():item(), 100, { dtype = x.dtype })
  local yhat, lo, hi = S.band(f, xs)
  local gx = xs:tolist()
  return T.train.plot_curves(path, { { title = "fit and 95% band", series = {
    { x = x:tolist(), values = y:tolist(), points = true, color = { 150, 150, 150 }, label = "data" },
    { x = gx, values = yhat:tolist(), color = { 31, 119, 180 }, label = "fit" },
    { x = gx, values = lo:tolist(), color = { 214, 39, 40 }, label = "band" },
    { x = gx, values = hi:tolist(), color = { 214, 39, 40 } } } } }, { width = 640, height = 400 })
end

-- -- 3. spectrum ------------------------------------------------------------------
-- the one-sided amplitude spectrum of signal sampled at rate (Hz) and the
-- frequencies of its npeaks largest local maxima, ascending
function S.spectrum(signal, rate, npeaks)
  local n = signal:size(1)
  local amp = T.fft.rfft(signal):abs() * (2 / n)
  local freq = T.fft.rfftfreq(n, 1 / rate, { dtype = signal.dtype })
  local m = amp:size(1)
  local mid = amp:narrow(1, 2, m - 2)
  local is_peak = mid:gt(amp:narrow(1, 1, m - 2)):logical_and(mid:ge(amp:narrow(1, 3, m - 2)))
  local score = T.where(is_peak, mid, T.zeros_like(mid))
  local _, idx = score:topk(npeaks)
  local peaks = freq:narrow(1, 2, m - 2):index_select(1, idx):sort()
  return peaks, amp, freq
end

if ... == "library" then return S end

-- -- the script ---------------------------------------------------------------------
local out_dir = (...) or "runs/science"
os.execute("mkdir -p '" .. out_dir .. "'")
T.manual_seed(0)
local f64 = { dtype = T.float64 }

-- 1. y = 1 - 2x + 3x^2 plus noise
local x = T.linspace(-1, 2, 40, f64)
local y = 1 - 2 * x + 3 * x:square() + 0.8 * T.randn(40, f64)
local f = S.fit(x, y, 2)
print("least squares: y = b0 + b1 x + b2 x^2 (true 1, -2, 3)")
for i = 1, 3 do
  print(fmt("  b%d = %7.4f +- %.4f", i - 1, f.beta[i]:item(), 1.96 * f.se[i]:item()))
end
print(fmt("  residual sigma %.4f (true 0.8)", f.sigma))
print("  wrote " .. S.plot_fit(out_dir .. "/fit.png", x, y, f))

-- 2. PCA of the digits
local path = "data/digits.csv.gz"
if not io.open(path) then
  assert(os.execute("tools/fetch_digits.sh >/dev/null") == 0, "could not fetch the digits")
end
local raw = T.data.read_csv(path)                -- [1797, 65]: 64 pixels, the label
local scores, explained = S.pca(raw:narrow(2, 1, 64):double(), 2)
print(fmt("PCA of %d digits: PC1 explains %.1f%%, PC2 %.1f%% of the variance", raw:size(1),
  100 * explained[1]:item(), 100 * explained[2]:item()))
print("  wrote " .. S.plot_pca(out_dir .. "/digits_pca.png", scores, raw:select(2, 65)))

-- 3. 50 Hz and 120 Hz in noise, sampled at 1 kHz for 2 s
local rate, n = 1000, 2000
local t = T.arange(0, n, f64) / rate
local signal = 0.7 * (2 * math.pi * 50 * t):sin() + (2 * math.pi * 120 * t):sin() + 2 * T.randn(n, f64)
local peaks, amp = S.spectrum(signal, rate, 2)
print(fmt("spectrum: peaks at %s Hz (true 50, 120); largest amplitude %.2f", table.concat(peaks:tolist(), ", "),
  amp:max():item()))
