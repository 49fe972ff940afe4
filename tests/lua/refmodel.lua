-- refmodel.lua: an independent pure-Lua model of ember's storage + strides,
-- written for the property tests (tests/lua/property_spec.lua). It shares
-- no code with ember: a storage is a flat Lua table (0-based element
-- offsets), a view a record {st, off, sizes, strides}. Element (i1..in)
-- (1-based) of a view lives at st.data[off + sum((ik - 1) * stride_k)].
--
-- View ops return a new record over the same storage; copies (clone, flip,
-- reshape when no view exists, contiguous when not contiguous) make a new
-- storage. Writes (fill, copy, index assignment) change st.data, so every
-- view of that storage sees them, exactly as ember's views must.
-- Positions and dims are 1-based, negative from the end, as in ember.
-- A function returns nil, "reason" where ember must raise an error.
local M = {}

local nstorages = 0
local function new_storage(n)
  nstorages = nstorages + 1
  return { data = {}, n = n, id = nstorages }
end

local function numel(sizes)
  local n = 1
  for i = 1, #sizes do n = n * sizes[i] end
  return n
end
M.numel = numel

local function copy(t)
  local r = {}
  for i = 1, #t do r[i] = t[i] end
  return r
end

local function mk(st, off, sizes, strides)
  return { st = st, off = off, sizes = sizes, strides = strides }
end

-- A fresh contiguous view holding values[1..n] (row-major).
function M.tensor(sizes, values)
  local n = numel(sizes)
  local st = new_storage(n)
  for i = 0, n - 1 do st.data[i] = values[i + 1] end
  local strides, acc = {}, 1
  for d = #sizes, 1, -1 do
    strides[d] = acc
    acc = acc * math.max(sizes[d], 1)
  end
  return mk(st, 0, copy(sizes), strides)
end

