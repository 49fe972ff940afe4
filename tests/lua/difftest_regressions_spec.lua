-- Differences from PyTorch 1.13 found by differential tests (ember against
-- torch on the same inputs, 2026-12-05), each with torch's value or error:
-- the per-sample class losses with -inf logits, cumprod's gradient at zeros,
-- unflatten's message, unique_consecutive of empty input, mode's NaN,
-- integer creation overflow, integer linspace/logspace endpoints, kl_div of a
-- negative target, batch_norm in evaluation without running statistics,
-- probability targets with ignore_index, softmax's dtype, softmin.
local T = require "ember"
local F = T.nn.functional
local U = require "specutil"

local function near(got, want, tol) return U.near(got, want, tol or 1e-6) end
local function err(f, msg)
  local ok, e = pcall(f)
  assert.is_false(ok, msg)
  assert.matches(msg, tostring(e), 1, true)
end

describe("differences from torch 1.13, fixed", function()
  it("cross_entropy and nll_loss per sample with a -inf logit of another class", function()
    local x = T.tensor({ { -1 / 0, 0, 0 }, { 1, 2, 3 } }, { dtype = T.float32 })
    local t = T.tensor { 3, 1 }
    near(F.cross_entropy(x, t, { reduction = "none" }), T.tensor { 0.6931472, 2.4076059 })
    near(F.nll_loss(T.tensor { { -1 / 0, -0.5, -1 }, { -1, -2, -3 } }, t, { reduction = "none" }), T.tensor { 1, 1 }:float())
    -- the gradient of the per-sample loss is finite too (torch: softmax - onehot, 0 at -inf)
    local xg = x:clone():requires_grad_()
    F.cross_entropy(xg, t, { reduction = "none" }):sum():backward()
    near(xg.grad, T.tensor { { 0, 0.5, -0.5 }, { -0.9099694, 0.2447285, 0.6652410 } }, 1e-6)
  end)

  it("cumprod's gradient at zeros (torch's: 1 + 3 + 6 = 10 for the first zero)", function()
    local x = T.tensor({ 1, 0, 3, 2 }, { dtype = T.float32 }):requires_grad_()
    x:cumprod(1):sum():backward()
    near(x.grad, T.tensor { 1, 10, 0, 0 }:float())
    local y = T.tensor({ { 1, 0, 3, 0 }, { 2, 5, 0.5, 4 } }, { dtype = T.float64 }):requires_grad_()
    local w = T.tensor({ { 1, 2, 3, 4 }, { -1, 0.5, 2, 1 } }, { dtype = T.float64 })
    local s = (y:cumprod(2) * w):sum()
    s:backward()
    near(y.grad, T.tensor({ { 1, 11, 0, 0 }, { 16.5, 7, 60, 5 } }, { dtype = T.float64 }), 1e-12)
    T.manual_seed(5)
    local z = T.randn(3, 4, { dtype = T.float64 })
    z[{ 2, 2 }] = 0; z[{ 3, 1 }] = 0; z[{ 3, 3 }] = 0
    assert.is_true(T.autograd.gradcheck(function(a) return a:cumprod(2) end, { z:requires_grad_() }))
    assert.is_true(T.autograd.gradcheck(function(a) return a:cumprod(1) end, { z }))
  end)

  it("unflatten's message does not repeat the previous error", function()
    pcall(function() return T.zeros(3):narrow(1, 9, 1) end)
    for _ = 1, 2 do
      local ok, e = pcall(function() return T.zeros(2, 2):unflatten(2, { 3, -1 }) end)
      assert.is_false(ok)
      assert.are.equal("unflatten: sizes [3, -1] do not multiply to the size 2 of dimension 2 " ..
        "(unflatten: shape [3, -1] is invalid for input of size 2)", tostring(e):gsub("^[^:]*:%d+: ", ""))
    end
  end)

  it("unique_consecutive of empty input, with counts and along a dim", function()
    local v, c = T.unique_consecutive(T.zeros(0), { return_counts = true })
    assert.are.equal(0, v:numel())
    assert.are.equal(T.int64, c.dtype)
    assert.are.equal(0, c:numel())
    assert.same({ 2, 0 }, T.unique_consecutive(T.zeros(2, 0), { dim = 2 }).shape:totable())
    err(function() return T.unique_consecutive(T.tensor(1.5), { dim = 1 }) end,
      "unique_consecutive: Dimension specified as 1 but tensor has no dimensions")
  end)

  it("mode counts NaN as a value", function()
    local v = T.mode(T.tensor { 0 / 0, 1, 0 / 0, 1, 0 / 0 })
    assert.is_true(v:isnan():item())
    v = T.mode(T.tensor({ 0 / 0, 0 / 0, 5 }, { dtype = T.float64 }))
    assert.is_true(v:isnan():item())
  end)

  it("integer creation refuses values out of range", function()
    err(function() return T.tensor({ 2 ^ 40, 3e9 }, { dtype = T.int32 }) end, "tensor: value cannot be converted to type int32 without overflow")
    err(function() return T.tensor({ 300, -1 }, { dtype = T.uint8 }) end, "tensor: value cannot be converted to type uint8 without overflow")
    err(function() return T.full({ 2 }, 2 ^ 40, { dtype = T.int32 }) end, "full: value cannot be converted to type int32 without overflow")
    err(function() return T.full_like(T.ones(2), 0 / 0, { dtype = T.int64 }) end, "full_like: value cannot be converted to type int64 without overflow")
    assert.same({ 255, -128 }, T.tensor({ 255, -128 }, { dtype = T.int16 }):tolist())
  end)

  it("integer linspace and logspace take integer endpoints (torch's truncation)", function()
    assert.same({ 0, 0, 0, 1, 1, 1, 2 }, T.linspace(0.5, 2.25, 7, { dtype = T.int64 }):tolist())
    assert.same({ 1, 2, 4, 10, 21, 46, 100 }, T.logspace(0.5, 2.25, 7, { dtype = T.int64 }):tolist())
    assert.same({ -2, 0, 1, 3 }, T.linspace(-2.5, 3.7, 4, { dtype = T.int64 }):tolist())
  end)

  it("kl_div of a negative target is NaN, of a zero target 0", function()
    near(F.kl_div(T.tensor { -1, -2 }:float(), T.tensor { -0.1, 0.5 }, { reduction = "none" }), T.tensor { 0 / 0, 0.6534264 })
    near(F.kl_div(T.tensor { -1, -2 }:float(), T.tensor { 0, 0.5 }, { reduction = "none" }), T.tensor { 0, 0.6534264 })
  end)

  it("batch_norm in evaluation needs running statistics; probability targets take no ignore_index", function()
    err(function() return F.batch_norm(T.ones(4, 3), nil, nil, nil, nil, false) end,
      "batch_norm: running_mean must be defined in evaluation mode")
    local bn = T.nn.BatchNorm1d(3, { track_running_stats = false })
    bn:eval()
    assert.same({ 4, 3 }, bn(T.randn(4, 3)).shape:totable())
    err(function() return F.cross_entropy(T.randn(2, 3), T.softmax(T.randn(2, 3), 2), { ignore_index = 2 }) end,
      "cross_entropy: ignore_index is not supported for floating point target")
  end)

  it("PyTorch's positional forms and kernel_size in the options; the nuclear norm; searchsorted's scalar", function()
    local w = T.arange(1, 7):reshape(3, 2):float():requires_grad_()
    F.embedding(T.tensor { 1, 2, 1 }, w, 1):sum():backward()
    assert.same({ { 0, 0 }, { 1, 1 }, { 0, 0 } }, w.grad:tolist()) -- row 1 is padding: no gradient
    assert.same({ 1, 1, 4, 4 }, F.interpolate(T.ones(1, 1, 2, 2), 4).shape:totable())
    assert.same({ 1, 1, 3, 5 }, F.interpolate(T.ones(1, 1, 2, 2), { 3, 5 }).shape:totable())
    assert.same({ 1, 1, 4, 4 }, F.interpolate(T.ones(1, 1, 2, 2), nil, 2, "bilinear", false).shape:totable())
    assert.same({ { { { 6, 8 }, { 14, 16 } } } }, F.max_pool2d(T.arange(1, 17):reshape(1, 1, 4, 4):float(), { kernel_size = 2 }):tolist())
    assert.same({ 1, 1, 3, 3 }, F.avg_pool2d(T.ones(1, 1, 4, 4), { kernel_size = 2, stride = 1 }).shape:totable())
    near(T.norm(T.tensor { { 3, 0 }, { 0, 4 } }:float(), "nuc"), T.tensor(7):float())
    near(T.ones(2, 2, 3):norm("nuc", { 2, 3 }), T.tensor { 2.4494897, 2.4494897 })
    near(T.complex(T.eye(2), T.eye(2)):norm("nuc"), T.tensor(2.8284271))
    err(function() return T.norm(T.ones(3), "nuc") end, "norm: the nuclear norm needs a 2-d input or two dims, got a 1-d input")
    err(function() return T.searchsorted(T.ones(2, 3), 3) end,
      "searchsorted: input value can be a scalar only when boundaries tensor dimension is 1")
  end)

  it("softmax and log_softmax take dtype; softmin is softmax(-x)", function()
    local x = T.tensor { { 1, 2, 3 }, { 0.5, 0, -1 } }:float()
    local s = F.softmax(x, 2, { dtype = T.float64 })
    assert.are.equal(T.float64, s.dtype)
    near(s, T.tensor({ { 0.0900306, 0.2447285, 0.6652410 }, { 0.5465493, 0.3314989, 0.1219518 } }, { dtype = T.float64 }))
    assert.are.equal(T.float64, F.log_softmax(x, { dim = 2, dtype = T.float64 }).dtype)
    near(F.softmin(x, 2), T.tensor { { 0.6652409, 0.2447285, 0.0900306 }, { 0.1402444, 0.2312239, 0.6285317 } })
    err(function() return F.softmax(x) end, "softmax: the dim argument is required")
    err(function() return F.softmin(x, 2, { bad = 1 }) end, "softmin: unknown option 'bad'")
  end)
end)

