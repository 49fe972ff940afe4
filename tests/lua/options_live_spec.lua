-- Every entry point either honours or refuses an option (issue 21, item 5).
-- The list of entry points is the live one: every function of T, of
-- T.nn.functional and every tensor method present when the spec runs. Each
-- needs a recipe below (the positional arguments of one valid call); an
-- entry without one fails, so a new function cannot skip this check.
-- For each entry the spec makes the call three times:
--   plain                       it must succeed (the recipe is valid);
--   with {zz_unknown = 1} added  it must raise an error naming the op and
--                                the key ("unknown option 'zz_unknown'"), or
--                                saying that the op takes no options;
--   with {out = o} added         it must either write o and return it (equal
--                                to the plain result), or raise an error that
--                                names out.
local T = require "ember"
local C = require "ember.core"
local unpack = table.unpack or unpack

-- Fresh values for every evaluation of a recipe (in-place methods mutate).
local fresh = {
  x = function() return T.tensor { { 0.5, -1.5, 2 }, { 3, 0.25, -4 } } end,   -- (2, 3) float32
  y = function() return T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }:float() end,
  p = function() return T.tensor { { 0.5, 0.25, 0.75 }, { 0.125, 0.5, 0.625 } } end, -- in (0, 1)
  v = function() return T.tensor { 1, 2, 3 }:float() end,                  -- (3)
  w = function() return T.tensor { 2, 0, 1 }:float() end,
  sq = function() return T.tensor { { 2, 1 }, { 1, 3 } } end,                -- (2, 2)
  b3 = function() return T.ones(2, 2, 2) end,                            -- (2, 2, 2)
  n = function() return T.tensor { 3, 1, 2, 1 } end,                        -- int64
  k = function() return T.tensor { { 5, 3, 6 }, { 1, 7, 2 } } end,          -- int64 (2, 3)
  i = function() return T.tensor { 2, 1 } end,                               -- int64 positions
  gi = function() return T.tensor { { 1, 3 }, { 2, 1 } } end,                 -- gather index (2, 2)
  si = function() return T.tensor { { 1, 2, 3 }, { 2, 1, 3 } } end,          -- scatter index (2, 3)
  m = function() return T.tensor { { true, false, true }, { false, true, false } } end,
  z = function() return T.zeros(2, 3) end,
  g = function() return T.tensor { { 0.5, -1.5, 2 }, { 3, 0.25, -4 } }:requires_grad_() end,
  logits = function() return T.tensor { { 1, 2, 0.5 }, { 0.1, 0.2, 3 } } end,
  target = function() return T.tensor { 2, 3 } end,
  img = function() return T.ones(1, 1, 4, 4) end,
  kern = function() return T.ones(1, 1, 3, 3) end,
  seq = function() return T.ones(1, 1, 5) end,
  kern1 = function() return T.ones(1, 1, 3) end,
  lw = function() return T.ones(2, 3) end,
  lb = function() return T.zeros(2) end,
  emb = function() return T.ones(4, 3) end,
  path = function() return os.tmpname() end,
  c = function() return T.complex(T.tensor { 1.5, -2 }, T.tensor { 0.5, 3 }) end, -- complex64 (2)
}
local env = setmetatable({ T = T, C = C }, { __index = function(_, k)
  local f = fresh[k]
  if f then return f() end
  return _G[k]
end })

-- recipes: name → the argument list of one valid call, as Lua source
local R = {}
local function same(names, args) for w in names:gmatch("%S+") do R[w] = args end end

same([[abs absolute acos arccos arcsin arctan asin atan ceil cos cosh erf exp exp2
  expm1 fix floor frac isfinite isinf isnan log log10 log1p log2 logical_not neg
  negative reciprocal relu round rsqrt sigmoid sign silu sin sinh sqrt square tan
  tanh trunc gelu softplus nan_to_num sum mean prod amax amin aminmax all any argmax
  argmin std var std_mean var_mean norm median nanmean nanmedian nansum
  count_nonzero max min sort argsort unique clone flatten t adjoint nonzero
  argwhere squeeze unbind isreal contiguous detach float double half bfloat16 int
  long short char byte bool cpu tolist data_ptr element_size nbytes numel nelement
  ndimension dim is_contiguous is_floating_point storage_offset stride size
  is_non_overlapping_and_dense untyped_storage item_ data iter detach_ zero_
  exponential_ normal_ uniform_ random_]], "x")
same("bernoulli bernoulli_", "p")
R.retain_grad = "g * 2"
-- complex (issue 19)
same([[real imag conj angle is_complex view_as_real]], "c")
R.complex = "v, w"
R.polar = "v, w"
same("positive deg2rad deg2rad_ rad2deg rad2deg_ rot90", "x")
-- the everyday helpers (lua/ember/helpers.lua; tests/lua/helpers_spec.lua)
same([[ravel fliplr flipud msort signbit isposinf isneginf is_signed atleast_1d atleast_2d
  atleast_3d diagflat as_tensor asarray combinations vander]], "x")
R.combinations, R.vander, R.as_tensor, R.asarray = "v", "v", "v", "v"
same("hann_window hamming_window blackman_window bartlett_window kaiser_window scalar_tensor", "4")
same("det inverse logdet matrix_exp pinverse qr svd slogdet cholesky_inverse", "sq:double()")
R.matrix_power = "sq:double(), 2"
R.cholesky_solve = "T.ones(2, 1):double(), T.linalg.cholesky(sq:double())"
R.sum_to_size = "x, 1, 3"
R.type_as = "x, y"
R.type = "x, T.float64"
R.cholesky_inverse = "T.eye(2)"
R.addr = "x, T.ones(2), v"
R.addbmm = "sq:float(), b3, b3"
-- in-place shape ops (helpers2.lua), on a fresh tensor each time
R.as_strided_ = "T.ones(2, 3), { 3, 2 }, { 1, 3 }"
R.resize_ = "T.ones(3), 2, 2"
R.resize_as_ = "T.ones(3), T.ones(2, 2)"
R.set_ = "T.zeros(2), T.ones(3)"
R.lu_unpack = "T.linalg.lu_factor(T.randn(3, 3))"
R.orgqr = "T.geqrf(T.randn(4, 3))"
R.ormqr = "(function() local a, t = T.geqrf(T.randn(4, 3)); return a, t, T.randn(4, 2) end)()"
R.svd_lowrank = "T.randn(8, 6), 3"
R.pca_lowrank = "T.randn(8, 6), 3"
R.cholesky = "T.eye(3), true"
R.triangular_solve = "T.ones(3, 2), T.eye(3), true, false, false"
R.symeig = "T.eye(3), true, true"
R.binomial = "T.ones(3), T.full({ 3 }, 0.5)"
R.histogramdd = "T.randn(10, 2), 2"
R.stft = "T.randn(40), 16, nil, nil, nil, true, 'reflect', false, nil, true"
R.istft = "T.stft(T.randn(40), 16, nil, nil, T.hann_window(16), true, 'reflect', false, nil, true), 16, nil, nil, T.hann_window(16)"
R.is_set_to = "T.ones(3), T.ones(3)"
R.squeeze_, R.unsqueeze_, R.t_ = "T.ones(2, 1)", "T.ones(2), 1", "T.ones(2, 3)"
R.transpose_, R.swapaxes_, R.swapdims_ = "T.ones(2, 3), 1, 2", "T.ones(2, 3), 1, 2", "T.ones(2, 3), 1, 2"
R.chain_matmul = "x, x:t()"
R.cross = "T.ones(2, 3), T.ones(2, 3)"
R.index_put = "x, { T.tensor { 1 } }, T.tensor(1.0)"
R.pdist = "x"
same("block_diag broadcast_tensors is_same_size fmax fmin rsub", "x, y")
R.block_diag, R.broadcast_tensors = "x, v", "x, v"
same("cartesian_prod ger", "v, w")
R.broadcast_shapes = "{ 2, 1 }, { 3 }"
R.column_stack = "{ v, w }"
R.hsplit, R.vsplit, R.dsplit = "x, 3", "x, 2", "b3, 2"
R.isin = "x, v"
R.take_along_dim = "x, gi, 2"
same("tril_indices triu_indices", "3, 3")
R.is_nonzero = "T.ones(1)"
same("new_zeros new_ones new_empty", "x, 2")
R.new_full = "x, { 2 }, 7"
R.new_tensor = "x, { 1, 2 }"
R.fill_diagonal_ = "x, 2"
R.view_as_complex = "T.ones(3, 2)"
R.torch_kind = "{}"
same([[add sub mul div divide multiply subtract true_divide atan2 arctan2 eq ne lt le gt
  ge greater greater_equal less less_equal not_equal maximum minimum fmod remainder
  floor_divide pow logical_and logical_or logical_xor isclose allclose equal
  copy_ expand_as reshape_as view_as shares_storage]], "x, y")
