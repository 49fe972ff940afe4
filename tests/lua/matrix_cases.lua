-- matrix_cases.lua: the generator behind bad_input_matrix_spec.lua. It
-- enumerates ember's public surface AT RUNTIME (every function in T and
-- every method in T.Tensor_methods), so an op added later is driven by the
-- matrix without editing this file, and builds for each one the calls to
-- make: the function alone, with one bad value, and a tensor followed by
-- one or two bad values; a method on each of several "selves" (contiguous,
-- integer, bool, empty, 0-d, non-contiguous, expanded, float16) with the
-- same arguments.
local M = {}

-- Functions the matrix does not call, each with its reason.
M.excluded = {
  load = "reads files (interop_spec/serialize_spec drive its bad inputs)",
  load_npy = "reads files (npy_spec and the npy fuzz target)",
  load_npz = "reads files (npy_spec and the npz fuzz target)",
  save = "writes files: a bad-path matrix would litter the working directory",
  save_npy = "writes files",
  save_npz = "writes files",
  save_safetensors = "writes files (safetensors_spec drives its bad inputs)",
  save_torch = "writes files",
  from_ffi = "takes a raw pointer: any number is trusted as an address by design (docs/interop.md)",
  from_dlpack = "takes a producer's pointer/capsule: a number is trusted as an address by design",
  data = "returns a raw FFI pointer; misuse of the pointer is outside ember's control",
  _tensor_str = "private helper of the printer",
  Tensor = "the class table's constructor alias; covered through T.tensor",
  seed = "reseeds from entropy; harmless but makes later random specs irreproducible",
}

-- Functions that change process-wide settings: the matrix calls them and
-- then restores the setting (see M.restore).
M.global_state = {
  set_default_dtype = true, set_printoptions = true, set_num_threads = true,
  use_deterministic_algorithms = true, manual_seed = true, set_rng_state = true,
}

-- When an error message legitimately names another op (the function is an
-- alias or is implemented by another), any of these names is accepted.
M.aliases = {
  absolute = { "abs" }, arccos = { "acos" }, arcsin = { "asin" }, arctan = { "atan" },
  arccosh = { "acosh" }, arcsinh = { "asinh" }, arctanh = { "atanh" },
  arctan2 = { "atan2" }, clip = { "clamp" }, concat = { "cat" }, concatenate = { "cat" },
  divide = { "div" }, true_divide = { "div" }, multiply = { "mul" }, subtract = { "sub" },
  negative = { "neg" }, fix = { "trunc" }, greater = { "gt" }, greater_equal = { "ge" },
  less = { "lt" }, less_equal = { "le" }, not_equal = { "ne" }, swapaxes = { "transpose" },
  swapdims = { "transpose" }, moveaxis = { "movedim" }, row_stack = { "vstack" },
  expand_as = { "expand" }, view_as = { "view" }, reshape_as = { "reshape" },
  broadcast_to = { "expand" }, ndimension = { "dim" }, nelement = { "numel" },
  clamp_min = { "clamp" }, clamp_max = { "clamp" },
  index_put_ = { "index" }, repeat_tensor = { "repeat" }, argwhere = { "nonzero" },
  std = { "var" }, std_mean = { "var" }, var_mean = { "var" }, aminmax = { "amin", "amax" },
  nanmedian = { "median" }, masked_fill = { "masked_fill_" }, index_fill = { "index_fill_" },
  index_copy = { "index_copy_" }, index_add = { "index_add_" }, scatter = { "scatter_" },
  scatter_add = { "scatter_add_", "scatter_" }, scatter_reduce = { "scatter_reduce_" },
  masked_scatter = { "masked_scatter_" }, put = { "put_" },
  rand_like = { "rand" }, randn_like = { "randn" }, randint_like = { "randint" },
  ones_like = { "ones", "full" }, zeros_like = { "zeros", "full" }, full_like = { "full" },
  empty_like = { "empty" }, logspace = { "linspace" },
  long = { "to" }, int = { "to" }, short = { "to" }, char = { "to" }, byte = { "to" },
  bool = { "to" }, half = { "to" }, float = { "to" }, double = { "to" }, bfloat16 = { "to" },
  cfloat = { "to" }, cdouble = { "to" }, sgn = { "sign" },
  cpu = { "to" }, cuda = { "to", "cuda" }, contiguous = { "contiguous" },
  hstack = { "cat" }, vstack = { "cat" }, dstack = { "cat" },
  floor_divide = { "div" }, remainder = { "fmod", "remainder" },
  uniform_ = { "uniform" }, normal_ = { "normal" }, random_ = { "random" },
  exponential_ = { "exponential" }, bernoulli_ = { "bernoulli" },
  -- implemented by another op whose message it shows
  tile = { "repeat" }, argsort = { "sort" }, allclose = { "isclose" },
  matmul = { "mm", "mv", "bmm", "dot" }, linear = { "mm", "mv", "matmul" },
  zero_ = { "fill_" }, fill_ = { "copy_" }, randint_like = { "random_", "randint" },
  eye = { "zeros" }, adjoint = { "mH", "mT" },
}