describe("optimizers, schedulers and init as torch 1.13 (differential test)", function()
  local f64 = { dtype = T.float64 }
  it("keep each optimizer's betas its own and refuse what torch refuses", function()
    local a = T.tensor({ 1, 2 }, f64):requires_grad_()
    local opt1 = T.optim.Adam({ a })
    opt1.param_groups[1].betas[1] = 0.5
    local b = T.tensor({ 1, 2 }, f64):requires_grad_()
    local opt2 = T.optim.Adam({ b }, { lr = 0.1 })
    assert.are.equal(0.9, opt2.param_groups[1].betas[1])
    b.grad = T.tensor({ 1, -1 }, f64); opt2:step()
    b.grad = T.tensor({ -1, 1 }, f64); opt2:step()
    near(b, T.tensor({ 0.9052631588, 2.0947368412 }, f64), 1e-9) -- torch's values
    local two = T.optim.Adam({ { params = { a } }, { params = { b } } })
    two.param_groups[1].betas[2] = 0.5
    assert.are.equal(0.999, two.param_groups[2].betas[2])
    err(function() return T.optim.SGD({ T.ones(2):requires_grad_() * 2 }, { lr = 0.1 }) end, "SGD: can't optimize a non-leaf Tensor")
    err(function() return T.optim.SGD({ { params = { a } }, { params = { a }, lr = 1 } }, { lr = 0.1 }) end,
      "SGD: some parameters appear in more than one parameter group")
    err(function() return T.optim.SGD({ 1.0 }, { lr = 0.1 }) end, "SGD: optimizer can only optimize Tensors, but one of the params is number")
    err(function() return T.optim.Adam({ a }, { weight_decay = -0.1 }) end, "Adam: Invalid weight_decay value: -0.1")
    err(function() return T.optim.RMSprop({ a }, { momentum = -0.5 }) end, "RMSprop: Invalid momentum value: -0.5")
  end)

  it("optimize complex parameters through their real view, as torch 1.13 (NAdam: see docs/optim.md)", function()
    local want = {
      SGD = { 0.512, -0.512, 1.024, 0.256 },
      Adam = { 0.7015862729, -0.7015862729, 1.7006233920, 0.2048712526 },
      AdamW = { 0.6989111832, -0.6989111832, 1.6949445144, 0.2037123830 },
      RMSprop = { 0, 0, 0.3096873876, -0.0763871754 },
      Adagrad = { 0.7804561814, -0.7804561814, 1.7758215150, 0.2908991768 },
      Adadelta = { 0.9990294151, -0.9990294151, 1.9990293316, 0.4990295839 },
      Adamax = { 0.7154994734, -0.7154994734, 1.7076482356, 0.2309097544 },
      RAdam = { 0.4623033599, -0.4623033599, 0.9246067198, 0.2311516799 },
    }
    for name, w in pairs(want) do
      local p = T.complex(T.tensor({ 1, 2 }, f64), T.tensor({ -1, 0.5 }, f64)):requires_grad_()
      local o = T.optim[name]({ p }, { lr = 0.1 })
      for _ = 1, 3 do
        o:zero_grad()
        T.real((p * p:conj()):sum()):backward()
        o:step()
      end
      near(T.view_as_real(p):detach():reshape(-1), T.tensor(w, f64), 1e-9)
    end
  end)

  it("PolynomialLR decays as torch's", function()
    local o = T.optim.SGD({ T.ones(2):requires_grad_() }, { lr = 1 })
    local s = T.optim.lr_scheduler.PolynomialLR(o, { total_iters = 4, power = 2 })
    local got = {}
    for i = 1, 6 do o:step(); s:step(); got[i] = s:get_last_lr()[1] end
    assert.same({ 0.5625, 0.25, 0.0625, 0, 0, 0 }, got)
  end)

  it("clip_grad_norm_ scales by a NaN norm, raises when asked, gives a float 0 without gradients", function()
    local p = T.ones(2):requires_grad_(); p.grad = T.tensor { 0 / 0, 1 }
    local q = T.ones(2):requires_grad_(); q.grad = T.tensor { 3, 4.5 }
    assert.is_true(T.nn.utils.clip_grad_norm_({ p, q }, 1.0):isnan():item())
    assert.is_true(q.grad:isnan():all():item())
    err(function() return T.nn.utils.clip_grad_norm_({ p }, 1.0, { error_if_nonfinite = true }) end,
      "clip_grad_norm_: The total norm of order 2 for gradients from `parameters` is non-finite")
    local z = T.nn.utils.clip_grad_norm_({ T.ones(2) }, 1.0)
    assert.are.equal(T.float32, z.dtype)
    local w = T.tensor({ 1, 2, 3 }, f64):requires_grad_()
    T.nn.utils.vector_to_parameters(T.tensor({ 4, 5, 6 }, f64), { w })
    assert.same({ 4, 5, 6 }, w:tolist())
  end)

  it("nn.init: orthogonal_, eye_, dirac_, trunc_normal_, sparse_, empty tensors, the gain's checks", function()
    local I = T.nn.init
    T.manual_seed(11)
    local w = I.orthogonal_(T.empty(3, 5, f64))
    near(w:matmul(w:t()), T.eye(3, f64), 1e-12)
    local w2 = I.orthogonal_(T.empty(6, 2, 2, f64), 2):reshape(6, 4)
    near(w2:t():matmul(w2) / 4, T.eye(4, f64), 1e-12)
    assert.same({ { 1, 0, 0 }, { 0, 1, 0 } }, I.eye_(T.empty(2, 3)):tolist())
    local d = I.dirac_(T.empty(4, 2, 3, 3), 2)
    assert.are.equal(4, d:sum():item())
    assert.are.equal(1, d[{ 3, 1, 2, 2 }]:item())
    local tn = I.trunc_normal_(T.empty(20000, f64), 0, 1, -1, 0.5)
    assert.is_true(tn:min():item() >= -1 and tn:max():item() <= 0.5)
    assert.is_true(math.abs(tn:mean():item() - (-0.2003)) < 0.02) -- the truncated normal's mean
    assert.same({ 3, 3, 3, 3 }, I.sparse_(T.empty(10, 4), 0.3):eq(0):sum(1):tolist())
    assert.same({ 0, 0, 0 }, T.nn.Linear(0, 3).bias:tolist())
    assert.are.equal(0, I.kaiming_uniform_(T.empty(4, 0)):numel())
    I.kaiming_normal_(T.empty(4, 3), { mode = "FAN_OUT" })
    err(function() return I.calculate_gain("leaky_relu", true) end, "calculate_gain: negative_slope true not a valid number")
    err(function() return I.orthogonal_(T.empty(3)) end, "orthogonal_: Only tensors with 2 or more dimensions are supported")
  end)
end)