same([[bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift]], "k, k")
R.bitwise_not = "k"
same([[cumsum cumprod cummax cummin softmax log_softmax logsumexp kthvalue topk]], "x, 1")
R.kthvalue = "x, 1, 2"
same([[relu_ sigmoid_ tanh_ exp_ abs_ absolute_ neg_ negative_ floor_ ceil_ round_ trunc_ fix_
  frac_ sign_ sqrt_ rsqrt_ square_ sin_ cos_ tan_ sinh_ cosh_ asin_ acos_ atan_ arcsin_
  arccos_ arctan_ erf_ exp2_ expm1_ log_ log10_ log1p_ log2_ reciprocal_ silu_ gelu_
  softplus_ nan_to_num_ logical_not_]], "x")
same([[add_ sub_ mul_ div_ divide_ multiply_ subtract_ true_divide_ atan2_ arctan2_ eq_
  ne_ lt_ le_ gt_ ge_ greater_ greater_equal_ less_ less_equal_ not_equal_ maximum_
  minimum_ fmod_ remainder_ floor_divide_ pow_ logical_and_ logical_or_ logical_xor_]],
  "x, y")
same([[bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_left_shift_ bitwise_right_shift_]], "k, k")
R.bitwise_not_ = "k"
same("clamp clip clamp_ clip_", "x, -1, 1")
same("clamp_min clamp_max clamp_min_ clamp_max_", "x, 0")
same("lerp lerp_", "x, y, 0.5")
-- special functions (issue 19 item 3; tests/lua/special_spec.lua)
same([[erfc erfc_ erfinv erfinv_ lgamma lgamma_ digamma digamma_ i0 i0_ sinc sinc_ frexp]], "p")
same("logit logit_", "p, 0.1")
same("igamma igammac", "p, p")
same("asinh asinh_ arcsinh arcsinh_", "x")
same("acosh acosh_ arccosh arccosh_", "p + 1")
same("atanh atanh_ arctanh arctanh_", "p")
same("polygamma polygamma_", "p, 1")
R.polygamma = "1, p"
same("mvlgamma mvlgamma_", "p + 2, 2")
same([[xlogy xlogy_ hypot hypot_ copysign copysign_ nextafter nextafter_ heaviside heaviside_
  logaddexp logaddexp2 float_power ldexp ldexp_]], "x, y")
R.float_power_ = "x:double(), y"
same("gcd gcd_ lcm lcm_", "k, k")
same("addcmul addcmul_ addcdiv addcdiv_", "x, y, y")
-- distributions' samplers (issue 19 item 4; tests/lua/distributions_spec.lua)
R.normal = "x, 0" -- std 0: the same values with and without out=
R.poisson = "z" -- rate 0: zeros with and without out=
same("cauchy_ log_normal_", "x, 0, 1")
R.geometric_ = "x, 0.5"
-- statistics helpers (issue 19 item 3; tests/lua/stats_spec.lua)
same([[diff cov corrcoef histc histogram trapezoid trapz cumulative_trapezoid gradient]], "x")
same("quantile nanquantile", "x, 0.5")
R.logcumsumexp = "x, 2"
R.bincount = "n"
same("mode unique_consecutive", "k")
R.searchsorted = "v, x"
R.bucketize = "x, v"
R.dist = "x, y"
same("renorm renorm_", "x, 2, 1, 1")
same("fill_", "x, 2")
same("masked_fill masked_fill_", "x, m, 0")
same("masked_scatter masked_scatter_", "x, m, y")
R.masked_select = "x, m"
R.where = "m, x, y"
same("index_select", "x, 2, i")
same("index_add index_add_ index_copy index_copy_", "x, 1, i, y")
same("index_fill index_fill_", "x, 2, i, 0")
R.index_put_ = "x, { i }, T.tensor { 9 }:float()"
same("gather", "x, 2, gi")
same("scatter scatter_ scatter_add scatter_add_", "x, 2, si, y")
same("scatter_reduce scatter_reduce_", "x, 2, si, y, 'sum'")
same("put put_", "x, T.tensor { 1, 6 }, T.tensor { 7, 8 }:float()")
R.take = "x, T.tensor { 1, 6 }"
same("matmul mm", "x, y:t()")
R.bmm = "b3, b3"
R.mv = "x, v"
R.dot = "v, w"
R.vdot = "v, w"
R.outer = "v, w"
R.addmm = "sq, sq, sq"
R.addmv = "v:narrow(1, 1, 2), x, v"
R.baddbmm = "b3, b3, b3"
R.linear = "x, lw, lb"
same("cat concat concatenate", "{ x, y }, 1")
same("stack hstack vstack dstack row_stack", "{ x, y }")
R.stack = "{ x, y }, 1"
same("chunk split tensor_split", "x, 2")
same("narrow", "x, 2, 1, 2")
same("select", "x, 1, 2")
same("diagonal", "x")
same("transpose swapaxes swapdims", "x, 1, 2")
same("movedim moveaxis", "x, 1, 2")
R.permute = "x, 2, 1"
same("view reshape", "x, 3, 2")
R.expand = "v, 2, 3"
R.broadcast_to = "v, { 2, 3 }"
R.unsqueeze = "x, 1"
R.unflatten = "v, 1, { 1, 3 }"
R.unfold = "v, 1, 2, 1"
R.flip = "x, { 1 }"
R.roll = "x, 1, 2"
same("repeat_tensor repeat", "x, 2, 1")
R.tile = "x, { 2, 1 }"
R.repeat_interleave = "x, 2"
R.as_strided = "x, { 2, 2 }, { 1, 1 }"
R.multinomial = "p:view(-1), 2"
R.to = "x, 'float64'"
R.backward = "(g * 2):sum()"
R.requires_grad_ = "x"
R.item = "x:view(-1):narrow(1, 1, 1)"
R.is_pinned = "x"
R.pin_memory = "x"
R.record_stream = "x:cuda(), T.cuda.current_stream()"
R.cuda = nil -- no device: refused before options matter (checked below)
R.to_dlpack = "x"
R.register_post_accumulate_grad_hook = "T.ones(2, { requires_grad = true }), function() end"
R.register_hook = "T.ones(2, { requires_grad = true }), function() end"
R.softmax = "x, 1"

-- creation and module-level functions
same("zeros ones empty rand randn", "2, 3")
same("zeros_like ones_like empty_like rand_like randn_like", "x")
R.full = "{ 2, 3 }, 7"
R.full_like = "x, 7"
R.randint = "1, 5, { 2, 3 }"
R.randint_like = "x, 1, 5"
R.randperm = "5"
R.arange = "1, 5"
R.linspace = "0, 1, 5"
R.logspace = "0, 1, 5"
R.eye = "3"
R.tensor = "{ 1, 2, 3 }"
R.Tensor = "{ 1, 2, 3 }"
R.is_tensor = "x"
R.is_size = "x.shape"
R.is_dtype = "T.float32"
R.is_storage = "x:untyped_storage()"
R.can_cast = "T.float32, T.int64"
R.promote_types = "T.float32, T.int64"
R.result_type = "x, k"
R.get_default_dtype = ""
R.set_default_dtype = "T.float32"
R.get_num_threads = ""
R.set_num_threads = "T.get_num_threads()"
R.get_printoptions = ""
R.set_printoptions = "{}"
R._tensor_str = "x"
R.get_rng_state = ""
R.set_rng_state = "T.get_rng_state()"
R.manual_seed = "1"
R.seed = ""
R.initial_seed = ""
R.finfo = "T.float32"
R.iinfo = "T.int32"
R.is_inference_mode_enabled = ""
R.is_anomaly_enabled = ""
R.memory_stats = ""
R.empty_cache = ""
R.device = "'cpu'"
R.is_grad_enabled = ""
R.set_grad_enabled = "true"
R.is_autocast_enabled = "'cpu'"
R.get_autocast_dtype = "'cpu'"
R.is_autocast_cpu_enabled = ""
R.enable_grad = "function() end"
R.no_grad = "function() end"
R.are_deterministic_algorithms_enabled = ""
R.use_deterministic_algorithms = "false"
R.from_dlpack = "x:to_dlpack()"
R.from_ffi = nil -- needs FFI: checked where present
R.save = "path, x"
R.load = "(function() local f = os.tmpname(); T.save(f, x); return f end)()"
R.save_npy = "path, x"
R.load_npy = "(function() local f = os.tmpname(); T.save_npy(f, x); return f end)()"
R.save_npz = "path, { a = x }"
R.load_npz = "(function() local f = os.tmpname(); T.save_npz(f, { a = x }); return f end)()"
R.save_safetensors = "path, { a = x }, { note = 'v' }"
R.load_safetensors = "(function() local f = os.tmpname(); T.save_safetensors(f, { a = x }); return f end)()"
R.load_safetensors_buffer = nil -- set below (needs the bytes)
R.save_torch = "path, { a = x }"
R.load_torch = "(function() local f = os.tmpname(); T.save_torch(f, { a = x }); return f end)()"

