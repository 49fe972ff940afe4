-- bench/lapack_paired.lua: ember's T.linalg rows (issue 19, item 6) against
-- the same LAPACK routine called directly, in one process, alternating.
--
--   EMBER_BUILD=build-release OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
--     bin/ember bench/lapack_paired.lua [threads] [rounds] [row,row...]
--
-- Why: bench.py times each contender in its own process, one after the
-- other; on the shared 2-core VM the neighbours' load moves a 2-thread LAPACK
-- time by up to 2x between two such timings (gesdd of 512^2 read 32 ms and
-- 62 ms for the same C program in two runs of the same hour), so a ratio of
-- ember to the C reference taken from two separate timings says more about
-- the neighbours than about ember. Here both sides run in the same process,
-- on the same libopenblas, in alternating blocks of calls, so each pair of
-- blocks sees the same machine; the ratio reported is the median of the
-- per-round ratios (and the ratio of the best blocks).
--
-- "Direct" is what bench/cref.c's la_run does for the row, called through
-- LuaJIT's FFI (a few ns per call): malloc'd buffers, the input copied in,
-- the workspace query, the routine, free.
local T = require "ember"
local ffi = require "ffi"

local threads = tonumber(arg and arg[1]) or 1
local rounds = tonumber(arg and arg[2]) or 15
local only = arg and arg[3]
T.set_num_threads(threads)

pcall(ffi.cdef, "void *malloc(size_t); void free(void *);")
pcall(ffi.cdef, "int clock_gettime(int clk, void *ts);")
ffi.cdef [[
void sgesv_(const int *n, const int *nrhs, float *a, const int *lda, int *ipiv, float *b, const int *ldb, int *info);
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void sgetri_(const int *n, float *a, const int *lda, const int *ipiv, float *work, const int *lwork, int *info);
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t);
void sgesdd_(const char *jobz, const int *m, const int *n, float *a, const int *lda, float *s, float *u,
             const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork, int *iwork, int *info, size_t);
void ssyevd_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w, float *work,
             const int *lwork, int *iwork, const int *liwork, int *info, size_t, size_t);
void sgelsy_(const int *m, const int *n, const int *nrhs, float *a, const int *lda, float *b, const int *ldb,
             int *jpvt, const float *rcond, int *rank, float *work, const int *lwork, int *info);
]]
local L = ffi.load("libopenblas.so.0")
local C = ffi.C

local ts = ffi.new("int64_t[2]")
local gettime = ffi.cast("int (*)(int, int64_t *)", C.clock_gettime)
local function now() gettime(1, ts); return tonumber(ts[0]) + tonumber(ts[1]) * 1e-9 end

local function I(v) return ffi.new("int[1]", v) end
local function fbuf(n) return ffi.cast("float *", C.malloc(4 * n)) end
local function ibuf(n) return ffi.cast("int *", C.malloc(4 * n)) end
local function fptr(t) return ffi.cast("float *", t:contiguous():data_ptr()) end