describe("autograd, fft and linalg as torch 1.13 (differential test)", function()
  local f64 = { dtype = T.float64 }
  it("second derivatives through a decomposition raise instead of being wrong; inv's, solve's and det's are exact", function()
    local A = T.tensor({ { 2.5, 0.3, -0.4 }, { 0.1, 1.7, 0.6 }, { -0.8, 0.2, 2.2 } }, { dtype = T.float64, requires_grad = true })
    err(function() return T.autograd.grad(T.linalg.cholesky(A:matmul(A:t())):sum(), A, { create_graph = true }) end,
      "LinalgCholeskyExBackward0: second derivatives (create_graph through this node) are not implemented")
    err(function() return T.autograd.grad(T.linalg.svdvals(A):sum(), A, { create_graph = true }) end,
      "second derivatives (create_graph through this node) are not implemented")
    -- det and solve record their backward (torch 1.13's second derivatives)
    local gd = T.autograd.grad(T.linalg.det(A), A, { create_graph = true })
    near(T.autograd.grad(gd[1][1], A), T.tensor({ { 0, 0, 0 }, { 0, 2.2, -0.2 }, { 0, -0.6, 1.7 } }, f64), 1e-12)
    local gs = T.autograd.grad(T.linalg.solve(A, T.ones(3, 1, f64)):sum(), A, { create_graph = true })
    near(T.autograd.grad(gs:sum(), A), T.tensor({ { 0.6519685328073812, 0.5125100231159627, 0.8472104463753669 },
      { 0.5609961793923977, 0.4409969966346655, 0.7289950352532226 },
      { 0.5367368851484022, 0.421926856239653, 0.6974709256206508 } }, f64), 1e-12)
    near(T.autograd.grad(T.linalg.det(A), A), T.tensor({ { 3.62, -0.7, 1.38 }, { -0.74, 5.18, -0.74 }, { 0.86, -1.54, 4.22 } }, f64), 1e-12)
    local gi = T.autograd.grad(T.linalg.inv(A):sum(), A, { create_graph = true })[1]
    assert.is_true(gi.requires_grad) -- inv's backward is recorded: its second derivative exists
  end)

  it("backward casts an integer or bool gradient to the output's dtype (torch's engine casts)", function()
    local x = T.tensor({ 1, 2, 3 }, { dtype = T.float32 }):requires_grad_()
    ;(x * x):backward(T.tensor { 1, 1, 1 })
    assert.same({ 2, 4, 6 }, x.grad:tolist())
    local y = T.tensor({ 1, 2 }, f64):requires_grad_()
    ;(y * y):backward(T.tensor { true, false })
    assert.same({ 2, 0 }, y.grad:tolist())
    err(function() local z = T.complex(T.ones(2), T.ones(2)):requires_grad_(); (z * 2):backward(T.ones(2)) end,
      "for complex tensors, both grad_output and output are required to have the same dtype")
  end)

  it("whole-tensor median/nanmedian split the gradient between ties; a NaN max() sends it to the NaN", function()
    local x = T.tensor({ 2, 1, 2 }, f64):requires_grad_()
    local m = x:median()
    assert.are.equal(2, m:item())
    m:backward()
    assert.same({ 0.5, 0, 0.5 }, x.grad:tolist())
    local z = T.tensor({ 2, 1, 2, 1 }, f64):requires_grad_()
    T.nanmedian(z):backward()
    assert.same({ 0, 0.5, 0, 0.5 }, z.grad:tolist())
    local y = T.tensor({ 1, 0 / 0, 3 }, f64):requires_grad_()
    local mx = y:max()
    assert.is_true(mx:isnan():item())
    mx:backward()
    assert.same({ 0, 1, 0 }, y.grad:tolist())
    local q = T.tensor({ 1, 0 / 0, 0 / 0, 2 }, f64):requires_grad_()
    q:nanmedian():backward()
    assert.same({ 1, 0, 0, 0 }, q.grad:tolist())
  end)

  it("autograd.backward takes a list of gradients", function()
    local x = T.tensor({ 1, 2 }, { dtype = T.float64, requires_grad = true })
    T.autograd.backward({ x * 2, x * x }, { T.ones(2, f64), T.ones(2, f64) })
    assert.same({ 4, 6 }, x.grad:tolist())
  end)

  it("std, dist and p < 1 norms have PyTorch's 0 gradient where the value or element is 0", function()
    local y = T.tensor({ 2, 2, 2 }, { dtype = T.float64, requires_grad = true })
    y:std():backward()
    assert.same({ 0, 0, 0 }, y.grad:tolist())
    local a = T.tensor({ 1, 2 }, { dtype = T.float64, requires_grad = true })
    T.dist(a, T.tensor({ 1, 2 }, f64)):backward()
    assert.same({ 0, 0 }, a.grad:tolist())
    local v = T.tensor({ 0, 4 }, { dtype = T.float64, requires_grad = true })
    T.linalg.vector_norm(v, 0.5):backward()
    assert.same({ 0, 1 }, v.grad:tolist())
    near(T.dist(T.tensor { 1.5, 2 }, T.tensor { 0, 0 }:float(), 3), T.tensor(2.2489707))
  end)

  it("linalg.lu of empty matrices gives torch's shapes", function()
    for _, c in ipairs {
      { { 0, 3 }, { 0, 0 }, { 0, 0 }, { 0, 3 } }, { { 3, 0 }, { 3, 3 }, { 3, 0 }, { 0, 0 } },
      { { 2, 0, 0 }, { 2, 0, 0 }, { 2, 0, 0 }, { 2, 0, 0 } }, { { 2, 3, 0 }, { 2, 3, 3 }, { 2, 3, 0 }, { 2, 0, 0 } },
    } do
      local P, Lm, U = T.linalg.lu(T.zeros(c[1], f64))
      assert.same({ c[2], c[3], c[4] }, { P.shape:totable(), Lm.shape:totable(), U.shape:totable() })
    end
    assert.same({ { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, (T.linalg.lu(T.zeros(3, 0, f64))):tolist())
  end)

  it("fftfreq refuses an integer dtype; eigvalsh takes a lower-case UPLO", function()
    err(function() return T.fft.fftfreq(4, 1, { dtype = T.int64 }) end, "fftfreq: fftfreq requires a floating point dtype, got int64")
    near(T.linalg.eigvalsh(T.tensor({ { 2, 1 }, { 1, 2 } }, f64), { UPLO = "u" }), T.tensor({ 1, 3 }, f64), 1e-12)
  end)
end)
