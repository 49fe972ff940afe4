-- Differences from PyTorch 1.13 found by the ninth round of differential
-- tests in nn.init and nn.utils (ember against torch on the same inputs),
-- each with torch's value or error. Positions are 1-based in ember (dims,
-- indices): those shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err
local I = T.nn.init

-- f must raise at the caller's line (this file), naming op first
local function err_here(f, msg)
  local ok, e = pcall(f)
  assert(not ok, "expected an error: " .. msg)
  e = tostring(e)
  assert(e:find(msg, 1, true), ("expected %q in the error, got %q"):format(msg, e))
  assert(e:find("difftest9_init_spec.lua:", 1, true), "the error should point at the caller: " .. e)
end

describe("difftest round 9: nn.init (torch 1.13)", function()
  it("checks its arguments first and raises at the caller, named after the initialiser", function()
    -- ember raised Lua errors from inside init_fns.lua ("attempt to index upvalue 't'",
    -- "attempt to perform arithmetic on a string value") or the inner method's name
    -- (torch: TypeError / "normal_kernel_cpu" not implemented for 'Long')
    err_here(function() local r = I.uniform_(nil); return r end, "uniform_: expected a tensor, got nil")
    err_here(function() local r = I.kaiming_normal_({ 1, 2 }); return r end, "kaiming_normal_: expected a tensor, got table")
    err_here(function() local r = I.dirac_(nil); return r end, "dirac_: expected a tensor, got nil")
    err_here(function() local r = I.orthogonal_(T.empty(3, 4, { dtype = T.int64 })); return r end,
      "orthogonal_: expects a floating-point tensor, got int64")
    err_here(function() local r = I.trunc_normal_(T.empty(3, 4, { dtype = T.int32 })); return r end,
      "trunc_normal_: expects a floating-point tensor, got int32")
    err_here(function() local r = I.xavier_normal_(T.empty(2, 2, { dtype = T.int32 })); return r end,
      "xavier_normal_: expects a floating-point tensor, got int32")
    err_here(function() local r = I.xavier_uniform_(T.empty(2, 2), "a"); return r end,
      "xavier_uniform_: expected gain to be a number, got string")
    err_here(function() local r = I.orthogonal_(T.empty(2, 2), "a"); return r end,
      "orthogonal_: expected gain to be a number, got string")
    err_here(function() local r = I.sparse_(T.empty(2, 2), 0.5, "a"); return r end,
      "sparse_: expected std to be a number, got string")
    -- torch: ValueError "Unsupported nonlinearity foo" / "negative_slope a not a valid number"
    err_here(function() local r = I.kaiming_uniform_(T.empty(3, 4), { nonlinearity = "foo" }); return r end,
      "kaiming_uniform_: unsupported nonlinearity foo")
    err_here(function() local r = I.kaiming_uniform_(T.empty(3, 4), "a"); return r end,
      "kaiming_uniform_: negative_slope a not a valid number")
    err_here(function() local r = I.kaiming_uniform_(T.empty(3, 4), { mode = "fan_up" }); return r end,
      "kaiming_uniform_: mode fan_up not supported")
    err_here(function() local r = I.calculate_gain("gelu"); return r end, "calculate_gain: unsupported nonlinearity gelu")
    -- a one-element tensor gain is its value (torch multiplies by it)
    T.manual_seed(1)
    local w = I.xavier_uniform_(T.empty(30, 20), T.tensor(2.0))
    assert.is_true(w:abs():max():item() <= 2 * math.sqrt(6 / 50) + 1e-6)
    assert.is_true(w:abs():max():item() > math.sqrt(6 / 50))
  end)

  it("trunc_normal_ refuses std <= 0 and a > b", function()
    -- torch: trunc_normal_(t, std=0) -> ZeroDivisionError "float division by zero";
    -- trunc_normal_(t, a=1, b=-1) -> "uniform_ expects to return a [from, to) range, but found
    -- from=0.682689 > to=-0.682689"; ember filled the mean for std = 0 and raised uniform_'s
    -- error from inside init_fns.lua
    err_here(function() local r = I.trunc_normal_(T.empty(3), 0, 0); return r end, "trunc_normal_: expected std > 0, got 0")
    err_here(function() local r = I.trunc_normal_(T.empty(3), 0, -1); return r end, "trunc_normal_: expected std > 0, got -1")
    err_here(function() local r = I.trunc_normal_(T.empty(3), 0, 1, 1, -1); return r end,
      "trunc_normal_: expected a <= b, got a=1, b=-1")
    -- a == b and bounds far from the mean are torch's: every value the bound
    assert.same({ 0.5, 0.5, 0.5 }, I.trunc_normal_(T.empty(3), 0, 1, 0.5, 0.5):tolist())
    assert.same({ 11, 11, 11 }, I.trunc_normal_(T.empty(3), 0, 1, 10, 11):tolist())
    -- infinite bounds: a plain normal
    T.manual_seed(2)
    local t = I.trunc_normal_(T.empty(20000, { dtype = T.float64 }), 1, 2, -math.huge, math.huge)
    assert.is_true(math.abs(t:mean():item() - 1) < 0.06 and math.abs(t:std():item() - 2) < 0.06)
  end)

  it("dirac_ takes groups as a positive integer; its divisibility error names dim 1", function()
    -- torch: groups=0 -> ZeroDivisionError; groups=1.5 -> TypeError; groups=-1 -> an all-zero
    -- tensor; ember raised "dim 0 must be divisible by groups" (there is no dim 0 in ember) for 0,
    -- drew a wrong identity for 1.5 and zeros for -1
    err_here(function() local r = I.dirac_(T.empty(4, 2, 3), 0); return r end,
      "dirac_: expected groups to be a positive integer, got 0")
    err_here(function() local r = I.dirac_(T.empty(3, 2, 2), 1.5); return r end,
      "dirac_: expected groups to be a positive integer, got 1.5")
    err_here(function() local r = I.dirac_(T.empty(3, 2, 2), -1); return r end,
      "dirac_: expected groups to be a positive integer, got -1")
    -- torch: ValueError "dim 0 must be divisible by groups"
    err_here(function() local r = I.dirac_(T.empty(4, 2, 3), 3); return r end,
      "dirac_: dim 1 must be divisible by groups (size 4, groups 3)")
    -- torch: dirac_(empty(6, 2, 2, 2, 2), 3).nonzero() -> rows (g*2 + d, d, 1, 1, 1)
    assert.same({ { 1, 1, 2, 2, 2 }, { 2, 2, 2, 2, 2 }, { 3, 1, 2, 2, 2 }, { 4, 2, 2, 2, 2 }, { 5, 1, 2, 2, 2 },
      { 6, 2, 2, 2, 2 } }, I.dirac_(T.empty(6, 2, 2, 2, 2), 3):nonzero():tolist())
  end)

  it("sparse_ refuses a negative sparsity", function()
    -- torch: sparse_(empty(10, 3), -0.3) zeros 7 rows per column (row_indices[:-3]); ember zeroed none
    err_here(function() local r = I.sparse_(T.empty(10, 3), -0.3); return r end, "sparse_: expected sparsity >= 0, got -0.3")
    assert.same({ 0, 0, 0 }, I.sparse_(T.empty(10, 3), 0):eq(0):sum(1):tolist())
    assert.same({ 10, 10, 10 }, I.sparse_(T.empty(10, 3), 1.5):eq(0):sum(1):tolist())
  end)

  it("orthogonal_ refuses float16 and bfloat16 naming itself", function()
    -- torch: "geqrf_cpu" not implemented for 'Half'; ember raised linalg.qr's error from inside init_fns.lua
    err_here(function() local r = I.orthogonal_(T.empty(3, 3, { dtype = T.float16 })); return r end,
      "orthogonal_: the QR it takes needs a float32 or float64 tensor, got float16")
    err_here(function() local r = I.orthogonal_(T.empty(3, 3, { dtype = T.bfloat16 })); return r end,
      "orthogonal_: the QR it takes needs a float32 or float64 tensor, got bfloat16")
    -- a tall, a wide and a 3-d float64: (semi-)orthogonal times the gain
    T.manual_seed(3)
    local o = I.orthogonal_(T.empty(5, 3, 2, { dtype = T.float64 }), 3):reshape(5, 6)
    U.near(o:matmul(o:t()), T.eye(5, { dtype = T.float64 }) * 9, 1e-12)
    o = I.orthogonal_(T.empty(7, 3, { dtype = T.float64 }), 0.5)
    U.near(o:t():matmul(o), T.eye(3, { dtype = T.float64 }) * 0.25, 1e-12)
  end)
end)