-- each row: setup() -> ember body, direct body (the inputs shared)
local rows = {}
local order = {}
local function row(name, what, setup) rows[name] = { what = what, setup = setup }; order[#order + 1] = name end

local function spd(n) local a = T.rand(n, n); return a:matmul(a:t()) / n + T.eye(n) end

row("la_solve_1024", "solve (1024, 1024) x (1024, 1): sgesv", function()
  local n = 1024
  local a, b = T.rand(n, n) + T.eye(n) * n, T.rand(n, 1)
  local ap, bp = fptr(a), fptr(b)
  return function() return T.linalg.solve(a, b) end, function()
    local w, x, ipiv, info = fbuf(n * n), fbuf(n), ibuf(n), I(0)
    ffi.copy(w, ap, 4 * n * n); ffi.copy(x, bp, 4 * n)
    L.sgesv_(I(n), I(1), w, I(n), ipiv, x, I(n), info)
    C.free(w); C.free(x); C.free(ipiv)
  end
end)

row("la_inv_1024", "inv (1024, 1024): sgetrf + sgetri", function()
  local n = 1024
  local a = T.rand(n, n) + T.eye(n) * n
  local ap = fptr(a)
  return function() return T.linalg.inv(a) end, function()
    local w, ipiv, info, wq = fbuf(n * n), ibuf(n), I(0), ffi.new("float[1]")
    ffi.copy(w, ap, 4 * n * n)
    L.sgetrf_(I(n), I(n), w, I(n), ipiv, info)
    L.sgetri_(I(n), w, I(n), ipiv, wq, I(-1), info)
    local lw = math.floor(wq[0]); local work = fbuf(lw)
    L.sgetri_(I(n), w, I(n), ipiv, work, I(lw), info)
    C.free(work); C.free(w); C.free(ipiv)
  end
end)

row("la_cholesky_2048", "cholesky (2048, 2048): spotrf", function()
  local n = 2048
  local a = spd(n)
  local ap = fptr(a)
  return function() return T.linalg.cholesky(a) end, function()
    local w, info = fbuf(n * n), I(0)
    ffi.copy(w, ap, 4 * n * n)
    L.spotrf_("U", I(n), w, I(n), info, 1)
    C.free(w)
  end
end)

row("la_svd_512", "svd (512, 512), full_matrices = false: sgesdd", function()
  local n = 512
  local a = T.rand(n, n)
  local ap = fptr(a)
  return function() return T.linalg.svd(a, { full_matrices = false }) end, function()
    local w, s, u, vt = fbuf(n * n), fbuf(n), fbuf(n * n), fbuf(n * n)
    local iw, info, wq = ibuf(8 * n), I(0), ffi.new("float[1]")
    ffi.copy(w, ap, 4 * n * n)
    L.sgesdd_("S", I(n), I(n), w, I(n), s, u, I(n), vt, I(n), wq, I(-1), iw, info, 1)
    local lw = math.floor(wq[0]); local work = fbuf(lw)
    L.sgesdd_("S", I(n), I(n), w, I(n), s, u, I(n), vt, I(n), work, I(lw), iw, info, 1)
    C.free(work); C.free(w); C.free(s); C.free(u); C.free(vt); C.free(iw)
  end
end)

row("la_eigh_512", "eigh (512, 512): ssyevd", function()
  local n = 512
  local r = T.rand(n, n)
  local a = r + r:t()
  local ap = fptr(a)
  return function() return T.linalg.eigh(a) end, function()
    local w, ev, info, wq, iq = fbuf(n * n), fbuf(n), I(0), ffi.new("float[1]"), I(0)
    ffi.copy(w, ap, 4 * n * n)
    L.ssyevd_("V", "U", I(n), w, I(n), ev, wq, I(-1), iq, I(-1), info, 1, 1)
    local lw, liw = math.floor(wq[0]), iq[0]
    local work, iw = fbuf(lw), ibuf(liw)
    L.ssyevd_("V", "U", I(n), w, I(n), ev, work, I(lw), iw, I(liw), info, 1, 1)
    C.free(work); C.free(iw); C.free(w); C.free(ev)
  end
end)

row("la_lstsq_4096x256", "lstsq (4096, 256) x (4096, 1): sgelsy", function()
  -- direct: the column-major copy of A is made once here, so each call
  -- copies it and runs sgelsy, in both scripts alike (ember's call includes
  -- its transposing copy: the row-major A given to it)
  local m, n = 4096, 256
  local a, b = T.rand(m, n), T.rand(m, 1)
  local at = a:t():contiguous()
  local ap, bp = fptr(at), fptr(b)
  return function() return T.linalg.lstsq(a, b) end, function()
    local w, x, jp, info, rank, wq = fbuf(m * n), fbuf(m), ibuf(n), I(0), I(0), ffi.new("float[1]")
    ffi.copy(w, ap, 4 * m * n); ffi.copy(x, bp, 4 * m); ffi.fill(jp, 4 * n)
    local rcond = ffi.new("float[1]", 1.1920929e-07 * m)
    L.sgelsy_(I(m), I(n), I(1), w, I(m), x, I(m), jp, rcond, rank, wq, I(-1), info)
    local lw = math.floor(wq[0]); local work = fbuf(lw)
    L.sgelsy_(I(m), I(n), I(1), w, I(m), x, I(m), jp, rcond, rank, work, I(lw), info)
    C.free(work); C.free(w); C.free(x); C.free(jp)
  end
end)

row("la_solve_batch16", "solve (1024, 16, 16) x (1024, 16, 1): sgesv per matrix", function()
  local B, n = 1024, 16
  local a, b = T.rand(B, n, n) + T.eye(n) * n, T.rand(B, n, 1)
  local ap, bp = fptr(a), fptr(b)
  return function() return T.linalg.solve(a, b) end, function()
    local w, x, ipiv, info = fbuf(B * n * n), fbuf(B * n), ibuf(B * n), I(0)
    ffi.copy(w, ap, 4 * B * n * n); ffi.copy(x, bp, 4 * B * n)
    local N, one = I(n), I(1)
    for i = 0, B - 1 do L.sgesv_(N, one, w + i * n * n, N, ipiv + i * n, x + i * n, N, info) end
    C.free(w); C.free(x); C.free(ipiv)
  end
end)

local function block(f, k)
  local t0 = now()
  for _ = 1, k do f() end
  return (now() - t0) / k
end

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

local want = {}
if only then for nm in only:gmatch("[^,]+") do want[nm] = true end end
print(string.format("threads %d, %d rounds of alternating blocks (>= 0.1 s each)", threads, rounds))
print("| row | ember | direct | median of round ratios | best ÷ best |")
print("|---|---|---|---|---|")
for _, name in ipairs(order) do
  if not only or want[name] then
    T.manual_seed(1)
    local em, direct = rows[name].setup()
    em(); direct()
    local k = math.max(1, math.ceil(0.1 / block(direct, 1)))
    local te, td, ratio = {}, {}, {}
    for r = 1, rounds do
      -- alternate which side goes first, so neither always follows the other
      local e, d
      if r % 2 == 1 then e = block(em, k); d = block(direct, k) else d = block(direct, k); e = block(em, k) end
      te[r], td[r], ratio[r] = e, d, e / d
      collectgarbage()
    end
    table.sort(te); table.sort(td)
    print(string.format("| %s | %.2f ms | %.2f ms | %.3f | %.3f |", rows[name].what, median(te) * 1e3,
      median(td) * 1e3, median(ratio), te[1] / td[1]))
  end
end