-- tensor tools (issue 18)
same("tril triu tril_ triu_", "x")
same("diag diag_embed", "v")
R.einsum = "'ij,jk->ik', x, y:t()"
R.meshgrid = "v, w"
R.cdist = "x, y"
-- issue 19: T.trace, T.kron, T.tensordot (T.linalg's recipes are LR below)
R.trace = "sq"
R.inner = "x, y"
R.sgn = "x"
R.cfloat = "x"
R.cdouble = "x"
R.geqrf = "sq:double()"
R.kron = "x, y"
R.tensordot = "x, y:t(), 1"
R.cosine_similarity = "x, y"
-- more helpers (lua/ember/helpers2.lua; tests/lua/helpers2_spec.lua)
same([[is_conj is_neg resolve_conj resolve_neg alias_copy detach_copy diagonal_copy squeeze_copy
  t_copy unbind_copy sgn_]], "x")
same("conj_physical conj_physical_ view_as_real_copy", "c")
R.view_as_complex_copy = "T.ones(3, 2)"
R.fill = "x, 2"
R.range = "1, 4"
same("empty_strided", "{ 2, 3 }, { 3, 1 }")
R.new_empty_strided = "x, { 2, 3 }, { 3, 1 }"
same("split_with_sizes unsafe_split_with_sizes split_with_sizes_copy", "x, { 1, 2 }, 2")
same("unsafe_chunk unsafe_split split_copy", "x, 2")
R.as_strided_copy = "x, { 2, 2 }, { 1, 1 }"
R.expand_copy = "v, 2, 3"
R.narrow_copy = "x, 2, 1, 2"
R.permute_copy = "x, 2, 1"
R.select_copy = "x, 1, 2"
R.slice_copy = "x, 2, 1, 2"
R.transpose_copy = "x, 1, 2"
R.unfold_copy = "v, 1, 2, 1"
R.unsqueeze_copy = "x, 1"
R.view_copy = "x, 3, 2"
R.select_scatter = "x, v, 1, 2"
R.slice_scatter = "x, T.ones(2, 2), 2, 1, 2"
R.diagonal_scatter = "x, T.ones(2)"
R.as_strided_scatter = "x, T.ones(2, 2), { 2, 2 }, { 3, 1 }"
R.addmv_ = "v:narrow(1, 1, 2), x, v"
R.addmm_ = "sq, sq, sq"
R.addbmm_ = "sq:float(), b3, b3"
R.addr_ = "x, T.ones(2), v"
R.baddbmm_ = "b3, b3, b3"
same("cumsum_ cumprod_", "x, 1")
same("igamma_ igammac_", "p, p")
same("index_reduce index_reduce_", "x, 1, i, y, 'amax'")
R.lu = "sq:float()"
R.lu_solve = "T.ones(2, 1), T.lu(sq:float())"

-- T.nn.functional
local FR = {
  pdist = "x",
  adaptive_avg_pool1d = "seq, 2", adaptive_max_pool1d = "seq, 2",
  adaptive_avg_pool2d = "img, 2", adaptive_max_pool2d = "img, 2",
  avg_pool1d = "seq, 2", max_pool1d = "seq, 2",
  celu = "x", elu = "x", selu = "x", relu6 = "x", hardtanh = "x", hardswish = "x",
  hardsigmoid = "x", mish = "x", softsign = "x", logsigmoid = "x", tanhshrink = "x",
  glu = "T.ones(2, 4)", prelu = "x, T.tensor { 0.25 }",
  conv_transpose1d = "seq, kern1", conv_transpose2d = "img, kern",
  conv_tbc = "T.ones(5, 1, 2), T.ones(3, 2, 4), T.ones(4), 1",
  cosine_embedding_loss = "x, y, T.tensor { 1, -1 }", cosine_similarity = "x, y",
  ctc_loss = "T.randn(5, 1, 4):log_softmax(3), T.tensor { { 2, 3 } }, T.tensor { 5 }, T.tensor { 2 }",
  embedding_bag = "T.tensor { 1, 2, 3 }, emb, T.tensor { 1, 3 }",
  gaussian_nll_loss = "x, y, p", group_norm = "img, 1", huber_loss = "x, y",
  instance_norm = "img", interpolate = "img, { scale_factor = 2 }", upsample = "img, { scale_factor = 2 }",
  kl_div = "x, p", margin_ranking_loss = "v, w, T.tensor { 1, -1, 1 }", normalize = "x",
  one_hot = "T.tensor { 1, 3 }", pad = "x, { 1, 1 }", pairwise_distance = "x, y",
  poisson_nll_loss = "x, y", rms_norm = "x, { 3 }", smooth_l1_loss = "x, y",
  triplet_margin_loss = "x, y, p",
  relu = "x", sigmoid = "x", tanh = "x", gelu = "x", silu = "x", softplus = "x",
  leaky_relu = "x", softmax = "x, 2", log_softmax = "x, 2", softmin = "x, 2",
  hardshrink = "x", softshrink = "x", threshold = "x, 0.5, 0", threshold_ = "x, 0.5, 0", rrelu = "x",
  pixel_shuffle = "T.ones(1, 4, 2, 2), 2", pixel_unshuffle = "T.ones(1, 1, 2, 2), 2",
  unfold = "img, 2", fold = "T.ones(1, 4, 9), { 4, 4 }, 2", bilinear = "x, y, T.ones(2, 3, 3)",
  soft_margin_loss = "x, y", hinge_embedding_loss = "x, y", multilabel_soft_margin_loss = "x, p",
  local_response_norm = "img, 2",
  linear = "x, lw, lb", dropout = "x", embedding = "T.tensor { 1, 2 }, emb",
  conv1d = "seq, kern1", conv2d = "img, kern", max_pool2d = "img, 2", avg_pool2d = "img, 2",
  batch_norm = "x, T.zeros(3), T.ones(3)", layer_norm = "x, { 3 }",
  cross_entropy = "logits, target", nll_loss = "logits:log_softmax(2), target",
  mse_loss = "x, y", l1_loss = "x, y",
  binary_cross_entropy = "p, p", binary_cross_entropy_with_logits = "x, p",
  scaled_dot_product_attention = "b3, b3, b3",
  lp_pool1d = "seq, 2, 2", lp_pool2d = "img, 2, 2",
  max_unpool1d = "T.ones(1, 1, 2), T.tensor { { { 1, 4 } } }, 2",
  max_unpool2d = "T.ones(1, 1, 2, 2), T.tensor { { { { 1, 3 }, { 9, 11 } } } }, 2",
  conv3d = "T.ones(1, 1, 3, 3, 3), T.ones(1, 1, 2, 2, 2)", conv_transpose3d = "T.ones(1, 1, 2, 2, 2), T.ones(1, 1, 2, 2, 2)",
  max_pool3d = "T.ones(1, 1, 2, 2, 2), 2", avg_pool3d = "T.ones(1, 1, 2, 2, 2), 2",
  adaptive_avg_pool3d = "T.ones(1, 1, 2, 2, 2), 1", adaptive_max_pool3d = "T.ones(1, 1, 2, 2, 2), 1",
  max_unpool3d = "T.ones(1, 1, 1, 1, 1), T.tensor { 8 }:view(1, 1, 1, 1, 1), 2",
  affine_grid = "T.zeros(1, 2, 3), { 1, 1, 2, 2 }", grid_sample = "img, T.zeros(1, 2, 2, 2)",
  dropout1d = "x", dropout2d = "img", dropout3d = "img", alpha_dropout = "x", feature_alpha_dropout = "img",
  -- nn/more_layers3.lua
  relu_ = "x", elu_ = "x", celu_ = "x", selu_ = "x", leaky_relu_ = "x", hardtanh_ = "x", rrelu_ = "x",
  max_pool1d_with_indices = "seq, 2", max_pool2d_with_indices = "img, 2",
  adaptive_max_pool1d_with_indices = "seq, 2", adaptive_max_pool2d_with_indices = "img, 2",
  upsample_bilinear = "img, nil, 2", upsample_nearest = "img, nil, 2",
  channel_shuffle = "T.ones(1, 4, 2), 2", gumbel_softmax = "x, 0.5",
  multi_margin_loss = "logits, target", multilabel_margin_loss = "logits, T.tensor { { 2, 0, 1 }, { 3, 1, 0 } }",
  triplet_margin_with_distance_loss = "x, y, p", fractional_max_pool2d = "img, 2, { output_size = 2 }",
  fractional_max_pool2d_with_indices = "img, 2, { output_size = 2 }",
  fractional_max_pool3d = "T.ones(1, 1, 4, 4, 4), 2, { output_size = 2 }",
  fractional_max_pool3d_with_indices = "T.ones(1, 1, 4, 4, 4), 2, { output_size = 2 }",
}

-- T.nn classes (constructors), T.nn.init, T.nn.utils, T.optim,
-- T.optim.lr_scheduler, T.data, T.autograd, and the methods of modules,
-- optimizers, schedulers, data loaders and datasets
fresh.lin = function() return T.nn.Linear(3, 2) end
fresh.params = function() return T.nn.Linear(3, 2):parameters() end
fresh.sgd = function() return T.optim.SGD(T.nn.Linear(3, 2):parameters(), { lr = 0.1 }) end
fresh.ds = function() return T.data.TensorDataset(T.ones(4, 2), T.ones(4)) end
fresh.loader = function() return T.data.DataLoader(T.data.TensorDataset(T.ones(4, 2), T.ones(4)), { batch_size = 2 }) end
fresh.sched = function()
  return T.optim.lr_scheduler.StepLR(T.optim.SGD(T.nn.Linear(3, 2):parameters(), { lr = 0.1 }), { step_size = 1 })
end
fresh.csv = function()
  local f = os.tmpname()
  local h = io.open(f, "w"); h:write("1,2\n3,4\n"); h:close()
  return f
end
fresh.leaf = function() return T.ones(2, { dtype = T.float64, requires_grad = true }) end
local NR = {
  Linear = "3, 2", Conv1d = "1, 2, 3", Conv2d = "1, 2, 3", BatchNorm1d = "3", BatchNorm2d = "3",
  LayerNorm = "3", Dropout = "0.5", Embedding = "4, 3", MaxPool2d = "2", AvgPool2d = "2",
  LeakyReLU = "", ReLU = "", GELU = "", Tanh = "", Sigmoid = "", SiLU = "", Softmax = "1",
  LogSoftmax = "1", Flatten = "", Unflatten = "2, { 1, 3 }", Identity = "", Sequential = "lin",
  ModuleList = "{ lin }", CrossEntropyLoss = "", NLLLoss = "", MSELoss = "", L1Loss = "",
  BCELoss = "", BCEWithLogitsLoss = "",
  AdaptiveAvgPool1d = "2", AdaptiveAvgPool2d = "2", AdaptiveMaxPool1d = "2", AdaptiveMaxPool2d = "2",
  AvgPool1d = "2", MaxPool1d = "2", BatchNorm3d = "3", CELU = "", ELU = "", SELU = "", ReLU6 = "",
  Hardtanh = "", Hardswish = "", Hardsigmoid = "", Mish = "", Softplus = "", Softsign = "",
  LogSigmoid = "", Tanhshrink = "", GLU = "", PReLU = "", CTCLoss = "",
  ConvTranspose1d = "1, 2, 3", ConvTranspose2d = "1, 2, 3", CosineEmbeddingLoss = "",
  EmbeddingBag = "4, 3", GaussianNLLLoss = "", GroupNorm = "1, 2", HuberLoss = "",
  InstanceNorm1d = "3", InstanceNorm2d = "3", KLDivLoss = "", MarginRankingLoss = "",
  ModuleDict = "{ a = lin }", ParameterDict = "{ a = T.ones(2) }", ParameterList = "{ T.ones(2) }",
  PoissonNLLLoss = "", RMSNorm = "3", SmoothL1Loss = "", TripletMarginLoss = "",
  Upsample = "{ scale_factor = 2 }",
  Conv3d = "1, 2, 2", ConvTranspose3d = "1, 2, 2", MaxPool3d = "2", AvgPool3d = "2", AdaptiveAvgPool3d = "1",
  AdaptiveMaxPool3d = "1", MaxUnpool3d = "2",
  LPPool1d = "2, 2", LPPool2d = "2, 2", MaxUnpool1d = "2", MaxUnpool2d = "2", Dropout1d = "", Dropout2d = "",
  Dropout3d = "", AlphaDropout = "", FeatureAlphaDropout = "",
  UpsamplingBilinear2d = "nil, 2", UpsamplingNearest2d = "nil, 2", ChannelShuffle = "2", MultiMarginLoss = "",
  MultiLabelMarginLoss = "", TripletMarginWithDistanceLoss = "", NLLLoss2d = "", CrossMapLRN2d = "3",
  InstanceNorm3d = "3", ReflectionPad3d = "1", FractionalMaxPool2d = "2, { output_size = 2 }",
  AdaptiveLogSoftmaxWithLoss = "4, 5, { 2 }", FractionalMaxPool3d = "2, { output_size = 2 }",
  LazyLinear = "2", LazyConv1d = "2, 3", LazyConv2d = "2, 3", LazyConvTranspose1d = "2, 3",
  LazyConvTranspose2d = "2, 3", LazyBatchNorm1d = "", LazyBatchNorm2d = "", LazyInstanceNorm1d = "",
  LazyInstanceNorm2d = "",
  Hardshrink = "", Softshrink = "", Threshold = "0.5, 0", RReLU = "", Softmin = "2", Softmax2d = "",
  PixelShuffle = "2", PixelUnshuffle = "2", Unfold = "2", Fold = "{ 4, 4 }, 2", ZeroPad2d = "1",
  ConstantPad1d = "1, 0", ConstantPad2d = "1, 0", ConstantPad3d = "1, 0", ReplicationPad1d = "1",
  ReplicationPad2d = "1", ReplicationPad3d = "1", ReflectionPad1d = "1", ReflectionPad2d = "1",
  CosineSimilarity = "", PairwiseDistance = "", Bilinear = "3, 3, 2", SoftMarginLoss = "",
  HingeEmbeddingLoss = "", MultiLabelSoftMarginLoss = "", LocalResponseNorm = "2",
  MultiheadAttention = "4, 2", TransformerEncoderLayer = "4, 2", TransformerDecoderLayer = "4, 2",
  TransformerEncoder = "T.nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 }), 1",
  TransformerDecoder = "T.nn.TransformerDecoderLayer(4, 2, { dim_feedforward = 8 }), 1",
  Transformer = "4, 2",
  RNN = "3, 4", LSTM = "3, 4", GRU = "3, 4", RNNCell = "3, 4", LSTMCell = "3, 4", GRUCell = "3, 4",
  pad_sequence = "{ T.ones(2, 3), T.ones(1, 3) }", pack_sequence = "{ T.ones(2, 3), T.ones(1, 3) }",
  pack_padded_sequence = "T.ones(2, 2, 3), { 2, 1 }",
  pad_packed_sequence = "T.nn.utils.rnn.pack_sequence({ T.ones(2, 3), T.ones(1, 3) })",
  DistributedDataParallel = "lin", DistributedSampler = "ds, { num_replicas = 1, rank = 0 }",
  -- functions of T.nn, T.nn.init, T.nn.utils
  Parameter = "T.ones(2)",
  calculate_gain = "'relu'", uniform_ = "T.empty(2, 2)", normal_ = "T.empty(2, 2)",
  constant_ = "T.empty(2, 2), 1", zeros_ = "T.empty(2, 2)", ones_ = "T.empty(2, 2)",
  xavier_uniform_ = "T.empty(2, 2)", xavier_normal_ = "T.empty(2, 2)",
  kaiming_uniform_ = "T.empty(2, 2)", kaiming_normal_ = "T.empty(2, 2)",
  orthogonal_ = "T.empty(2, 2)", eye_ = "T.empty(2, 2)", dirac_ = "T.empty(2, 2, 3)",
  trunc_normal_ = "T.empty(2, 2)", sparse_ = "T.empty(2, 2), 0.5",
  vector_to_parameters = "T.ones(2), { T.zeros(2) }",
  _calculate_fan_in_and_fan_out = "T.empty(2, 2)",
  weight_norm = "lin", remove_weight_norm = "T.nn.utils.weight_norm(lin)",
  spectral_norm = "lin", remove_spectral_norm = "T.nn.utils.spectral_norm(lin)",
  clip_grad_norm_ = "params, 1", clip_grad_value_ = "params, 1", parameters_to_vector = "params",
  -- T.optim and its schedulers
  SGD = "params, { lr = 0.1 }", Adam = "params", AdamW = "params", RMSprop = "params",
  Adagrad = "params", Adadelta = "params", Adamax = "params", NAdam = "params", RAdam = "params",
  ASGD = "params", Rprop = "params", LBFGS = "params",
  summary = "lin, { 1, 3 }, { verbose = 0 }",
  grad_of = "T.ones(2)", set_grad = "T.ones(2), T.ones(2)", _zero_grads = "params",
  StepLR = "sgd, { step_size = 1 }", CosineAnnealingLR = "sgd, { T_max = 3 }",
  LambdaLR = "sgd, function() return 1 end", MultiplicativeLR = "sgd, function() return 0.9 end",
  MultiStepLR = "sgd, { 2, 4 }", ExponentialLR = "sgd, 0.9", LinearLR = "sgd", ConstantLR = "sgd", PolynomialLR = "sgd",
  OneCycleLR = "sgd, 0.1, { total_steps = 10 }", CosineAnnealingWarmRestarts = "sgd, 2",
  CyclicLR = "sgd, { base_lr = 0.01, max_lr = 0.1 }", ReduceLROnPlateau = "sgd",
  SequentialLR = "(function() local o = sgd; return o, { schedulers = { T.optim.lr_scheduler.ConstantLR(o) }, milestones = {} } end)()",
  ChainedScheduler = "{ T.optim.lr_scheduler.ExponentialLR(sgd, 0.9) }",
  -- T.data
  TensorDataset = "T.ones(4, 2), T.ones(4)", Subset = "ds, { 1, 2 }", random_split = "ds, { 2, 2 }",
  default_collate = "{ { T.ones(2) }, { T.ones(2) } }", DataLoader = "ds, { batch_size = 2 }",
  ConcatDataset = "{ ds, ds }", SequentialSampler = "ds", RandomSampler = "ds", SubsetRandomSampler = "{ 1, 2 }",
  WeightedRandomSampler = "{ 0.5, 0.5 }, 2", BatchSampler = "T.data.SequentialSampler(ds), 2, false",
  read_csv = "csv",
  -- T.autograd
  grad = "(function() local l = leaf; return (l * 2):sum(), { l } end)()", backward = "(leaf * 2):sum()",
  is_grad_enabled = "",
  gradcheck = "function(a) return a * 2 end, { leaf }",
  gradgradcheck = "function(a) return a * a end, { leaf }",
  set_detect_anomaly = "false",
}
-- methods of objects: the recipe's first value is the object
local OR = {
  module = {
    parameters = "lin", named_parameters = "lin", buffers = "lin", named_buffers = "lin",
    children = "lin", named_children = "lin", modules = "lin", named_modules = "lin",
    apply = "lin, function() end", num_parameters = "lin", train = "lin", eval = "lin",
    zero_grad = "lin", to = "lin, T.float64", double = "lin", float = "lin",
    state_dict = "lin", load_state_dict = "lin, lin:state_dict()", extra_repr = "lin",
    register_parameter = "lin, 'extra', T.ones(2)", register_buffer = "lin, 'b', T.ones(2)",
    add_module = "lin, 'sub', T.nn.ReLU()", forward = "lin, T.ones(2, 3)",
    init = "lin", new = "T.nn.Linear, 3, 2", extend = "T.nn.Module, 'Mine'",
    register_forward_pre_hook = "lin, function() end", register_forward_hook = "lin, function() end",
    register_full_backward_hook = "lin, function() end",
    requires_grad_ = "lin, false",
    register_module = "lin, 'sub2', T.nn.ReLU()", get_submodule = "lin, ''",
    get_parameter = "lin, 'weight'", get_buffer = "T.nn.BatchNorm1d(2), 'running_mean'",
    half = "lin", bfloat16 = "lin",
  },
  optimizer = {
    zero_grad = "sgd", step = "sgd", state_dict = "sgd", load_state_dict = "sgd, sgd:state_dict()",
    add_param_group = "sgd, { params = { T.ones(2, { requires_grad = true }) } }",
    create = nil, update = nil,
  },
  scheduler = { step = "sched", get_last_lr = "sched", state_dict = "sched",
    load_state_dict = "sched, sched:state_dict()", _apply = "sched", print_lr = "sched, false, 1, 0.1, 2" },
  loader = { len = "loader", batches = "loader", iter = "loader" },
  dataset = { len = "ds", get = "ds, 1", get_batch = "ds, T.tensor { 1, 2 }" },
}

local function compile(src, what)
  local chunk, err = load("return " .. src, "=" .. what, "t", env)
  assert(chunk, err)
  return chunk
end

local entries = {}
local function add_entry(label, op, fn, recipe, method)
  entries[#entries + 1] = { label = label, op = op, fn = fn, recipe = recipe, method = method }
end
local function sorted_keys(t)
  local ks = {}
  for k, v in pairs(t) do if type(v) == "function" and type(k) == "string" then ks[#ks + 1] = k end end
  table.sort(ks)
  return ks
end
local F = T.nn.functional
-- a T.* name that is the functional itself (helpers2.lua) takes F's recipe
for _, k in ipairs(sorted_keys(T)) do
  add_entry("T." .. k, k, T[k], R[k] or (T[k] == F[k] and FR[k] or nil), false)
end
-- methods whose arguments differ from the function of the same name
local MR = { where = "x, m, y" }
MR.apply_ = "T.ones(3), function(v) return v end"
MR.map_ = "T.ones(3), T.ones(3), function(a, b) return a end"
MR.map2_ = "T.ones(3), T.ones(3), T.ones(3), function(a, b, c) return a end"
for _, k in ipairs(sorted_keys(C._methods)) do
  add_entry("t:" .. k, k, C._methods[k], MR[k] or R[k], true)
end
for _, k in ipairs(sorted_keys(F)) do add_entry("F." .. k, k, F[k], FR[k], false) end

-- names starting with _ are the layer's own internals, not entry points
local function add_all(prefix, tbl, recipes)
  for _, k in ipairs(sorted_keys(tbl)) do
    if not k:match("^_") then add_entry(prefix .. k, k, tbl[k], recipes[k], false) end
  end
end
local function callable_keys(t)
  local ks = {}
  for k, v in pairs(t) do
    local mt = type(v) == "table" and getmetatable(v)
    if type(k) == "string" and mt and mt.__call then ks[#ks + 1] = k end
  end
  table.sort(ks)
  return ks
end
for _, k in ipairs(callable_keys(T.nn)) do
  if k ~= "Module" then add_entry("nn." .. k, k, T.nn[k], NR[k], false) end
end
add_all("nn.", T.nn, NR)
add_all("nn.init.", T.nn.init, NR)
add_all("nn.utils.", T.nn.utils, NR)
add_all("nn.utils.rnn.", T.nn.utils.rnn, NR)
add_all("optim.", T.optim, NR)
add_all("lr_scheduler.", T.optim.lr_scheduler, NR)
add_all("data.", T.data, NR)
add_all("autograd.", T.autograd, NR)
-- T.autograd.functional and T.utils (lua/ember/autograd2.lua)
fresh.f1 = function() return T.tensor({ 1, 2 }, { dtype = T.float64 }) end
local FUNR = {
  jacobian = "function(u) return u * u end, f1", hessian = "function(u) return (u * u):sum() end, f1",
  vjp = "function(u) return u * u end, f1, f1", jvp = "function(u) return u * u end, f1, f1",
  vhp = "function(u) return (u * u):sum() end, f1, f1", hvp = "function(u) return (u * u):sum() end, f1, f1",
}
add_all("autograd.functional.", T.autograd.functional, FUNR)
-- T.cuda (docs/cuda.md): without a device only the questions run; the rest
-- raise "CUDA is not available" before options matter (cuda_spec checks
-- that and their options) and are skipped below
local CUDA_R = { is_available = "", is_built = "", device_count = "", current_device = "",
  synchronize = "", memory_allocated = "", max_memory_allocated = "", memory_reserved = "",
  max_memory_reserved = "", memory_stats = "", reset_peak_memory_stats = "", empty_cache = "",
  manual_seed = "1", manual_seed_all = "1", current_stream = "", default_stream = "",
  set_stream = "T.cuda.current_stream()" }
add_all("cuda.", T.cuda, CUDA_R)
-- T.linalg (issue 19): fd is a float64 (2, 2) positive-definite matrix
fresh.fd = function() return T.tensor({ { 2, 1 }, { 1, 3 } }, { dtype = T.float64 }) end
fresh.fb = function() return T.tensor({ { 1 }, { 2 } }, { dtype = T.float64 }) end
local LR = {
  solve = "fd, fb", solve_ex = "fd, fb", inv = "fd", inv_ex = "fd", det = "fd", slogdet = "fd",
  cholesky = "fd", cholesky_ex = "fd", lu = "fd", lu_factor = "fd", lu_factor_ex = "fd",
  lu_solve = "(function() local lu, p = T.linalg.lu_factor(fd); return lu, p, fb end)()",
  solve_triangular = "fd, fb, { upper = true }", qr = "fd", svd = "fd", svdvals = "fd",
  eigh = "fd", eigvalsh = "fd", lstsq = "fd, fb", pinv = "fd", matrix_rank = "fd",
  matrix_power = "fd, 2", matrix_exp = "fd", norm = "fd", vector_norm = "fd", matrix_norm = "fd",
  cond = "fd", cross = "T.ones(3, { dtype = T.float64 }), T.ones(3, { dtype = T.float64 })",
  multi_dot = "{ fd, fd }", householder_product = "fd, T.ones(1, { dtype = T.float64 })", geqrf = "fd",
  diagonal = "fd", matmul = "fd, fd", vecdot = "fd, fd",
}
LR.eig = "fd"
LR.eigvals = "fd"
LR.vander = "T.ones(3, { dtype = T.float64 })"
LR.ldl_factor, LR.ldl_factor_ex = "fd", "fd"
LR.ldl_solve = "(function() local LD, p = T.linalg.ldl_factor(fd); return LD, p, fb end)()"
LR.tensorinv = "fd, 1"
LR.tensorsolve = "fd, T.ones(2, { dtype = T.float64 })"
add_all("linalg.", T.linalg, LR)
-- T.fft (issue 19)
local FFTR = {}
for w in ("fft ifft rfft ihfft fftshift ifftshift"):gmatch("%S+") do FFTR[w] = "v" end
for w in ("irfft hfft"):gmatch("%S+") do FFTR[w] = "c" end
for w in ("fft2 ifft2 fftn ifftn rfft2 rfftn ihfft2 ihfftn"):gmatch("%S+") do FFTR[w] = "x" end
for w in ("hfft2 hfftn"):gmatch("%S+") do FFTR[w] = "T.fft.rfft2(x)" end
for w in ("irfft2 irfftn"):gmatch("%S+") do FFTR[w] = "T.fft.rfft2(x)" end
FFTR.fftfreq, FFTR.rfftfreq = "4", "4"
add_all("fft.", T.fft, FFTR)
-- T.distributions (docs/distributions.md): the distributions' constructors
-- and, under T.distributions.transforms, the transforms' (their options
-- table takes validate_args, or cache_size for a transform)
local DR = {
  Normal = "0., 1.", Uniform = "0., 1.", Bernoulli = "0.5", Categorical = "T.ones(3)", Exponential = "1.",
  Laplace = "0., 1.", Gamma = "1., 2.", Beta = "1., 2.", Dirichlet = "T.ones(3)", Poisson = "2.",
  LogNormal = "0., 1.", MultivariateNormal = "T.zeros(2), { covariance_matrix = T.eye(2) }",
  Independent = "T.distributions.Normal(T.zeros(2), T.ones(2)), 1",
  TransformedDistribution = "T.distributions.Normal(0., 1.), { T.distributions.transforms.ExpTransform() }",
  Cauchy = "0., 1.", HalfNormal = "1.", HalfCauchy = "1.", Gumbel = "0., 1.", Weibull = "1., 2.", Pareto = "1., 2.",
  LogisticNormal = "T.zeros(2), T.ones(2)", Kumaraswamy = "1., 2.",
  Chi2 = "2.", StudentT = "3., 0., 1.", Geometric = "0.5", Binomial = "4, 0.5", Multinomial = "4, T.ones(3)",
  OneHotCategorical = "T.ones(3)", NegativeBinomial = "3., 0.5", FisherSnedecor = "2., 3.",
  MixtureSameFamily = "T.distributions.Categorical(T.ones(2)), T.distributions.Normal(T.zeros(2), T.ones(2))",
  LogitRelaxedBernoulli = "1., 0.5", RelaxedBernoulli = "1., 0.5", ExpRelaxedCategorical = "1., T.ones(3)",
  RelaxedOneHotCategorical = "1., T.ones(3)", ContinuousBernoulli = "0.3", VonMises = "0., 1.",
  LowRankMultivariateNormal = "T.zeros(2), T.ones(2, 1), T.ones(2)",
}
for _, k in ipairs(callable_keys(T.distributions)) do
  if not T.distributions.transforms[k] then add_entry("distributions." .. k, k, T.distributions[k], DR[k], false) end
end
local TRR = {
  ExpTransform = "", SigmoidTransform = "", SoftplusTransform = "", TanhTransform = "", AbsTransform = "",
  SoftmaxTransform = "", StickBreakingTransform = "", LowerCholeskyTransform = "", PowerTransform = "2.",
  AffineTransform = "0., 1.", ComposeTransform = "{ T.distributions.transforms.ExpTransform() }",
  IndependentTransform = "T.distributions.transforms.ExpTransform(), 1",
  ReshapeTransform = "{ 2, 3 }, { 6 }", CatTransform = "{ T.distributions.transforms.ExpTransform() }, 1, { 1 }",
  StackTransform = "{ T.distributions.transforms.ExpTransform() }, 1",
  CumulativeDistributionTransform = "T.distributions.Normal(0., 1.)",
}
for _, k in ipairs(callable_keys(T.distributions.transforms)) do
  if k ~= "identity_transform" then
    add_entry("transforms." .. k, k, T.distributions.transforms[k], TRR[k], false)
  end
end
-- class-level functions of the optimizer and scheduler objects, called by
-- the layer itself (Optimizer.create(cls, ...), a class's update, the
-- schedule lr_at), not methods a user calls
local internal = { create = true, update = true, lr_at = true }
local function methods_of(label, obj, recipes)
  local seen, ks = {}, {}
  local t = obj
  while t do
    for k, v in pairs(t) do
      if type(v) == "function" and type(k) == "string" and not seen[k] and not k:match("^_")
          and not internal[k] then
        seen[k] = true
        ks[#ks + 1] = k
      end
    end
    local mt = getmetatable(t)
    t = mt and type(mt.__index) == "table" and mt.__index or nil
  end
  table.sort(ks)
  for _, k in ipairs(ks) do add_entry(label .. ":" .. k, k, obj[k], recipes[k], true) end
end
-- the class protocol of nn.Module: what a subclass defines or overrides
-- (init, forward, extra_repr) and the class machinery (new, extend)
local class_protocol = { init = true, new = true, extend = true, forward = true, extra_repr = true }
-- a module's methods are those of nn.Module (its instances index them
-- through a function); each layer's forward is checked below
do
  local lin = fresh.lin()
  for _, k in ipairs(sorted_keys(T.nn.Module)) do
    if not k:match("^_") and not class_protocol[k] then
      add_entry("module:" .. k, k, lin[k], OR.module[k], true)
    end
  end
end
-- forward of every layer: the recipe makes the layer, then its input(s)
local FW = {
  UpsamplingBilinear2d = "T.nn.UpsamplingBilinear2d(nil, 2), img", UpsamplingNearest2d = "T.nn.UpsamplingNearest2d(nil, 2), img",
  ChannelShuffle = "T.nn.ChannelShuffle(2), T.ones(1, 4, 2)", MultiMarginLoss = "T.nn.MultiMarginLoss(), logits, target",
  MultiLabelMarginLoss = "T.nn.MultiLabelMarginLoss(), logits, T.tensor { { 2, 0, 1 }, { 3, 1, 0 } }",
  TripletMarginWithDistanceLoss = "T.nn.TripletMarginWithDistanceLoss(), x, y, p",
  NLLLoss2d = "T.nn.NLLLoss2d(), logits:log_softmax(2), target", CrossMapLRN2d = "T.nn.CrossMapLRN2d(3), img",
  InstanceNorm3d = "T.nn.InstanceNorm3d(1), T.ones(1, 1, 2, 2, 2)",
  ReflectionPad3d = "T.nn.ReflectionPad3d(1), T.ones(1, 1, 2, 2, 2)",
  FractionalMaxPool2d = "T.nn.FractionalMaxPool2d(2, { output_size = 2 }), img",
  AdaptiveLogSoftmaxWithLoss = "T.nn.AdaptiveLogSoftmaxWithLoss(4, 5, { 2 }), T.ones(2, 4), T.tensor { 1, 5 }",
  FractionalMaxPool3d = "T.nn.FractionalMaxPool3d(2, { output_size = 2 }), T.ones(1, 1, 4, 4, 4)",
  LazyLinear = "T.nn.LazyLinear(2), x", LazyConv1d = "T.nn.LazyConv1d(2, 3), seq", LazyConv2d = "T.nn.LazyConv2d(2, 3), img",
  LazyConvTranspose1d = "T.nn.LazyConvTranspose1d(2, 3), seq", LazyConvTranspose2d = "T.nn.LazyConvTranspose2d(2, 3), img",
  LazyBatchNorm1d = "T.nn.LazyBatchNorm1d(), x", LazyBatchNorm2d = "T.nn.LazyBatchNorm2d(), img",
  LazyInstanceNorm1d = "T.nn.LazyInstanceNorm1d(), seq", LazyInstanceNorm2d = "T.nn.LazyInstanceNorm2d(), img",
  Hardshrink = "T.nn.Hardshrink(), x", Softshrink = "T.nn.Softshrink(), x",
  Threshold = "T.nn.Threshold(0.5, 0), x", RReLU = "T.nn.RReLU(), x", Softmin = "T.nn.Softmin(2), x",
  Softmax2d = "T.nn.Softmax2d(), img", PixelShuffle = "T.nn.PixelShuffle(2), T.ones(1, 4, 2, 2)",
  PixelUnshuffle = "T.nn.PixelUnshuffle(2), img", Unfold = "T.nn.Unfold(2), img",
  Fold = "T.nn.Fold({ 4, 4 }, 2), T.ones(1, 4, 9)", ZeroPad2d = "T.nn.ZeroPad2d(1), img",
  ConstantPad1d = "T.nn.ConstantPad1d(1, 0), seq", ConstantPad2d = "T.nn.ConstantPad2d(1, 0), img",
  ConstantPad3d = "T.nn.ConstantPad3d(1, 0), img", ReplicationPad1d = "T.nn.ReplicationPad1d(1), seq",
  ReplicationPad2d = "T.nn.ReplicationPad2d(1), img", ReplicationPad3d = "T.nn.ReplicationPad3d(1), T.ones(1, 1, 2, 2, 2)",
  ReflectionPad1d = "T.nn.ReflectionPad1d(1), seq", ReflectionPad2d = "T.nn.ReflectionPad2d(1), img",
  CosineSimilarity = "T.nn.CosineSimilarity(), x, y", PairwiseDistance = "T.nn.PairwiseDistance(), x, y",
  Bilinear = "T.nn.Bilinear(3, 3, 2), x, y", SoftMarginLoss = "T.nn.SoftMarginLoss(), x, y",
  HingeEmbeddingLoss = "T.nn.HingeEmbeddingLoss(), x, y", MultiLabelSoftMarginLoss = "T.nn.MultiLabelSoftMarginLoss(), x, p",
  LocalResponseNorm = "T.nn.LocalResponseNorm(2), img",
  Linear = "T.nn.Linear(3, 2), x", Conv1d = "T.nn.Conv1d(1, 2, 3), seq", Conv2d = "T.nn.Conv2d(1, 2, 3), img",
  BatchNorm1d = "T.nn.BatchNorm1d(3), x", BatchNorm2d = "T.nn.BatchNorm2d(1), img",
  LayerNorm = "T.nn.LayerNorm(3), x", Dropout = "T.nn.Dropout(0.5), x",
  Embedding = "T.nn.Embedding(4, 3), T.tensor { 1, 2 }", MaxPool2d = "T.nn.MaxPool2d(2), img",
  AvgPool2d = "T.nn.AvgPool2d(2), img", LeakyReLU = "T.nn.LeakyReLU(), x", ReLU = "T.nn.ReLU(), x",
  GELU = "T.nn.GELU(), x", Tanh = "T.nn.Tanh(), x", Sigmoid = "T.nn.Sigmoid(), x", SiLU = "T.nn.SiLU(), x",
  Softmax = "T.nn.Softmax(1), x", LogSoftmax = "T.nn.LogSoftmax(1), x", Flatten = "T.nn.Flatten(), img",
  Unflatten = "T.nn.Unflatten(2, { 1, 3 }), x", Identity = "T.nn.Identity(), x",
  Sequential = "T.nn.Sequential(T.nn.ReLU()), x",
  CrossEntropyLoss = "T.nn.CrossEntropyLoss(), logits, target", NLLLoss = "T.nn.NLLLoss(), logits, target",
  MSELoss = "T.nn.MSELoss(), x, y", L1Loss = "T.nn.L1Loss(), x, y", BCELoss = "T.nn.BCELoss(), p, p",
  BCEWithLogitsLoss = "T.nn.BCEWithLogitsLoss(), x, p",
  AdaptiveAvgPool1d = "T.nn.AdaptiveAvgPool1d(2), seq", AdaptiveAvgPool2d = "T.nn.AdaptiveAvgPool2d(2), img",
  AdaptiveMaxPool1d = "T.nn.AdaptiveMaxPool1d(2), seq", AdaptiveMaxPool2d = "T.nn.AdaptiveMaxPool2d(2), img",
  AvgPool1d = "T.nn.AvgPool1d(2), seq", MaxPool1d = "T.nn.MaxPool1d(2), seq",
  BatchNorm3d = "T.nn.BatchNorm3d(1), T.ones(2, 1, 2, 2, 2)", CELU = "T.nn.CELU(), x", ELU = "T.nn.ELU(), x",
  SELU = "T.nn.SELU(), x", ReLU6 = "T.nn.ReLU6(), x", Hardtanh = "T.nn.Hardtanh(), x",
  Hardswish = "T.nn.Hardswish(), x", Hardsigmoid = "T.nn.Hardsigmoid(), x", Mish = "T.nn.Mish(), x",
  Softplus = "T.nn.Softplus(), x", Softsign = "T.nn.Softsign(), x", LogSigmoid = "T.nn.LogSigmoid(), x",
  Tanhshrink = "T.nn.Tanhshrink(), x", GLU = "T.nn.GLU(), T.ones(2, 4)", PReLU = "T.nn.PReLU(), x",
  CTCLoss = "T.nn.CTCLoss(), T.randn(5, 1, 4):log_softmax(3), T.tensor { { 2, 3 } }, T.tensor { 5 }, T.tensor { 2 }",
  ConvTranspose1d = "T.nn.ConvTranspose1d(1, 2, 3), seq", ConvTranspose2d = "T.nn.ConvTranspose2d(1, 2, 3), img",
  CosineEmbeddingLoss = "T.nn.CosineEmbeddingLoss(), x, y, T.tensor { 1, -1 }",
  EmbeddingBag = "T.nn.EmbeddingBag(4, 3), T.tensor { 1, 2, 3 }, T.tensor { 1, 3 }",
  GaussianNLLLoss = "T.nn.GaussianNLLLoss(), x, y, p", GroupNorm = "T.nn.GroupNorm(1, 1), img",
  HuberLoss = "T.nn.HuberLoss(), x, y", InstanceNorm1d = "T.nn.InstanceNorm1d(1), seq",
  InstanceNorm2d = "T.nn.InstanceNorm2d(1), img", KLDivLoss = "T.nn.KLDivLoss(), x, p",
  MarginRankingLoss = "T.nn.MarginRankingLoss(), v, w, T.tensor { 1, -1, 1 }",
  PoissonNLLLoss = "T.nn.PoissonNLLLoss(), x, y", RMSNorm = "T.nn.RMSNorm(3), x",
  SmoothL1Loss = "T.nn.SmoothL1Loss(), x, y", TripletMarginLoss = "T.nn.TripletMarginLoss(), x, y, p",
  Upsample = "T.nn.Upsample { scale_factor = 2 }, img",
  MaxPool3d = "T.nn.MaxPool3d(2), T.ones(1, 1, 2, 2, 2)", AvgPool3d = "T.nn.AvgPool3d(2), T.ones(1, 1, 2, 2, 2)",
  AdaptiveAvgPool3d = "T.nn.AdaptiveAvgPool3d(1), T.ones(1, 1, 2, 2, 2)",
  AdaptiveMaxPool3d = "T.nn.AdaptiveMaxPool3d(1), T.ones(1, 1, 2, 2, 2)",
  MaxUnpool3d = "T.nn.MaxUnpool3d(2), T.ones(1, 1, 1, 1, 1), T.tensor { 8 }:view(1, 1, 1, 1, 1)",
  Conv3d = "T.nn.Conv3d(1, 2, 2), T.ones(1, 1, 3, 3, 3)", ConvTranspose3d = "T.nn.ConvTranspose3d(1, 2, 2), T.ones(1, 1, 2, 2, 2)",
  LPPool1d = "T.nn.LPPool1d(2, 2), seq", LPPool2d = "T.nn.LPPool2d(2, 2), img",
  MaxUnpool1d = "T.nn.MaxUnpool1d(2), T.ones(1, 1, 2), T.tensor { { { 1, 4 } } }",
  MaxUnpool2d = "T.nn.MaxUnpool2d(2), T.ones(1, 1, 2, 2), T.tensor { { { { 1, 3 }, { 9, 11 } } } }",
  Dropout1d = "T.nn.Dropout1d(), x", Dropout2d = "T.nn.Dropout2d(), img", Dropout3d = "T.nn.Dropout3d(), img",
  AlphaDropout = "T.nn.AlphaDropout(), x", FeatureAlphaDropout = "T.nn.FeatureAlphaDropout(), img",
  MultiheadAttention = "T.nn.MultiheadAttention(4, 2), T.ones(3, 2, 4), T.ones(3, 2, 4), T.ones(3, 2, 4)",
  TransformerEncoderLayer = "T.nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 }), T.ones(3, 2, 4)",
  TransformerDecoderLayer = "T.nn.TransformerDecoderLayer(4, 2, { dim_feedforward = 8 }), T.ones(3, 2, 4), T.ones(3, 2, 4)",
  TransformerEncoder = "T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 }), 1), T.ones(3, 2, 4)",
  TransformerDecoder = "T.nn.TransformerDecoder(T.nn.TransformerDecoderLayer(4, 2, { dim_feedforward = 8 }), 1), T.ones(3, 2, 4), T.ones(3, 2, 4)",
  Transformer = "T.nn.Transformer(4, 2, { num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 8 }), T.ones(3, 2, 4), T.ones(3, 2, 4)",
  RNN = "T.nn.RNN(3, 4), T.ones(2, 1, 3)", LSTM = "T.nn.LSTM(3, 4), T.ones(2, 1, 3)",
  GRU = "T.nn.GRU(3, 4), T.ones(2, 1, 3)", RNNCell = "T.nn.RNNCell(3, 4), T.ones(2, 3)",
  LSTMCell = "T.nn.LSTMCell(3, 4), T.ones(2, 3)", GRUCell = "T.nn.GRUCell(3, 4), T.ones(2, 3)",
  DistributedDataParallel = "T.nn.parallel.DistributedDataParallel(T.nn.Linear(3, 2)), x",
}
-- containers without a forward of their own
local no_forward = { ModuleList = "a ModuleList has no forward (it raises)", ModuleDict = true,
  ParameterList = true, ParameterDict = true }
for _, k in ipairs(callable_keys(T.nn)) do
  if k ~= "Module" and not no_forward[k] then
    add_entry(k .. ":forward", "forward", T.nn[k].forward, FW[k], true)
  end
end
methods_of("optimizer", fresh.sgd(), OR.optimizer)
methods_of("scheduler", fresh.sched(), OR.scheduler)
methods_of("loader", fresh.loader(), OR.loader)
methods_of("dataset", fresh.ds(), OR.dataset)

-- entries that cannot run their plain call here, with the reason
local skip = {
  ["t:cuda"] = "no cuda device on a build without CUDA: the call is refused (tested in the device specs)",
  ["T.from_ffi"] = "FFI-only entry point: its options are checked in interop_spec",
  ["T.load_safetensors_buffer"] = "takes bytes made by save_safetensors: checked in safetensors_spec",
  ["nn.DistributedDataParallel"] = "needs init_process_group: its options are checked under mpirun (tests/dist)",
  ["DistributedDataParallel:forward"] = "needs init_process_group: checked under mpirun (tests/dist)",
}
-- Known gaps, not yet mended (issue 21 item 5): entry points that do not
-- yet refuse an extra argument or check every option. Each shows as pending
-- until it is fixed and taken off this list.
local gaps = {
}
for k in pairs(gaps) do skip[k] = "known gap: takes an extra table or option without refusing it yet" end
skip["cuda.stream"] = "passes the arguments after fn on to fn (checked in cuda_spec)"
if not T.cuda.is_available() then
  for _, k in ipairs { "current_device", "synchronize", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats", "empty_cache",
    "manual_seed", "manual_seed_all", "current_stream", "default_stream", "set_stream" } do
    skip["cuda." .. k] = "no cuda device: refused before options matter (tested in cuda_spec)"
  end
  skip["t:pin_memory"] = "no cuda device: refused (tested in cuda_spec)"
  skip["t:record_stream"] = "no cuda device: refused (tested in cuda_spec)"
end
if not pcall(require, "ffi") then
  skip["t:data"] = "t:data() needs LuaJIT's FFI"
end

-- entry points that pass their arguments after fn on to fn: an extra table
-- is fn's argument, not an option (checked below: fn receives it)
local forwards = { ["T.no_grad"] = true, ["T.enable_grad"] = true, ["T.set_grad_enabled"] = true,
  ["T.autocast"] = true, -- T.autocast(device_type, [opts], fn, ...): its options are checked in amp_spec
  ["autograd.no_grad"] = true, ["autograd.enable_grad"] = true, ["autograd.set_grad_enabled"] = true,
  ["T.inference_mode"] = true, ["autograd.inference_mode"] = true, ["autograd.detect_anomaly"] = true,
}

local function call(e, extra)
  local args = { compile(e.recipe, e.label)() }
  local n = select("#", compile(e.recipe, e.label)())
  if extra ~= nil then n = n + 1; args[n] = extra end
  return e.fn(unpack(args, 1, n))
end

-- aliases whose errors name the function they stand for
local alias = {
  concat = "cat", concatenate = "cat", row_stack = "vstack", swapaxes = "transpose",
  swapdims = "transpose", moveaxis = "movedim", repeat_tensor = "repeat",
  ndimension = "dim", nelement = "numel", upsample = "interpolate",
}
local function names_op(err, e)
  return err:find(e.op, 1, true) ~= nil or (alias[e.op] and err:find(alias[e.op], 1, true))
end

describe("every entry point", function()
  for _, e in ipairs(entries) do
    if skip[e.label] then
      pending(e.label .. ": " .. skip[e.label])
    elseif forwards[e.label] then
      it(e.label .. " passes the arguments after fn on to fn", function()
        local seen
        local fn = function(...) seen = { ... }; return 7 end
        local extra = { zz_unknown = 1 }
        local r
        if e.label:match("set_grad_enabled$") then r = e.fn(true, fn, extra)
        elseif e.label == "T.autocast" then r = e.fn("cpu", {}, fn, extra)
        else r = e.fn(fn, extra) end
        assert.equal(7, r)
        assert.is_true(rawequal(seen[1], extra))
      end)
    else
      it(e.label .. " has a recipe and runs it", function()
        assert(e.recipe, "no recipe for " .. e.label .. " in options_live_spec.lua: add one")
        local ok, err = pcall(call, e, nil)
        assert(ok, e.label .. " (" .. e.recipe .. "): " .. tostring(err))
      end)

      it(e.label .. " refuses an unknown option", function()
        if not e.recipe then return end
        local ok, err = pcall(call, e, { zz_unknown = 1 })
        err = tostring(err)
        assert(not ok, e.label .. " accepted an unknown option")
        assert(names_op(err, e) and (err:find("unknown option 'zz_unknown'", 1, true)
            or err:find("takes no options", 1, true)),
          e.label .. " refused an unknown option with an unclear message: " .. err)
      end)

      it(e.label .. " honours or refuses out", function()
        if not e.recipe then return end
        local want = call(e, nil)
        local out = T.is_tensor(want) and T.empty(0, { dtype = want.dtype }) or T.empty(0)
        local ok, got = pcall(call, e, { out = out })
        if ok then
          assert(T.is_tensor(want) and rawequal(got, out),
            e.label .. " took out= but did not return it")
          assert(T.equal(out, want) or (want.dtype.is_floating_point and
            T.allclose(out, want, 0, 0, true)), e.label .. " wrote out wrongly")
        else
          got = tostring(got)
          assert(names_op(got, e) and got:find("out", 1, true),
            e.label .. " refused out= with an unclear message: " .. got)
        end
      end)

      -- an out that is a view made under no_grad of a tensor that requires
      -- grad is refused in grad mode on every path (copied into or written
      -- directly), as copy_ refuses it, and is left as it was
      it(e.label .. " refuses a no_grad view as out in grad mode", function()
        if not e.recipe then return end
        local want = call(e, nil)
        if not T.is_tensor(want) or not (want.dtype.is_floating_point or want.dtype.is_complex)
            or want.requires_grad or not pcall(call, e, { out = T.empty(0, { dtype = want.dtype }) }) then
          return
        end
        local base = T.zeros(want.shape, { dtype = want.dtype }):requires_grad_()
        local out = T.no_grad(function() return base:view_as(base) end)
        local ok, err = pcall(call, e, { out = out })
        assert(not ok, e.label .. " wrote into a view made under no_grad in grad mode")
        err = tostring(err)
        assert(names_op(err, e) and err:find("no_grad mode", 1, true),
          e.label .. " refused a no_grad view as out with an unclear message: " .. err)
        -- a tensor that requires grad as out: out= is not differentiable
        ok, err = pcall(call, e, { out = base })
        assert(not ok, e.label .. " wrote into an out that requires grad in grad mode")
        err = tostring(err)
        assert(names_op(err, e) and err:find("functions with out= arguments don't support", 1, true),
          e.label .. " refused an out that requires grad with an unclear message: " .. err)
        assert(T.equal(base:detach(), T.zeros(want.shape, { dtype = want.dtype })),
          e.label .. " wrote into out before refusing it")
        -- outside grad mode both are written (an optimizer's step writes so)
        T.no_grad(function()
          assert(rawequal(call(e, { out = out }), out), e.label .. " under no_grad")
          assert(rawequal(call(e, { out = base }), base), e.label .. " under no_grad")
        end)
      end)
    end
  end
end)
