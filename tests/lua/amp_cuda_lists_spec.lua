-- amp: autocast's cuda op lists (docs/amp.md, engine/src/ops/autocast.c),
-- run without a device: C._autocast_cpu_as_cuda makes CPU tensors follow
-- the cuda policy and dtype (this thread), so what a cuda tensor gets
-- inside T.autocast("cuda", ...) is checked here on the CPU. The lists are
-- PyTorch's (aten/src/ATen/autocast_mode.cpp): lower precision, fp32, and
-- the rest untouched; float64 never cast; out= and in-place calls keep
-- their dtype.
local T = require "ember"
local C = T._C
local F = T.nn.functional

-- fn() with autocast "cuda" on at dtype, CPU tensors following it
local function cuda_autocast(dtype, fn)
  local was_on, was_dt = C._autocast_get("cuda")
  C._autocast_set("cuda", true, dtype)
  C._autocast_cpu_as_cuda(true)
  local ok, err = pcall(fn)
  C._autocast_cpu_as_cuda(false)
  C._autocast_set("cuda", was_on, was_dt)
  if not ok then error(err, 0) end
end

local function dt(t) return tostring(t.dtype) end

describe("autocast's cuda lists (on CPU tensors made to follow them)", function()
  for _, low in ipairs { T.float16, T.bfloat16 } do
    it("lower precision (" .. tostring(low) .. "): the products and convolutions", function()
      T.manual_seed(3)
      local a, b = T.randn(4, 5), T.randn(5, 3)
      local v = T.randn(5)
      local x, w = T.randn(2, 3, 6, 6), T.randn(4, 3, 3, 3)
      cuda_autocast(low, function()
        for name, f in pairs {
          mm = function() return T.mm(a, b) end,
          matmul = function() return a:matmul(b) end,
          bmm = function() return T.bmm(a:unsqueeze(1), b:unsqueeze(1)) end,
          addmm = function() return T.addmm(T.zeros(4, 3), a, b) end,
          linear = function() return F.linear(a, b:t()) end,
          mv = function() return T.mv(a, v) end,
          addmv = function() return T.addmv(T.zeros(4), a, v) end,
          conv2d = function() return F.conv2d(x, w) end,
        } do
          assert.equal(tostring(low), dt(f()), name)
        end
        -- float64 is never cast
        assert.equal(tostring(T.float64), dt(T.mm(a:double(), b:double())))
      end)
    end)

    it("fp32 (" .. tostring(low) .. "): the pointwise list, the reductions, norms and losses", function()
      T.manual_seed(4)
      local pos = (T.rand(3, 4) + 0.5):to(low)     -- in (0.5, 1.5): every op defined
      local unit = (T.rand(3, 4) * 0.8 - 0.4):to(low) -- in (-0.4, 0.4): asin, acos, erfinv
      cuda_autocast(low, function()
        for name, f in pairs {
          exp = function() return pos:exp() end, expm1 = function() return pos:expm1() end,
          log = function() return pos:log() end, log2 = function() return pos:log2() end,
          log10 = function() return pos:log10() end, log1p = function() return pos:log1p() end,
          reciprocal = function() return pos:reciprocal() end, rsqrt = function() return pos:rsqrt() end,
          sinh = function() return pos:sinh() end, cosh = function() return pos:cosh() end,
          tan = function() return pos:tan() end, asin = function() return unit:asin() end,
          acos = function() return unit:acos() end, erfinv = function() return unit:erfinv() end,
          pow_scalar = function() return pos:pow(2) end, pow_tensor = function() return pos:pow(pos) end,
          pow_base = function() return T.pow(2, pos) end, softplus = function() return F.softplus(pos) end,
          sum = function() return pos:sum() end, cumsum = function() return pos:cumsum(1) end,
          prod = function() return pos:prod() end, softmax = function() return pos:softmax(2) end,
          log_softmax = function() return pos:log_softmax(2) end,
          layer_norm = function() return F.layer_norm(pos, { 4 }) end,
          mse_loss = function() return F.mse_loss(pos, unit) end,
        } do
          assert.equal(tostring(T.float32), dt(f()), name)
        end
        -- the values are the float32 op's on the converted input
        assert.is_true(T.equal(pos:exp(), pos:float():exp()))
      end)
    end)

    it("untouched (" .. tostring(low) .. "): the rest, out=, in place, float64", function()
      local x = (T.rand(3, 4) + 0.5):to(low)
      cuda_autocast(low, function()
        for name, f in pairs {
          sin = function() return x:sin() end, relu = function() return x:relu() end,
          tanh = function() return x:tanh() end, mean = function() return x:mean() end,
          add = function() return x + x end, sqrt = function() return x:sqrt() end,
          exp_out = function() return T.exp(x, { out = T.empty(3, 4, { dtype = low }) }) end,
          exp_ = function() return x:clone():exp_() end,
        } do
          assert.equal(tostring(low), dt(f()), name)
        end
        assert.equal(tostring(T.float64), dt(x:double():exp()))
      end)
    end)
  end

  it("gradients reach a half input in its own dtype through the cast", function()
    local x = (T.rand(5) + 0.5):half():requires_grad_()
    cuda_autocast(T.float16, function()
      local y = x:log()
      assert.equal(tostring(T.float32), dt(y))
      y:sum():backward()
    end)
    assert.equal(tostring(T.float16), dt(x.grad))
    assert.is_true(T.allclose(x.grad:float(), x:detach():float():reciprocal(), 1e-3, 1e-3))
  end)

  it("without the hook, CPU tensors keep PyTorch 1.13's cpu lists (exp stays bfloat16)", function()
    local x = (T.rand(4) + 0.5):bfloat16()
    local r
    T.autocast("cpu", { dtype = T.bfloat16 }, function() r = x:exp() end)
    assert.equal(tostring(T.bfloat16), dt(r))
    local was_on, was_dt = C._autocast_get("cuda")
    C._autocast_set("cuda", true, T.float16)
    local ok, y = pcall(function() return x:exp() end)
    C._autocast_set("cuda", was_on, was_dt)
    assert.is_true(ok)
    assert.equal(tostring(T.bfloat16), dt(y)) -- a CPU tensor: cuda's lists do not apply
  end)
end)