-- Storage offsets of every element, in row-major order.
function M.offsets(v)
  local out, nd = {}, #v.sizes
  if numel(v.sizes) == 0 then return out end
  local idx = {}
  for d = 1, nd do idx[d] = 0 end
  while true do
    local o = v.off
    for d = 1, nd do o = o + idx[d] * v.strides[d] end
    out[#out + 1] = o
    local d = nd
    while d >= 1 do
      idx[d] = idx[d] + 1
      if idx[d] < v.sizes[d] then break end
      idx[d] = 0
      d = d - 1
    end
    if d < 1 then break end
  end
  return out
end

function M.values(v)
  local out = {}
  for i, o in ipairs(M.offsets(v)) do out[i] = v.st.data[o] end
  return out
end

local function wrap(dim, nd)
  local n = math.max(nd, 1)
  if dim < -n or dim > n or dim == 0 then return nil end
  return dim < 0 and dim + n + 1 or dim
end
M.wrap = wrap

function M.is_contiguous(v)
  local acc = 1
  for d = #v.sizes, 1, -1 do
    if v.sizes[d] ~= 1 and v.strides[d] ~= acc then
      if numel(v.sizes) == 0 then return true end
      return false
    end
    acc = acc * v.sizes[d]
  end
  return true
end

-- Some element is addressed twice (the write-refusal rule ember applies;
-- an empty tensor addresses nothing).
function M.has_internal_overlap(v)
  if numel(v.sizes) == 0 then return false end
  for d = 1, #v.sizes do
    if v.sizes[d] > 1 and v.strides[d] == 0 then return true end
  end
  return false
end

-- -- view ops --------------------------------------------------------------

function M.narrow(v, dim, start, len)
  local d = wrap(dim, #v.sizes)
  if not d or #v.sizes == 0 then return nil, "dim" end
  local size = v.sizes[d]
  if start < 0 then start = start + size + 1 end
  if start < 1 or len < 0 or start - 1 + len > size then return nil, "range" end
  local sizes = copy(v.sizes)
  sizes[d] = len
  return mk(v.st, v.off + (start - 1) * v.strides[d], sizes, copy(v.strides))
end

function M.select(v, dim, i)
  local d = wrap(dim, #v.sizes)
  if not d or #v.sizes == 0 then return nil, "dim" end
  local size = v.sizes[d]
  if i < 0 then i = i + size + 1 end
  if i < 1 or i > size then return nil, "index" end
  local sizes, strides = copy(v.sizes), copy(v.strides)
  local off = v.off + (i - 1) * v.strides[d]
  table.remove(sizes, d)
  table.remove(strides, d)
  return mk(v.st, off, sizes, strides)
end

function M.transpose(v, a, b)
  local nd = #v.sizes
  local da, db = wrap(a, nd), wrap(b, nd)
  if not da or not db then return nil, "dim" end
  if nd == 0 then return mk(v.st, v.off, {}, {}) end
  local sizes, strides = copy(v.sizes), copy(v.strides)
  sizes[da], sizes[db] = sizes[db], sizes[da]
  strides[da], strides[db] = strides[db], strides[da]
  return mk(v.st, v.off, sizes, strides)
end

function M.permute(v, perm)
  local nd = #v.sizes
  if #perm ~= nd then return nil, "perm" end
  local sizes, strides, seen = {}, {}, {}
  for i = 1, nd do
    local d = wrap(perm[i], nd)
    if not d or seen[d] then return nil, "perm" end
    seen[d] = true
    sizes[i], strides[i] = v.sizes[d], v.strides[d]
  end
  return mk(v.st, v.off, sizes, strides)
end

function M.unsqueeze(v, dim)
  local nd = #v.sizes
  if dim < 0 then dim = dim + nd + 2 end
  if dim < 1 or dim > nd + 1 then return nil, "dim" end
  local sizes, strides = copy(v.sizes), copy(v.strides)
  local st = dim <= nd and v.sizes[dim] * v.strides[dim] or 1
  table.insert(sizes, dim, 1)
  table.insert(strides, dim, st)
  return mk(v.st, v.off, sizes, strides)
end

function M.squeeze(v, dim)
  local sizes, strides = {}, {}
  local d = dim and wrap(dim, #v.sizes)
  if dim and not d then return nil, "dim" end
  for i = 1, #v.sizes do
    local drop = v.sizes[i] == 1 and (d == nil or d == i)
    if not drop then
      sizes[#sizes + 1], strides[#strides + 1] = v.sizes[i], v.strides[i]
    end
  end
  return mk(v.st, v.off, sizes, strides)
end

function M.expand(v, target)
  local nd, nt = #v.sizes, #target
  if nt < nd then return nil, "ndim" end
  local sizes, strides = {}, {}
  -- from the innermost dim out: a new leading dim of size 1 gets the stride
  -- of the dim inside it times that dim's size, 1 for the innermost
  -- (PyTorch's inferExpandGeometry; infer_dense_strides, hence clone, reads it)
  for i = nt, 1, -1 do
    local j = i - (nt - nd)
    local want = target[i]
    if j < 1 then
      if want < 0 then return nil, "-1 on a new dim" end
      local inner = i == nt and 1 or sizes[i + 1] * strides[i + 1]
      sizes[i], strides[i] = want, want == 1 and inner or 0
    else
      local have = v.sizes[j]
      if want == -1 then want = have end
      if want == have then
        sizes[i], strides[i] = have, v.strides[j]
      elseif have == 1 and want >= 0 then
        sizes[i], strides[i] = want, 0
      else
        return nil, "size"
      end
    end
  end
  return mk(v.st, v.off, sizes, strides)
end

-- The strides a view of v as `sizes` has, or nil (PyTorch's
-- stride-compatibility rule: each chunk of old dims that are contiguous
-- with each other maps onto a run of new dims of the same element count).
local function view_strides(v, sizes)
  local n = numel(v.sizes)
  if n == 0 and #sizes == #v.sizes then
    local same = true
    for i = 1, #sizes do same = same and sizes[i] == v.sizes[i] end
    if same then return copy(v.strides) end
  end
  if n == 0 or #v.sizes == 0 then
    -- empty: contiguous strides; 0-d: a single element
    local st, acc = {}, 1
    for d = #sizes, 1, -1 do st[d] = acc; acc = acc * math.max(sizes[d], 1) end
    return st
  end
  local new = {}
  local vi = #sizes -- new dims, from the last
  local chunk_base = v.strides[#v.sizes]
  local tensor_numel, view_numel = 1, 1
  for ti = #v.sizes, 1, -1 do
    tensor_numel = tensor_numel * v.sizes[ti]
    -- a chunk ends where the next old dim is not contiguous with this one
    if ti == 1 or (v.sizes[ti - 1] ~= 1 and v.strides[ti - 1] ~= tensor_numel * chunk_base) then
      while vi >= 1 and (view_numel < tensor_numel or sizes[vi] == 1) do
        new[vi] = view_numel * chunk_base
        view_numel = view_numel * sizes[vi]
        vi = vi - 1
      end
      if view_numel ~= tensor_numel then return nil end
      if ti > 1 then
        chunk_base = v.strides[ti - 1]
        tensor_numel, view_numel = 1, 1
      end
    end
  end
  if vi ~= 0 then return nil end
  return new
end

local function infer(v, sizes)
  local r, neg, known = copy(sizes), nil, 1
  for i = 1, #r do
    if r[i] == -1 then
      if neg then return nil end
      neg = i
    elseif r[i] < 0 then
      return nil
    else
      known = known * r[i]
    end
  end
  local n = numel(v.sizes)
  if neg then
    if known == 0 or n % known ~= 0 then return nil end
    r[neg] = math.floor(n / known)
  end
  if numel(r) ~= n then return nil end
  return r
end

function M.view(v, sizes)
  local s = infer(v, sizes)
  if not s then return nil, "shape" end
  local st = view_strides(v, s)
  if not st then return nil, "stride" end
  return mk(v.st, v.off, s, st)
end

-- Every element of a gap-free block exactly once, in some dim order
-- (PyTorch's is_non_overlapping_and_dense: dims of size < 2 do not count).
function M.is_non_overlapping_and_dense(v)
  local dims = {}
  for d = 1, #v.sizes do
    if v.sizes[d] < 2 then
      if v.sizes[d] == 0 then return true end
    else
      dims[#dims + 1] = d
    end
  end
  table.sort(dims, function(a, b) return v.strides[a] < v.strides[b] end)
  local want = 1
  for _, d in ipairs(dims) do
    if v.strides[d] ~= want then return false end
    want = want * v.sizes[d]
  end
  return true
end

-- PyTorch's infer_dense_strides (TensorUtils): dims by stride, innermost
-- first, a stable insertion sort where a 0 stride is ambiguous (the dim
-- keeps its place) and equal strides put the smaller size inside.
local function infer_dense_strides(sizes, strides)
  local nd = #sizes
  local perm = {}
  for i = 1, nd do perm[i] = nd - i + 1 end
  local function cmp(d0, d1)
    local s0, s1 = strides[d0], strides[d1]
    if s0 == 0 or s1 == 0 then return 0 end
    if s0 < s1 then return -1 end
    if s0 > s1 then return 1 end
    return sizes[d0] > sizes[d1] and 1 or 0
  end
  for i = 2, nd do
    local dim1 = i
    for j = 1, i - 1 do
      local dim0 = i - j
      local c = cmp(perm[dim0], perm[dim1])
      if c > 0 then
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        dim1 = dim0
      elseif c < 0 then
        break
      end
    end
  end
  local out, acc = {}, 1
  for i = 1, nd do
    out[perm[i]] = acc
    acc = acc * math.max(sizes[perm[i]], 1)
  end
  return out
end

-- A copy in a new storage. A dense non-overlapping view keeps its strides
-- (PyTorch's preserve_format); any other gets infer_dense_strides'.
function M.clone(v)
  if numel(v.sizes) == 0 then return M.tensor(v.sizes, M.values(v)) end
  local strides = M.is_non_overlapping_and_dense(v) and copy(v.strides)
    or infer_dense_strides(v.sizes, v.strides)
  local n = numel(v.sizes)
  local st = new_storage(n)
  local r = mk(st, 0, copy(v.sizes), strides)
  local vals = M.values(v)
  for i, o in ipairs(M.offsets(r)) do st.data[o] = vals[i] end
  return r
end

function M.contiguous(v)
  if M.is_contiguous(v) then return v end
  return M.tensor(v.sizes, M.values(v))
end

function M.reshape(v, sizes)
  local s = infer(v, sizes)
  if not s then return nil, "shape" end
  local st = view_strides(v, s)
  if st then return mk(v.st, v.off, s, st) end
  return M.tensor(s, M.values(v))
end

-- A copy with the listed dims reversed.
function M.flip(v, dims)
  local nd = #v.sizes
  local rev = {}
  for _, d in ipairs(dims) do
    local w = wrap(d, nd)
    if not w or rev[w] then return nil, "dim" end
    rev[w] = true
  end
  if nd == 0 then return M.clone(v) end
  local off, strides = v.off, copy(v.strides)
  for d = 1, nd do
    if rev[d] and v.sizes[d] > 0 then
      off = off + (v.sizes[d] - 1) * strides[d]
      strides[d] = -strides[d]
    end
  end
  -- the values of the flipped reading, laid out like v (empty_like)
  local vals = M.values(mk(v.st, off, copy(v.sizes), strides))
  local r = M.clone(v)
  for i, o in ipairs(M.offsets(r)) do r.st.data[o] = vals[i] end
  return r
end

-- Basic indexing: items are {kind="int", i}, {kind="range", first, last,
-- step}, {kind="full"}, {kind="newaxis"}, {kind="ellipsis"}.
function M.index(v, items)
  local consumed, ell = 0, 0
  for _, it in ipairs(items) do
    if it.kind == "int" or it.kind == "range" or it.kind == "full" then consumed = consumed + 1 end
    if it.kind == "ellipsis" then ell = ell + 1 end
  end
  local nd = #v.sizes
  if ell > 1 or consumed > nd then return nil, "too many" end
  local sizes, strides, off, d = {}, {}, v.off, 1
  for _, it in ipairs(items) do
    if it.kind == "int" then
      local size, i = v.sizes[d], it.i
      if i < 0 then i = i + size + 1 end
      if i < 1 or i > size then return nil, "index" end
      off = off + (i - 1) * v.strides[d]
      d = d + 1
    elseif it.kind == "range" then
      if it.step <= 0 then return nil, "step" end
      local size = v.sizes[d]
      local s = it.first >= 1 and it.first - 1 or (it.first == 0 and 0 or size + it.first)
      s = math.min(math.max(s, 0), size)
      local e = it.last >= 0 and it.last or size + it.last + 1
      e = math.min(math.max(e, 0), size)
      local len = e > s and math.floor((e - s - 1) / it.step) + 1 or 0
      off = off + s * v.strides[d]
      sizes[#sizes + 1], strides[#strides + 1] = len, v.strides[d] * it.step
      d = d + 1
    elseif it.kind == "full" then
      sizes[#sizes + 1], strides[#strides + 1] = v.sizes[d], v.strides[d]
      d = d + 1
    elseif it.kind == "newaxis" then
      local st = d <= nd and v.sizes[d] * v.strides[d] or 1
      sizes[#sizes + 1], strides[#strides + 1] = 1, st
    else -- ellipsis: the dims no item names
      for _ = 1, nd - consumed do
        sizes[#sizes + 1], strides[#strides + 1] = v.sizes[d], v.strides[d]
        d = d + 1
      end
    end
  end
  for k = d, nd do
    sizes[#sizes + 1], strides[#strides + 1] = v.sizes[k], v.strides[k]
  end
  return mk(v.st, off, sizes, strides)
end

-- -- writes -------------------------------------------------------------------

-- a value fill writes the same value to every alias, so a view with
-- internal overlap (an expanded one) may be filled (PyTorch's fill_)
function M.fill(v, x)
  for _, o in ipairs(M.offsets(v)) do v.st.data[o] = x end
  return true
end

-- Broadcast src's values to dst's shape (row-major), or nil.
local function broadcast_values(src, sizes)
  local e = M.expand(src, sizes)
  if not e then return nil end
  return M.values(e)
end

-- dst <- src (broadcast); src is read entirely before anything is written
-- (ember copies from a snapshot when the two overlap).
function M.copy(dst, src)
  if M.has_internal_overlap(dst) then return nil, "overlap" end
  local vals = broadcast_values(src, dst.sizes)
  if not vals then return nil, "broadcast" end
  for i, o in ipairs(M.offsets(dst)) do dst.st.data[o] = vals[i] end
  return true
end

-- v[items] = value (a number, or a view broadcast to the indexed shape).
-- As PyTorch's setitem (slicePrefix1sSize), a value with more dims than the
-- target first loses leading dims of size 1: x[25:37:2] = ones(1, 7) works
-- where copy_ of the same (1, 7) into a (7,) tensor is refused.
function M.index_put(v, items, value)
  local target, err = M.index(v, items)
  if not target then return nil, err end
  if type(value) == "number" then return M.fill(target, value) end
  local k = 0
  while #value.sizes - k > #target.sizes and value.sizes[k + 1] == 1 do k = k + 1 end
  if k > 0 then
    local sizes, strides = {}, {}
    for i = k + 1, #value.sizes do
      sizes[#sizes + 1], strides[#strides + 1] = value.sizes[i], value.strides[i]
    end
    value = mk(value.st, value.off, sizes, strides)
  end
  return M.copy(target, value)
end

function M.same_storage(a, b) return a.st == b.st end

return M