-- Failures found by the matrix in files this branch does not own, left for
-- their owners (the spec prints them; they do not fail it). Remove an
-- entry once fixed: the matrix then checks that function like any other.
M.known = {
  use_deterministic_algorithms = "bindings/l_core.c checks its argument with luaL_checktype: "
    .. "\"bad argument #1 to '?' (boolean expected, got nil)\" does not name the op",
  expand_as = "lua/ember/view.lua reads other.shape unchecked: \"attempt to index local 'other'\"",
  reshape_as = "lua/ember/view.lua reads other.shape unchecked: \"attempt to index local 'other'\"",
}

-- An allocation that fails (out of memory, a byte count that overflows)
-- is reported by the allocating primitive (empty/zeros/full: "empty: out
-- of memory: tried to allocate ..."), whatever op asked for the memory.
M.allocation_errors = { "out of memory", "is too large", "has too many elements" }
M.allocators = { "empty", "zeros", "full" }

-- In-place variants (x_) may report the out-of-place name x.
function M.names_for(name)
  local short = name:match("^[%w_]+%.([%w_]+)$")
  if short then
    local names = { name, short }
    for _, a in ipairs(M.aliases[name] or {}) do names[#names + 1] = a end
    if short:sub(-1) == "_" then names[#names + 1] = short:sub(1, -2) end
    return names
  end
  local names = { name }
  if name:sub(-1) == "_" then names[#names + 1] = name:sub(1, -2) end
  for _, a in ipairs(M.aliases[name] or {}) do names[#names + 1] = a end
  local base = name:sub(-1) == "_" and name:sub(1, -2) or nil
  for _, a in ipairs(base and M.aliases[base] or {}) do names[#names + 1] = a end
  return names
end

-- 1e15 elements: an allocation that fails ("out of memory") and runs the
-- collector hook's collect-and-retry path on every such call.

-- The bad (and borderline) argument values, each with a label.
function M.values(T)
  local nan = 0 / 0
  return {
    { "nil", nil }, { "true", true }, { "string", "abc" }, { "empty table", {} },
    { "table of strings", { "a", "b" } }, { "function", function() end }, -- silent (apply_ calls it per element)
    { "NaN", nan }, { "+Inf", math.huge }, { "-Inf", -math.huge },
    { "0", 0 }, { "-1", -1 }, { "-7", -7 }, { "1.5", 1.5 }, { "9", 9 },
    { "2^62", 2 ^ 62 }, { "1e15", 1e15 }, { "-2^62", -(2 ^ 62) },
    { "{2, -3}", { 2, -3 } }, { "{1e15, 1e15}", { 1e15, 1e15 } },
    { "{NaN}", { nan } },
    { "newaxis", T.newaxis }, { "dtype int64", T.int64 }, { "dtype bool", T.bool },
    { "empty tensor", T.zeros(0) }, { "0-d tensor", T.tensor(2.5) },
    { "int64 tensor", T.tensor({ 1, 2, 3 }, { dtype = T.int64 }) },
    { "bool tensor", T.tensor({ true, false, true }) },
    { "float16 tensor", T.ones(2, 3, { dtype = T.float16 }) },
    { "non-contiguous", T.arange(12):reshape(3, 4):t() },
    { "expanded", T.arange(3):reshape(1, 3):expand(4, 3) },
    { "NaN/Inf tensor", T.tensor({ nan, math.huge, -math.huge }) },
    { "Size", T.Size and T.Size { 2, 3 } or { 2, 3 } },
  }
end

-- The namespaces whose functions the matrix drives as well, each with the
-- prefix its calls are reported under ("F.conv1d", "linalg.inv", ...). A
-- namespace function is driven like a T function (the same argument lists);
-- its error must name it by its own name (with or without the prefix).
-- distributions: the constructors (callable class tables), with bad
-- parameters.
function M.namespaces(T)
  return {
    { "F", T.nn.functional }, { "linalg", T.linalg }, { "fft", T.fft },
    { "special", T.special }, { "distributions", T.distributions },
  }
end

local function callable(v)
  if type(v) == "function" then return true end
  local mt = type(v) == "table" and getmetatable(v)
  return mt and mt.__call ~= nil or false
end

-- Qualified names excluded from the namespace functions, each with its reason.
M.excluded_qualified = {
  ["distributions.register_kl"] = "registers a KL function for a pair of classes: "
    .. "a bad-value matrix would overwrite the registry the distributions specs use",
}

-- The namespace functions, sorted: a list of { "prefix.name", f }. Private
-- names (a leading _) are left out, and in distributions only the
-- constructors (capitalised) and kl_divergence are driven.
function M.namespace_functions(T)
  local out = {}
  for _, ns in ipairs(M.namespaces(T)) do
    local prefix, tbl = ns[1], ns[2]
    for k, v in pairs(tbl) do
      local q = prefix .. "." .. tostring(k)
      if type(k) == "string" and k:sub(1, 1) ~= "_" and callable(v) and not M.excluded_qualified[q]
        and (prefix ~= "distributions" or type(v) == "function" or k:match("^%u")) then
        out[#out + 1] = { q, v }
      end
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end

-- The argument lists for the namespace functions: the common ones, and
-- batched inputs of the shapes the nn functions expect (N, C, L), (N, C,
-- H, W), (N, C, D, H, W) and an int64 index tensor (one_hot, embedding,
-- targets), each followed by each value, so that a kernel, an output size
-- or a class count that is huge, negative or of the wrong type reaches the
-- function's own checks rather than stopping at the input's rank.
function M.namespace_arglists(T, values)
  local lists = M.arglists(T, values)
  local firsts = {
    { "3-d tensor", T.arange(8, { dtype = T.float32 }):reshape(1, 2, 4) },
    { "4-d tensor", T.arange(16, { dtype = T.float32 }):reshape(1, 1, 4, 4) },
    { "5-d tensor", T.arange(8, { dtype = T.float32 }):reshape(1, 1, 2, 2, 2) },
    { "index tensor", T.tensor({ 1, 2, 1 }, { dtype = T.int64 }) },
  }
  for _, first in ipairs(firsts) do
    for _, v in ipairs(values) do lists[#lists + 1] = { first, v } end
  end
  return lists
end

-- The tensors a method is called on (fresh for each method, since some
-- write into self).
function M.selves(T)
  local nan = 0 / 0
  return {
    { "float32 2x3", T.arange(6, { dtype = T.float32 }):reshape(2, 3) },
    { "int64 2x3", T.arange(6):reshape(2, 3) },
    { "bool 3", T.tensor({ true, false, true }) },
    { "empty 0x3", T.zeros(0, 3) },
    { "0-d", T.tensor(1.5) },
    { "non-contiguous", T.arange(12, { dtype = T.float64 }):reshape(3, 4):t() },
    { "expanded", T.tensor({ { 1.0, 2.0, 3.0 } }):expand(4, 3) },
    { "float16 NaN/Inf", T.tensor({ nan, math.huge, -math.huge, 1 }, { dtype = T.float16 }) },
  }
end

-- The public functions and methods, sorted.
function M.functions(T)
  local f = {}
  for k, v in pairs(T) do
    if type(k) == "string" and type(v) == "function" and not M.excluded[k] then f[#f + 1] = k end
  end
  table.sort(f)
  return f
end

function M.methods(T)
  local f = {}
  for k, v in pairs(T.Tensor_methods) do
    if type(k) == "string" and type(v) == "function" and not M.excluded[k] then f[#f + 1] = k end
  end
  table.sort(f)
  return f
end

-- Argument lists for a call: {} (no args), each value alone, and a good
-- tensor / a good dim followed by each value, and pairs of a few values.
function M.arglists(T, values)
  local good = T.arange(6, { dtype = T.float32 }):reshape(2, 3)
  local lists = { {} }
  for _, v in ipairs(values) do lists[#lists + 1] = { v } end
  for _, v in ipairs(values) do lists[#lists + 1] = { { "good tensor", good }, v } end
  for _, v in ipairs(values) do lists[#lists + 1] = { { "1", 1 }, v } end
  local few = { values[1], values[7], values[11], values[15], values[24], values[28] }
  for _, a in ipairs(few) do
    for _, b in ipairs(few) do lists[#lists + 1] = { a, b } end
  end
  return lists
end

return M