describe("difftest round 9: nn.utils (torch 1.13)", function()
  local function grads(dtype)
    local p = T.zeros(3, { dtype = dtype }):requires_grad_(); p.grad = T.tensor({ 3, 0, -4 }, { dtype = dtype })
    local q = T.zeros(2, 2, { dtype = dtype }):requires_grad_()
    q.grad = T.tensor({ { 1, -2 }, { 0.5, 0.25 } }, { dtype = dtype })
    return { p, q, T.zeros(2, { dtype = dtype }):requires_grad_() }
  end

  it("clip_grad_norm_ takes error_if_nonfinite as a 4th positional argument (torch's order)", function()
    -- torch: clip_grad_norm_(p, 1, 2, True) with p.grad [inf, 1] -> RuntimeError "The total norm of
    -- order 2.0 for gradients from `parameters` is non-finite"; ember refused the 4th argument
    local p = T.zeros(2):requires_grad_(); p.grad = T.tensor({ math.huge, 1 }, { dtype = T.float32 })
    err_here(function() local r = T.nn.utils.clip_grad_norm_(p, 1, 2, true); return r end,
      "clip_grad_norm_: The total norm of order 2 for gradients from `parameters` is non-finite")
    err_here(function() local r = T.nn.utils.clip_grad_norm_(p, 1, math.huge, true); return r end,
      "clip_grad_norm_: The total norm of order inf")
    -- false scales by the inf norm: torch -> tensor(inf), grad [nan, 0]
    local n = T.nn.utils.clip_grad_norm_(p, 1, 2, false)
    assert.equal(math.huge, n:item())
    assert.is_true(p.grad[1]:isnan():item()); assert.equal(0, p.grad[2]:item())
    err(function() T.nn.utils.clip_grad_norm_(p, 1, 2, "yes") end,
      "clip_grad_norm_: expected error_if_nonfinite to be a boolean, got string")
    err(function() T.nn.utils.clip_grad_norm_(p, 1, { norm_type = 2 }, true) end, "unexpected argument #4")
    -- torch 1.13's values for norm_type 2, 1, inf, 0.5, 0, 3, -inf over the grads above (max_norm 1.5):
    -- the total norm and the first gradient after clipping
    local want = { { 2, 5.505678653717041, 0.8173378705978394 }, { 1, 10.75, 0.41860461235046387 },
      { math.huge, 4.0, 1.124999761581421 }, { 0.5, 54.07207489013672, 0.08322225511074066 },
      { 0, 2.0, 2.2499990463256836 }, { 3, 4.643763542175293, 0.9690414667129517 }, { -math.huge, 0.0, 3.0 } }
    for _, w in ipairs(want) do
      local ps = grads(T.float32)
      local t = T.nn.utils.clip_grad_norm_(ps, 1.5, w[1])
      assert.equal(T.float32, t.dtype)
      assert.is_true(math.abs(t:item() - w[2]) <= 1e-6 * w[2], tostring(w[1]))
      assert.is_true(math.abs(ps[1].grad[1]:item() - w[3]) <= 1e-6 * w[3], tostring(w[1]))
    end
    -- mixed dtypes: torch -> tensor(13., dtype=float64)
    local a = T.zeros(2):requires_grad_(); a.grad = T.tensor({ 3, 4 }, { dtype = T.float32 })
    local b = T.zeros(2, { dtype = T.float64 }):requires_grad_(); b.grad = T.tensor({ 12, 0 }, { dtype = T.float64 })
    local t = T.nn.utils.clip_grad_norm_({ a, b }, 1.0)
    assert.equal(13, t:item()); assert.equal(T.float64, t.dtype)
  end)

  it("checks the parameter list; parameters_to_vector flattens one tensor", function()
    -- torch: parameters_to_vector(a) iterates over a's rows -> a flattened; ember raised
    -- "bad argument #1 to 'ipairs'" from inside nn/init.lua
    local a = T.arange(6, { dtype = T.float32 }):view(2, 3)
    assert.same({ 0, 1, 2, 3, 4, 5 }, T.nn.utils.parameters_to_vector(a):tolist())
    -- torch: RuntimeError "torch.cat(): expected a non-empty list of Tensors"
    err(function() T.nn.utils.parameters_to_vector({}) end, "parameters_to_vector: expected a non-empty list of parameters")
    err(function() T.nn.utils.parameters_to_vector(3) end,
      "parameters_to_vector: expected a tensor or a list of tensors for parameters, got number")
    err(function() T.nn.utils.clip_grad_norm_({ a, "x" }, 1) end,
      "clip_grad_norm_: expected a tensor at parameters[2], got string")
    err(function() T.nn.utils.clip_grad_value_(5, 1) end,
      "clip_grad_value_: expected a tensor or a list of tensors for parameters, got number")
    -- torch's vector_to_parameters(vec, a) assigns .data of a's row views: a is left unchanged;
    -- ember refuses a tensor for the list
    err(function() T.nn.utils.vector_to_parameters(T.zeros(6), a) end,
      "vector_to_parameters: expected a list of tensors for parameters, got a tensor")
    -- torch views vec[0:8] of an (8, 1) vec as each parameter; ember takes a 1-d vec only (docs/nn.md)
    err(function() T.nn.utils.vector_to_parameters(T.zeros(8, 1), { a, T.zeros(2) }) end,
      "vector_to_parameters: expected vec to be 1-d, got 2-d")
    local b = T.zeros(2)
    T.nn.utils.vector_to_parameters(T.arange(8, { dtype = T.float64 }), { a, b })
    assert.same({ 6, 7 }, b:tolist()); assert.equal(T.float32, b.dtype)
  end)

  it("spectral_norm refuses a non-integer or infinite n_power_iterations", function()
    -- torch: TypeError "'float' object cannot be interpreted as an integer" (1.5 and inf); ember
    -- said "Expected n_power_iterations to be positive" for 1.5 and took inf (an endless forward)
    err(function() T.nn.utils.spectral_norm(T.nn.Linear(3, 2), { n_power_iterations = 1.5 }) end,
      "spectral_norm: expected n_power_iterations to be an integer, got 1.5")
    err(function() T.nn.utils.spectral_norm(T.nn.Linear(3, 2), { n_power_iterations = math.huge }) end,
      "spectral_norm: expected n_power_iterations to be an integer, got inf")
    err(function() T.nn.utils.spectral_norm(T.nn.Linear(3, 2), { n_power_iterations = 0 }) end,
      "spectral_norm: Expected n_power_iterations to be positive, but got n_power_iterations=0")
  end)
end)
