-- Helpers shared by the specs written from torch fixtures: a fixture's
-- tensor record ({v = flat values, shape =, dtype = "float64"}) as a
-- tensor, and an error check that the message holds a given text.
local T = require "ember"
local M = {}

function M.tensor(rec)
  return T.tensor(rec.v, { dtype = T[rec.dtype] }):reshape(rec.shape)
end

-- a fixture's tensor record as a tensor, complex ones too (written as the
-- flat values of torch.view_as_real with cplx = true; dtype names the
-- complex type) and 0-d ones; anything else is returned as it is
local VALUE = { complex64 = "float32", complex128 = "float64" }
function M.fixture(rec)
  if type(rec) ~= "table" or rec.v == nil then return rec end
  local t = T.tensor(rec.v, { dtype = T[VALUE[rec.dtype] or rec.dtype] })
  t = #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
  if rec.cplx then t = T.view_as_complex(t) end
  return t
end

-- got against a fixture's record: the same dtype and shape, then each value
-- within tol (default 2e-5 for float32/complex64, 1e-11 otherwise) times
-- max(1, max |want|) (each = true: times max(1, |want_i|)); NaN where want
-- is NaN, infinities equal. what names the tensor in the error.
function M.close_fixture(got, rec, what, tol, each)
  local dt = tostring(got.dtype):gsub("^ember%.", "")
  if dt ~= rec.dtype then error(("%s: dtype %s, torch's %s"):format(what, dt, rec.dtype), 2) end
  local shape = got.shape:totable()
  if rec.cplx then shape[#shape + 1] = 2 end
  if table.concat(shape, ",") ~= table.concat(rec.shape, ",") then
    error(("%s: shape [%s], torch's [%s]"):format(what, table.concat(shape, ", "), table.concat(rec.shape, ", ")), 2)
  end
  local g = (got:is_complex() and T.view_as_real(got) or got):contiguous():reshape(-1):double():tolist()
  tol = tol or ((rec.dtype == "float32" or rec.dtype == "complex64") and 2e-5 or 1e-11)
  local scale = 1
  for i = 1, #rec.v do scale = math.max(scale, math.abs(rec.v[i])) end
  for i = 1, #rec.v do
    local a, b = g[i], rec.v[i]
    if b ~= b then
      if a == a then error(string.format("%s: value %d is %.17g, torch has nan", what, i, a), 2) end
    elseif b == math.huge or b == -math.huge then
      if a ~= b then error(string.format("%s: value %d is %.17g, torch has %s", what, i, a, tostring(b)), 2) end
    elseif math.abs(a - b) > tol * (each and math.max(1, math.abs(b)) or scale) then
      error(string.format("%s: value %d is %.17g, torch has %.17g", what, i, a, b), 2)
    end
  end
end

-- f must raise an error whose text contains msg (plain text)
function M.err(f, msg)
  local ok, e = pcall(f)
  assert(not ok, "expected an error: " .. msg)
  assert(tostring(e):find(msg, 1, true), ("expected %q in the error, got %q"):format(msg, tostring(e)))
end

-- float32 0, 1, 2, ... in the given sizes (the shape specs' operand)
function M.arange_shaped(...)
  local s, n = { ... }, 1
  for _, v in ipairs(s) do n = n * v end
  return T.arange(n, { dtype = T.float32 }):reshape(s)
end

-- Rosenbrock's function of a 1-d tensor (the optimizer specs' problem)
function M.rosen(x)
  local n = x:numel()
  local x1, x0 = x:narrow(1, 2, n - 1), x:narrow(1, 1, n - 1)
  return ((x1 - x0:pow(2)):pow(2) * 100 + (1 - x0):pow(2)):sum()
end

-- t's values in order (row-major), as a Lua list: assert.same's operand
function M.flat(t)
  local r = {}
  local f = t:reshape(-1)
  for i = 1, f:numel() do r[i] = f[i]:item() end
  return r
end

-- got and want agree within tol (max absolute difference, float64), with
-- the same shape and the same NaN positions
function M.near(got, want, tol)
  local ws, gs = want.shape:totable(), got.shape:totable()
  assert(table.concat(ws, ",") == table.concat(gs, ","),
    ("shape [%s], expected [%s]"):format(table.concat(gs, ", "), table.concat(ws, ", ")))
  local d = (got:double() - want:double()):abs()
  local nan = want:isnan()
  assert(T.equal(nan, got:isnan()), "NaN positions")
  d = T.where(nan, T.zeros({}, { dtype = T.float64 }), d)
  assert(d:numel() == 0 or d:max():item() <= tol, "max difference " .. tostring(d:numel() > 0 and d:max():item()))
end

-- got (a tensor, any shape, row-major, or a list) against the list want,
-- each within tol * max(1, |want|), with the same count
function M.near_list(got, want, tol)
  local g = T.is_tensor(got) and got:reshape(-1):tolist() or got
  assert(#want == #g, string.format("%d values, expected %d", #g, #want))
  for i = 1, #want do
    assert(math.abs(g[i] - want[i]) <= tol * math.max(1, math.abs(want[i])),
      string.format("[%d] %.17g vs %.17g", i, g[i], want[i]))
  end
end

-- got's values (any shape, row-major) against the list want, each within
-- tol * (1 + |want|); what names the tensor in the error
function M.close_list(got, want, tol, what)
  local g = got:reshape(-1):tolist()
  assert(#want == #g, ("%s: %d elements, want %d"):format(what, #g, #want))
  for i = 1, #want do
    if math.abs(g[i] - want[i]) > tol * (1 + math.abs(want[i])) then
      error(string.format("%s[%d]: got %.17g, want %.17g", what, i, g[i], want[i]), 2)
    end
  end
end

-- the lists want and got hold equal values in order (NaN equals NaN);
-- what names them in the error
function M.same_list(want, got, what)
  assert(#want == #got, ("%s: %d values, expected %d"):format(what, #got, #want))
  for i = 1, #want do
    local e, g = want[i], got[i]
    if e ~= g and not (e ~= e and g ~= g) then
      error(("%s: value %d: expected %s, got %s"):format(what, i, tostring(e), tostring(g)), 2)
    end
  end
end

return M
