-- The tensor tools (lua/ember/tools.lua) on the meta device: each gives the
-- shape, dtype and strides the same call gives on CPU tensors, and the one
-- that needs values (one_hot without num_classes) says so.
local T = require "ember"
local F = T.nn.functional
local unpack = table.unpack or unpack
local same_meta = require("metacheck").same_meta

local function meta_of(t)
  return T.empty(t:size(), { dtype = t.dtype, device = "meta" }):as_strided(t:size(), t:stride())
end

local function same_on_meta(f, ...)
  local cpu, meta = { ... }, {}
  for i, t in ipairs(cpu) do meta[i] = meta_of(t) end
  local c = { f(unpack(cpu)) }
  local m = { f(unpack(meta)) }
  assert.equal(#c, #m)
  for i = 1, #c do same_meta(c[i], m[i]) end
end

describe("tensor tools on meta tensors", function()
  it("tril, triu, their in-place forms, diag and diag_embed", function()
    for _, dt in ipairs { T.float32, T.float64, T.int64, T.bool } do
      same_on_meta(function(x) return x:tril(1) end, T.zeros(2, 3, 4, { dtype = dt }))
      same_on_meta(function(x) return T.triu(x, -1) end, T.zeros(4, 3, { dtype = dt }):t())
      same_on_meta(function(x) return x:tril_() end, T.zeros(3, 3, { dtype = dt }))
      same_on_meta(function(x) return x:triu_(2) end, T.zeros(3, 5, { dtype = dt }))
    end
    same_on_meta(function(x) return T.diag(x, 1) end, T.zeros(3))
    same_on_meta(function(x) return T.diag(x, -1) end, T.zeros(3, 4))
    same_on_meta(function(x) return T.diag_embed(x, 1, 1, 3) end, T.zeros(2, 3))
  end)

  it("einsum, meshgrid", function()
    same_on_meta(function(a, b) return T.einsum("bij,bjk->bik", a, b) end, T.zeros(2, 3, 4), T.zeros(2, 4, 5))
    same_on_meta(function(a, b) return T.einsum("...ij,jk", a, b) end, T.zeros(2, 3, 4), T.zeros(4, 5))
    same_on_meta(function(a) return T.einsum("ii->i", a) end, T.zeros(3, 3))
    same_on_meta(function(a) return T.einsum("ij->", a) end, T.zeros(3, 3))
    same_on_meta(function(a, b) return T.meshgrid(a, b, { indexing = "xy" }) end, T.zeros(2), T.zeros(3))
  end)

  it("pad in every mode", function()
    same_on_meta(function(x) return F.pad(x, { 1, 2, -1, 1 }, { value = 2 }) end, T.zeros(2, 3, 4))
    for _, mode in ipairs { "reflect", "replicate", "circular" } do
      same_on_meta(function(x) return F.pad(x, { 1, 2, 2, 1 }, mode) end, T.zeros(1, 2, 3, 4))
    end
  end)

  it("one_hot (num_classes given), normalize, cosine_similarity, cdist", function()
    same_on_meta(function(i) return F.one_hot(i, 5) end, T.ones(2, 3, { dtype = T.int64 }))
    assert.has_error(function() F.one_hot(T.ones(3, { dtype = T.int64, device = "meta" })) end,
      "one_hot: num_classes must be given for a meta tensor (the default reads the values)")
    same_on_meta(function(x) return F.normalize(x) end, T.zeros(3, 4))
    same_on_meta(function(a, b) return F.cosine_similarity(a, b, -1) end, T.zeros(3, 1, 4), T.zeros(2, 4))
    same_on_meta(function(a, b) return T.cdist(a, b) end, T.zeros(3, 2), T.zeros(4, 2))
    same_on_meta(function(a, b) return T.cdist(a, b) end, T.zeros(30, 2), T.zeros(4, 2))
    same_on_meta(function(a, b) return T.cdist(a, b, 1.5) end, T.zeros(2, 3, 2), T.zeros(4, 2))
  end)

  it("the activations and the layers of issue 18 item 4", function()
    for _, name in ipairs { "elu", "selu", "celu", "relu6", "hardtanh", "hardswish", "hardsigmoid", "mish",
                            "softsign", "logsigmoid", "tanhshrink", "glu" } do
      same_on_meta(F[name], T.zeros(3, 4))
    end
    same_on_meta(F.prelu, T.zeros(2, 3, 4), T.zeros(3))
    same_on_meta(function(x) return F.max_pool1d(x, 3, { stride = 2, return_indices = true }) end, T.zeros(2, 3, 9))
    same_on_meta(function(x) return F.avg_pool1d(x, 3) end, T.zeros(2, 3, 9))
    same_on_meta(function(x) return F.adaptive_avg_pool2d(x, { 2, 3 }) end, T.zeros(2, 3, 5, 7))
    same_on_meta(function(x) return F.adaptive_max_pool2d(x, { 2, 3 }, true) end, T.zeros(2, 3, 5, 7))
    same_on_meta(function(x, w, b) return F.group_norm(x, 2, w, b) end, T.zeros(2, 4, 3), T.zeros(4), T.zeros(4))
    same_on_meta(function(x) return F.rms_norm(x, { 3 }) end, T.zeros(2, 3))
    same_on_meta(function(x) return F.instance_norm(x) end, T.zeros(2, 3, 4))
    same_on_meta(function(a, b) return F.smooth_l1_loss(a, b) end, T.zeros(3, 4), T.zeros(3, 4))
    same_on_meta(function(a, b, v) return F.gaussian_nll_loss(a, b, v, "none") end, T.zeros(3, 4), T.zeros(3, 4),
      T.ones(3, 4))
    same_on_meta(function(a, p, n) return F.triplet_margin_loss(a, p, n) end, T.zeros(3, 4), T.zeros(3, 4), T.zeros(3, 4))
    same_on_meta(function(x, w, b) return F.conv_transpose2d(x, w, b, { stride = 2, output_padding = 1 }) end,
      T.zeros(2, 4, 3, 3), T.zeros(4, 3, 3, 3), T.zeros(3))
    same_on_meta(function(x, w) return F.conv_transpose1d(x, w) end, T.zeros(2, 4, 5), T.zeros(4, 3, 2))
    same_on_meta(function(x) return F.interpolate(x, { scale_factor = 2, mode = "bilinear" }) end, T.zeros(1, 2, 3, 4))
    same_on_meta(function(x) return F.interpolate(x, { size = 7 }) end, T.zeros(1, 2, 3))
    same_on_meta(function(w) return F.embedding_bag(T.ones(2, 3, { dtype = T.int64, device = w.device }), w,
      nil, { mode = "sum" }) end, T.zeros(5, 4))
  end)
end)
