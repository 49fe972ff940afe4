-- Differences from PyTorch 1.13 found by the eleventh round of differential
-- tests (miscellaneous T.nn.functional functions and their modules: one_hot,
-- normalize, distances, unfold/fold, shuffles, glu, local_response_norm,
-- embedding_bag, pad, affine_grid, softmin/log_softmax, dropouts,
-- gumbel_softmax), each with torch's value.
local T = require "ember"
local U = require "specutil"
local F, nn = T.nn.functional, T.nn
local near = U.near_list
local f64 = { dtype = T.float64 }

-- (arange(n) * step):sin() / :cos(), float64, in shape
local function sin_t(shape, step)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return (T.arange(n, f64) * step):sin():reshape(shape)
end
local function cos_t(shape, step)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return (T.arange(n, f64) * step):cos():reshape(shape)
end

describe("difftest round 11: miscellaneous functional (torch 1.13)", function()
  it("F.dropout takes inplace (fourth or in the options), as torch's F.dropout(input, p, training, inplace)", function()
    T.manual_seed(3)
    local x = T.ones(4, 5, f64)
    local y = F.dropout(x, 0.5, true, true)
    assert.is_true(rawequal(x, y))
    -- every value is 0 or 2: x itself was written
    assert.is_true(x:eq(0):logical_or(x:eq(2)):all():item())
    assert.is_true(x:eq(0):any():item() and x:eq(2):any():item())
    local x2 = T.ones(3, f64)
    assert.is_true(rawequal(F.dropout(x2, { p = 0.2, training = false, inplace = true }), x2))
    local x3 = T.ones(3, f64)
    local y3 = F.dropout(x3, { p = 1, inplace = true })
    assert.is_true(rawequal(x3, y3))
    near(x3, { 0, 0, 0 }, 0)
    -- not in place: x is left as it is
    local x4 = T.ones(6, f64)
    F.dropout(x4, 0.5, true, false)
    near(x4, { 1, 1, 1, 1, 1, 1 }, 0)
    U.err(function() F.dropout(x4, 0.5, true, 1) end, "dropout: expected a boolean for inplace, got number")
    U.err(function() F.dropout(x4, 0.5, true, false, 1) end, "dropout takes at most 4 arguments")
  end)

  it("nn.Dropout takes inplace (Dropout(p, inplace) or {p, inplace}), as torch's", function()
    T.manual_seed(4)
    local m = nn.Dropout(0.3, true)
    assert.equal("Dropout(p=0.3, inplace=true)", tostring(m))
    assert.equal("Dropout(p=0.3, inplace=true)", tostring(nn.Dropout { p = 0.3, inplace = true }))
    assert.equal("Dropout(p=0.5, inplace=false)", tostring(nn.Dropout()))
    local x = T.ones(8, 8, f64)
    assert.is_true(rawequal(m(x), x))
    assert.is_true(x:eq(0):any():item())
    m:eval()
    local x2 = T.ones(2, f64)
    assert.is_true(rawequal(m(x2), x2))
    U.err(function() nn.Dropout(0.5, "a") end, "Dropout: expected a boolean for inplace, got string")
    assert.equal("Dropout(p=0.2, inplace=true)", tostring(nn.Dropout(0.2, { inplace = true })))
  end)

  it("F.unfold and F.fold take a positional dilation pair, as torch's F.unfold(x, 2, (1, 2))", function()
    local x = sin_t({ 1, 1, 4, 5 }, 0.37)
    local u = F.unfold(x, 2, { 1, 2 })
    assert.same({ 1, 4, 9 }, u.shape:totable())
    near(u, { 0.0, 0.361615431965, 0.674287911628, 0.961275202975, 0.796565472236, 0.524044341687,
      -0.529836140908, -0.800666782176, -0.963130930573, 0.674287911628, 0.89569868568, 0.995880844538,
      0.524044341687, 0.180596267894, -0.187294663543, -0.963130930573, -0.995239825769, -0.892647679428,
      0.961275202975, 0.796565472236, 0.524044341687, -0.529836140908, -0.800666782176, -0.963130930573,
      -0.669239857276, -0.355253559988, 0.006814640075, 0.524044341687, 0.180596267894, -0.187294663543,
      -0.963130930573, -0.995239825769, -0.892647679428, 0.006814640075, 0.367960510572, 0.679304652145 }, 1e-10)
    local f = F.fold(cos_t({ 1, 4, 9 }, 0.41), { 4, 5 }, 2, { 1, 2 })
    assert.same({ 1, 1, 4, 5 }, f.shape:totable())
    near(f, { 1.0, 0.917120822817, -0.171134692878, -0.574823946533, -0.201010121473, 0.79067031182,
      -0.005210458809, -0.519747720016, 1.044789389445, 1.635916376691, -1.462600243714, -1.882534725572,
      -0.034546791827, 1.951633858711, 1.62389154322, -0.915026773955, -0.678393850474, 0.241231574435,
      0.19589195094, -0.211229878702 }, 1e-10)
  end)

  it("nn.Unfold and nn.Fold take torch's positional dilation, padding, stride", function()
    local u = nn.Unfold(2, { 1, 2 }, 1, 2)(sin_t({ 1, 1, 5, 6 }, 0.29))
    assert.same({ 1, 4, 9 }, u.shape:totable())
    near(u, { 0.0, 0.0, 0.0, 0.0, 0.896405741152, 0.506906852248, 0.0, -0.698418469216, -0.19198591673, 0.0,
      0.0, 0.0, 0.896405741152, 0.506906852248, -0.048388443368, -0.698418469216, -0.19198591673,
      0.377240371908, 0.0, 0.285952225105, 0.764328937026, 0.0, -0.587857103378, -0.935052577558, 0.0,
      0.823080879012, 0.999712454397, 0.285952225105, 0.764328937026, 0.992712991038, -0.587857103378,
      -0.935052577558, -0.976416010291, 0.823080879012, 0.999712454397, 0.849363378505 }, 1e-10)
    assert.equal("Unfold(kernel_size=2, dilation=(1, 2), padding=1, stride=2)", tostring(nn.Unfold(2, { 1, 2 }, 1, 2)))
    local f = nn.Fold(4, 2, 1, 0, 2)(cos_t({ 1, 4, 4 }, 0.23))
    assert.same({ 1, 1, 4, 4 }, f.shape:totable())
    near(f, { 1.0, 0.605820156643, 0.973666395005, 0.408487440884, -0.265963875609, -0.928072710209,
      -0.478726544159, -0.988531820827, 0.896052497526, 0.189640831298, 0.771246014997, -0.039193631773,
      -0.66627602128, -0.996927718457, -0.818734599277, -0.952818214594 }, 1e-10)
    -- the options form still works
    assert.equal("Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=2)",
      tostring(nn.Fold(4, 2, { stride = 2 })))
  end)

  it("nn.CosineSimilarity, nn.PairwiseDistance, nn.LocalResponseNorm take torch's positional arguments", function()
    local a, b = sin_t({ 3, 4 }, 0.7), cos_t({ 3, 4 }, 0.3)
    -- torch.nn.CosineSimilarity(0, 0.5): dim 1 in ember
    near(nn.CosineSimilarity(1, 0.5)(a, b), { 0.634518311216, 0.595400437283, 0.187543832838, 0.027241636902 },
      1e-10)
    local d = nn.PairwiseDistance(1, 0.1, true)(a, b)
    assert.same({ 3, 1 }, d.shape:totable())
    near(d, { 1.712832315345, 1.316131010782, 5.049640219275 }, 1e-10)
    near(nn.LocalResponseNorm(3, 0.5, 1, 0.5)(sin_t({ 1, 4, 3 }, 0.5)), { 0.0, 0.709092128617, 1.241644128569,
      1.490685537771, 1.305299200429, 0.774054492776, 0.170349883627, -0.432229141005, -1.025314142498,
      -1.475339009191, -1.423234431457, -1.039971330269 }, 1e-10)
    assert.equal("LocalResponseNorm(3, alpha=0.5, beta=1.0, k=0.5)", tostring(nn.LocalResponseNorm(3, 0.5, 1, 0.5)))
  end)
  it("nn.EmbeddingBag takes torch's positional order after dim, an options table after it", function()
    -- torch: EmbeddingBag(10, 3, None, 2, False, 'sum') -> EmbeddingBag(10, 3, mode=sum)
    local e = nn.EmbeddingBag(10, 3, nil, 2, false, "sum")
    assert.equal("sum", e.mode)
    assert.equal("EmbeddingBag(10, 3, mode=sum)", tostring(e))
    local m = nn.EmbeddingBag(10, 3, 1.5, { mode = "max" })
    assert.equal(1.5, m.max_norm)
    assert.equal("max", m.mode)
    assert.equal(2, nn.EmbeddingBag(10, 3, { mode = "sum", padding_idx = 2 }).padding_idx)
    local ok, err = pcall(function() return nn.EmbeddingBag(10, 3, 1.5, { max_norm = 2 }) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("EmbeddingBag: max_norm given twice (argument #3 and the options table)", 1, true))
    ok, err = pcall(function() return nn.EmbeddingBag(10, 3, nil, 2, false, "sum", false, nil, false, 1, 99) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("takes at most 10 arguments", 1, true))
  end)

  it("T.broadcast_tensors() with no tensors is an empty list (torch's ())", function()
    assert.same({}, T.broadcast_tensors())
  end)
end)
