-- T.distributed: PyTorch's torch.distributed on Open MPI (docs/distributed.md),
-- T.nn.parallel.DistributedDataParallel and T.data.DistributedSampler.
--
-- The MPI calls are in the C module ember.dist (bindings/dist/l_mpi.c),
-- loaded on init_process_group only: it moves raw buffers (an address, a
-- count, a dtype name) with MPI's nonblocking calls and polls them against
-- the group's timeout. This file does the rest: argument checks, contiguous
-- staging buffers for non-contiguous tensors (and float32 ones for the
-- reductions of float16/bfloat16), the writes back, avg's division, work
-- handles. Ranks are process ids, 0-based as in MPI and PyTorch.
return function(T, C)
  local dist = {}
  T.distributed = dist

  -- -- the MPI module ------------------------------------------------------------
  local M, load_err
  local function mpi()
    if M == nil then
      local ok, m = pcall(require, "ember.dist")
      if ok then M = m else M, load_err = false, tostring(m) end
    end
    return M or nil
  end
  local nomore = require("ember.args").nomore

  -- -- the NCCL module (bindings/dist/l_nccl.c): cuda tensors ---------------------
  local N, nccl_err
  local function nccl()
    if N == nil then
      local ok, m = pcall(require, "ember.dist_nccl")
      if ok then N = m else N, nccl_err = false, tostring(m) end
    end
    return N or nil
  end
  -- The nccl backend behind the MPI module's calls (so the collectives below
  -- are written once): each operation is enqueued on the current stream of
  -- the group's device, under the timeout of its communicator.
  local function nccl_backend(dev)
    local TO, SRC = {}, setmetatable({}, { __mode = "k" })
    local function st() return C._cuda_stream(dev) end
    local B = { timeouts = TO, name = "nccl", device = "cuda:" .. dev }
    function B.iallreduce(c, a, n, dt, op) return N.iallreduce(c, a, n, dt, op, st(), TO[c]) end
    function B.ibcast(c, a, n, dt, root) return N.ibcast(c, a, n, dt, root, st(), TO[c]) end
    function B.ireduce(c, a, n, dt, op, root) return N.ireduce(c, a, n, dt, op, root, st(), TO[c]) end
    function B.iallgather(c, sa, ra, k, dt) return N.iallgather(c, sa, ra, k, dt, st(), TO[c]) end
    function B.ireduce_scatter(c, sa, ra, k, dt, op) return N.ireduce_scatter(c, sa, ra, k, dt, op, st(), TO[c]) end
    function B.ialltoall(c, sa, ra, k, dt) return N.ialltoall(c, sa, ra, k, dt, st(), TO[c]) end
    function B.ialltoallv(c, sa, ra, sc, rc, dt) return N.ialltoallv(c, sa, ra, sc, rc, dt, st(), TO[c]) end
    function B.igather(c, sa, ra, k, dt, root) return N.igather(c, sa, ra, k, dt, root, st(), TO[c]) end
    function B.iscatter(c, sa, ra, k, dt, root) return N.iscatter(c, sa, ra, k, dt, root, st(), TO[c]) end
    function B.ibarrier(c) return N.ibarrier(c, st(), TO[c]) end
    function B.isend(c, a, n, dt, peer) return N.isend(c, a, n, dt, peer, st(), TO[c]) end
    function B.irecv(c, a, n, dt, peer)
      local r = N.irecv(c, a, n, dt, peer, st(), TO[c])
      SRC[r] = peer
      return r
    end
    function B.wait(r, timeout, name) return N.wait(r, timeout, name), SRC[r] end
    function B.test(r, name) return N.test(r, name), SRC[r] end
    local function blocking(f, name)
      return function(c, ...)
        if not N.wait(f(c, ...), TO[c], name) then error(name .. ": timed out", 3) end
      end
    end
    B.allreduce = blocking(B.iallreduce, "all_reduce")
    B.bcast = blocking(B.ibcast, "broadcast")
    B.barrier = blocking(B.ibarrier, "barrier")
    B.progress = function() end
    B.set_broken = N.set_broken
    B.comm_free = N.comm_free
    return B
  end
  function dist.is_available(...) nomore("is_available", 0, ...) return mpi() ~= nil end
  function dist.is_mpi_available(...) nomore("is_mpi_available", 0, ...) return mpi() ~= nil end
  function dist.is_nccl_available(...) nomore("is_nccl_available", 0, ...) return nccl() ~= nil end
  function dist.is_gloo_available(...) nomore("is_gloo_available", 0, ...) return false end

  -- started by mpirun/mpiexec (Open MPI, MPICH's hydra) or srun with PMIx
  local function launched()
    for _, v in ipairs { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK" } do
      if os.getenv(v) then return true end
    end
    return false
  end

  dist.ReduceOp = { SUM = "sum", AVG = "avg", PRODUCT = "prod", MIN = "min", MAX = "max",
    BAND = "band", BOR = "bor", BXOR = "bxor" }

  -- -- state and groups -------------------------------------------------------------
  local S = { initialized = false, world = nil, tag = 0, groups = {}, broken = nil }
  local Group = {}
  Group.__index = Group
  Group.__tostring = function(g)
    return string.format("ProcessGroup(%s, ranks {%s}, rank %d of %d)", g.backend, table.concat(g.ranks, ", "),
      g._rank, g._size)
  end
  function Group:rank() return self._rank end
  function Group:size() return self._size end
  local NON_MEMBER = setmetatable({}, { __tostring = function() return "GroupMember.NON_GROUP_MEMBER" end })
  dist.GroupMember = { WORLD = nil, NON_GROUP_MEMBER = NON_MEMBER }
  dist.group = {}

  local function fail(level, fmt, ...) error(string.format(fmt, ...), level + 1) end

  -- o against a set of keys, through ember.args (the message every entry
  -- point gives, naming the keys taken)
  local ARGS = require("ember.args")
  local key_lists = setmetatable({}, { __mode = "k" })
  -- the options of a call given none: one shared table (nothing writes
  -- into the checked options), so a collective allocates no table for them
  local NO_OPTS = setmetatable({}, { __newindex = function() error("distributed: NO_OPTS is read-only", 2) end })
  local function check_opts(name, o, keys, level)
    if o == nil then return NO_OPTS end
    if type(o) ~= "table" or T.is_tensor(o) then
      fail(level + 1, "%s: expected a table of options, got %s", name, T.is_tensor(o) and "a tensor" or type(o))
    end
    local list = key_lists[keys]
    if not list then
      list = {}
      for k in pairs(keys) do list[#list + 1] = k end
      table.sort(list)
      key_lists[keys] = list
    end
    return ARGS.checkopts(name, o, list, level + 2)
  end
  local function set(list)
    local s = {}
    for _, k in ipairs(list) do s[k] = true end
    return s
  end

  local function need_init(name, level)
    if not S.initialized then
      fail(level + 1, "%s: the default process group has not been initialized; call " ..
        "T.distributed.init_process_group first", name)
    end
    if S.broken then
      fail(level + 1, "%s: the process group is unusable after an earlier failure (%s)", name, S.broken)
    end
  end

  -- the group a call runs on: nil for a rank outside the group (the call
  -- does nothing there, as in PyTorch)
  local function group_of(name, g, level)
    need_init(name, level + 1)
    if g == nil then return S.world end
    if g == NON_MEMBER then return nil end
    if getmetatable(g) ~= Group then
      fail(level + 1, "%s: group must be a process group (T.distributed.new_group), got %s", name,
        T.is_tensor(g) and "a tensor" or type(g))
    end
    if g.destroyed then fail(level + 1, "%s: the process group has been destroyed", name) end
    if not g.member then return nil end
    return g
  end

  local function check_int(name, what, v, level)
    if type(v) ~= "number" or v % 1 ~= 0 then
      fail(level + 1, "%s: %s must be an integer rank, got %s", name, what, tostring(v))
    end
  end
  -- global rank -> rank in g (errors name both)
  local function group_rank(name, what, g, r, level)
    check_int(name, what, r, level + 1)
    local w = S.world._size
    if r < 0 or r >= w then
      fail(level + 1, "%s: %s %d is out of range: ranks are 0..%d (a world of %d)", name, what, r, w - 1, w)
    end
    local i = g.index[r]
    if not i then
      fail(level + 1, "%s: %s %d is not in the group (ranks %s)", name, what, r, table.concat(g.ranks, ", "))
    end
    return i - 1
  end

  function dist.is_initialized(...) nomore("is_initialized", 0, ...) return S.initialized end
  -- ends the whole job now (MPI_Abort; lua/ember/launch.lua on an error)
  function dist._abort(code)
    if M then
      io.stderr:write(string.format("ember.distributed: rank %d failed; aborting the job\n", S.world and S.world._rank or -1))
      io.stderr:flush()
      M.abort(code or 1)
    end
    os.exit(code or 1)
  end
  -- the group argument of the query functions (nil: the world), after the
  -- init check
  local function query_group(name, g)
    need_init(name, 3)
    if g == nil then return S.world end
    if type(g) == "table" and getmetatable(g) == nil then
      local k = next(g)
      if type(k) == "string" then
        fail(3, "%s: unknown option '%s' (%s takes no options; its argument is a process group)", name, k, name)
      end
    end
    if g ~= NON_MEMBER and getmetatable(g) ~= Group then
      fail(3, "%s: group must be a process group (T.distributed.new_group), got %s", name,
        T.is_tensor(g) and "a tensor" or type(g))
    end
    return g
  end
  function dist.get_backend(g, ...)
    nomore("get_backend", 1, ...)
    g = query_group("get_backend", g)
    return g == NON_MEMBER and S.world.backend or g.backend
  end
  function dist.get_rank(g, ...)
    nomore("get_rank", 1, ...)
    g = query_group("get_rank", g)
    if g == NON_MEMBER then return -1 end
    return g.member and g._rank or -1
  end
  function dist.get_world_size(g, ...)
    nomore("get_world_size", 1, ...)
    g = query_group("get_world_size", g)
    if g == NON_MEMBER then return -1 end
    return g.member and g._size or -1
  end
  function dist.get_global_rank(g, r, ...)
    nomore("get_global_rank", 2, ...)
    g = query_group("get_global_rank", g)
    if g == NON_MEMBER then fail(2, "get_global_rank: this rank is not a member of the group") end
    check_int("get_global_rank", "group_rank", r, 2)
    if r < 0 or r >= #g.ranks then
      fail(2, "get_global_rank: group rank %d is out of range 0..%d", r, #g.ranks - 1)
    end
    return g.ranks[r + 1]
  end
  function dist.get_group_rank(g, r, ...)
    nomore("get_group_rank", 2, ...)
    g = query_group("get_group_rank", g)
    if g == NON_MEMBER then fail(2, "get_group_rank: this rank is not a member of the group") end
    return group_rank("get_group_rank", "global_rank", g, r, 2)
  end
  function dist.get_process_group_ranks(g, ...)
    nomore("get_process_group_ranks", 1, ...)
    g = query_group("get_process_group_ranks", g)
    if g == NON_MEMBER then fail(2, "get_process_group_ranks: this rank is not a member of the group") end
    local out = {}
    for i, r in ipairs(g.ranks) do out[i] = r end
    return out
  end

  local fast_setup -- all_reduce's FFI path: whether the world group takes it (below)
  local function new_group_object(ranks, timeout, comm, grank, B)
    local g = setmetatable({ ranks = ranks, index = {}, _size = #ranks, timeout = timeout, comm = comm,
      member = grank ~= nil, _rank = grank or -1, B = B, backend = B.name or "mpi", device = B.device or "cpu" },
      Group)
    if B.timeouts and comm then B.timeouts[comm] = timeout end
    for i, r in ipairs(ranks) do g.index[r] = i end
    return g
  end

  local function check_timeout(name, t, level)
    if t == nil then return nil end
    if type(t) ~= "number" or t ~= t or t <= 0 then
      fail(level + 1, "%s: timeout must be a positive number of seconds, got %s", name, tostring(t))
    end
    return t
  end

  local INIT_KEYS = set { "backend", "timeout", "rank", "world_size", "init_method", "group_name" }
  function dist.init_process_group(o)
    if type(o) == "string" then o = { backend = o } end
    o = check_opts("init_process_group", o, INIT_KEYS, 2)
    if S.initialized then error("init_process_group: trying to initialize the default process group twice!", 2) end
    local backend = o.backend or "mpi"
    if backend ~= "mpi" and backend ~= "nccl" then
      fail(2, "init_process_group: unknown backend '%s' (ember has 'mpi' for CPU tensors and 'nccl' for cuda " ..
        "tensors)", tostring(backend))
    end
    if o.init_method ~= nil and o.init_method ~= "env://" then
      fail(2, "init_process_group: init_method '%s' is not supported: the %s backend takes its rank and " ..
        "world size from the launcher (mpirun)", tostring(o.init_method), backend)
    end
    local timeout = check_timeout("init_process_group", o.timeout, 2) or 1800
    local B = mpi()
    if backend == "nccl" then
      if not T.cuda.is_available() then
        local ok, why = pcall(T.cuda.synchronize)
        fail(2, "init_process_group: backend 'nccl' needs a CUDA device: %s", ok and "none found" or
          tostring(why):gsub("^[^:]*: ", ""):match("^[^\n]*"))
      end
      if not nccl() then
        fail(2, "init_process_group: backend 'nccl' is not available: the module ember.dist_nccl did not load " ..
          "(%s); build with the CUDA Toolkit's NCCL (EMBER_CUDA=ON)", tostring(nccl_err):match("^[^\n]*"))
      end
      if launched() and not B then
        fail(2, "init_process_group: backend 'nccl' under a launcher needs the MPI module to share NCCL's " ..
          "unique id (%s)", tostring(load_err):match("^[^\n]*"))
      end
    elseif not B then
      fail(2, "init_process_group: backend 'mpi' is not available: this ember was built without MPI " ..
        "(the module ember.dist did not load: %s); install libopenmpi-dev and rebuild (EMBER_MPI=AUTO)",
        tostring(load_err):match("^[^\n]*"))
    end
    local rank, size, comm = 0, 1, nil
    if launched() then
      -- EMBER_MPI_THREAD_LEVEL: the thread level asked of MPI_Init_thread
      -- (docs/distributed.md): funneled by default (only the thread that
      -- runs Lua calls MPI); single takes Open MPI's lock-free path (about
      -- 0.3-0.5 us less per small collective); a host that calls ember
      -- from several threads needs serialized or multiple
      local asked = os.getenv("EMBER_MPI_THREAD_LEVEL")
      if asked == "" then asked = nil end
      local level = asked or "funneled"
      local LEVEL = { single = 0, funneled = 1, serialized = 2, multiple = 3 }
      if not LEVEL[level] then
        fail(2, "init_process_group: EMBER_MPI_THREAD_LEVEL must be one of single, funneled, serialized, " ..
          "multiple; got '%s'", level)
      end
      local provided
      rank, size, provided = M.init(level)
      -- (a host that initialized MPI itself keeps its level unless one is asked for)
      if asked and (LEVEL[provided] or -1) < LEVEL[level] then
        fail(2, "init_process_group: MPI provides the thread level '%s', below the '%s' that " ..
          "EMBER_MPI_THREAD_LEVEL asks for", tostring(provided), level)
      end
      comm = 0
    end
    if o.world_size ~= nil and o.world_size ~= size then
      fail(2, "init_process_group: world_size = %s was given, but the launcher started %d processes",
        tostring(o.world_size), size)
    end
    if o.rank ~= nil and o.rank ~= rank then
      fail(2, "init_process_group: rank = %s was given, but the launcher says this process is rank %d",
        tostring(o.rank), rank)
    end
    if backend == "nccl" then
      -- rank 0 makes NCCL's unique id and MPI broadcasts it; one GPU per
      -- process: device 0 of what CUDA_VISIBLE_DEVICES shows it (docs)
      local id = size > 1 and rank ~= 0 and string.rep("\0", 128) or N.get_unique_id()
      if size > 1 then
        local buf = T.tensor({ id:byte(1, -1) }, { dtype = T.uint8 })
        M.bcast(0, addr("init_process_group", buf, true), #id, "uint8", 0)
        id = string.char(table.unpack and table.unpack(buf:tolist()) or unpack(buf:tolist()))
      end
      local c = N.comm_init(size, id, rank, 0, timeout)
      if c == nil then
        fail(2, "init_process_group: NCCL's set-up timed out after %g s (rank %d of %d)", timeout, rank, size)
      end
      comm, B = c, nccl_backend(0)
    end
    local ranks = {}
    for r = 0, size - 1 do ranks[#ranks + 1] = r end
    S.world = new_group_object(ranks, timeout, comm, rank, B)
    S.world.is_world = true
    S.world.fast = fast_setup(backend, size)
    S.initialized = true
    S.groups = {}
  end

  function dist.new_group(ranks, o)
    if type(ranks) == "table" and ranks.ranks ~= nil and o == nil then ranks, o = ranks.ranks, ranks end
    need_init("new_group", 2)
    o = check_opts("new_group", o, set { "ranks", "timeout", "backend" }, 2)
    if o.backend ~= nil and o.backend ~= S.world.backend then
      fail(2, "new_group: backend '%s' is not available (the default group's is '%s')", tostring(o.backend),
        S.world.backend)
    end
    local timeout = check_timeout("new_group", o.timeout, 2) or S.world.timeout
    local w = S.world._size
    local list = {}
    if ranks == nil then
      for r = 0, w - 1 do list[#list + 1] = r end
    else
      if type(ranks) ~= "table" then fail(2, "new_group: ranks must be a list of ranks, got %s", type(ranks)) end
      local seen = {}
      for i, r in ipairs(ranks) do
        check_int("new_group", "ranks[" .. i .. "]", r, 2)
        if r < 0 or r >= w then
          fail(2, "new_group: rank %d is out of range: ranks are 0..%d (a world of %d)", r, w - 1, w)
        end
        if seen[r] then fail(2, "new_group: rank %d is listed twice", r) end
        seen[r] = true
        list[#list + 1] = r
      end
      if #list == 0 then error("new_group: expected at least one rank", 2) end
      table.sort(list)
    end
    local me
    for i, r in ipairs(list) do if r == S.world._rank then me = i - 1 end end
    S.tag = S.tag + 1 -- every rank calls new_group in the same order: the same tag
    local comm
    if S.world.backend == "nccl" then
      -- every rank of the world splits its communicator (non-members too)
      comm = N.comm_split(S.world.comm, me ~= nil, me or 0, timeout)
      if comm == false then fail(2, "new_group: NCCL's split timed out after %g s", timeout) end
      if me == nil then return NON_MEMBER end
    else
      if me == nil then return NON_MEMBER end
      if S.world.comm then
        local id, r = M.comm_create(0, list, S.tag)
        comm, me = id, r
      end
    end
    local g = new_group_object(list, timeout, comm, me, S.world.B)
    S.groups[#S.groups + 1] = g
    return g
  end

  function dist.destroy_process_group(g)
    if not S.initialized then
      error("destroy_process_group: the default process group has not been initialized", 2)
    end
    if g == nil or g == S.world then
      for _, sg in ipairs(S.groups) do
        if sg.comm and not sg.destroyed then sg.B.comm_free(sg.comm) end
        sg.destroyed = true
      end
      if S.world.backend == "nccl" and S.world.comm then S.world.B.comm_free(S.world.comm) end
      if S.world.B and S.world.B.trim then S.world.B.trim() end -- the kept all_reduce block
      S.world.destroyed = true
      S.initialized, S.world, S.groups = false, nil, {}
      return
    end
    if g == NON_MEMBER then return end
    if getmetatable(g) ~= Group then error("destroy_process_group: expected a process group", 2) end
    if g.comm and not g.destroyed then g.B.comm_free(g.comm) end
    g.destroyed = true
  end

  -- -- work handles ---------------------------------------------------------------
  local Work = {}
  Work.__index = Work

  local function timed_out(name, g, level)
    local msg = string.format("%s: timed out after %g s (rank %d of %d): a peer did not join this " ..
      "operation; the process group is now unusable and the job is aborted when this process exits",
      name, g.timeout, S.world._rank, S.world._size)
    S.broken = name .. " timed out"
    g.B.set_broken(msg)
    error(msg, level + 1)
  end

  local function finish(w)
    w.done = true
    w.reqs = nil
    if w.post then
      T.no_grad(w.post, w)
      w.post = nil
    end
    w.keep = nil
  end

  function Work:wait(timeout)
    if self.done then return true end
    local g = self.group
    for i, r in ipairs(self.reqs) do
      local ok, src = g.B.wait(r, timeout or g.timeout, self.name)
      if not ok then timed_out(self.name, g, 2) end
      if i == 1 then self.source = src end
    end
    finish(self)
    return true
  end
  function Work:is_completed()
    if self.done then return true end
    for i, r in ipairs(self.reqs) do
      local d, src = self.group.B.test(r, self.name)
      if not d then return false end
      if i == 1 then self.source = src end
    end
    finish(self)
    return true
  end
  function Work:is_success() return self.done == true end
  -- the sender of a receive (a global rank), once it has completed
  function Work:source_rank()
    if not self.done then error("source_rank: the receive has not completed; call wait() first", 2) end
    return self.source_global
  end
  Work.__tostring = function(w) return "Work(" .. w.name .. (w.done and ", completed)" or ", pending)") end

  -- A started operation: reqs (MPI requests; none in a world of one), keep
  -- (tensors MPI reads or writes until it completes), post(w) (the writes
  -- back, under no_grad). Blocking: waited on here; async: the handle.
  -- The writes back of the reductions (post functions, run by finish under
  -- no_grad; written once, outside the collectives, so that a collective
  -- makes no closure and LuaJIT compiles it). keep = { t, buf, avg }:
  -- avg's division of the reduced buf, then its copy into t when they differ.
  local function post_reduce(w)
    local t, buf = w.keep[1], w.keep[2]
    if w.keep[3] then buf:div_(w.group._size) end
    if buf ~= t then t:copy_(buf) end
  end
  -- keep = { t, buf }: buf's values into t
  local function post_copy(w) w.keep[1]:copy_(w.keep[2]) end
  local function div_by(t, n) t:div_(n) end

  local function launch(name, g, reqs, keep, post, async, level)
    local w = setmetatable({ name = name, group = g, reqs = reqs, keep = keep, post = post, done = false }, Work)
    if #reqs == 0 then finish(w) end
    if async then return w end
    if not w.done then
      for i, r in ipairs(reqs) do
        local ok, src = g.B.wait(r, g.timeout, name)
        if not ok then timed_out(name, g, level + 1) end
        if i == 1 then w.source = src end
      end
      finish(w)
    end
    return w
  end

  -- -- tensors and buffers ----------------------------------------------------------
  local function check_tensor(name, what, t, level)
    if not T.is_tensor(t) then
      fail(level + 1, "%s: expected a tensor for %s, got %s", name, what, type(t))
    end
    local want = S.world and S.world.backend == "nccl" and "cuda" or "cpu"
    if t.device.type ~= want then
      fail(level + 1, "%s: the %s backend moves %s tensors, but %s is on %s%s", name, want == "cuda" and "nccl" or "mpi",
        want == "cuda" and "cuda" or "CPU", what, tostring(t.device),
        t.device.type == "cuda" and " (cuda tensors need init_process_group{backend = 'nccl'})" or "")
    end
    return t
  end
  local function addr(name, t, write)
    return C._data_address(t, name, write, S.world and S.world.backend == "nccl" and "cuda" or nil)
  end
  -- t itself when contiguous (MPI reads and writes it in place), else a
  -- contiguous copy (written back by the caller's post)
  local function contig(t) if t:is_contiguous() then return t end return t:contiguous() end
  local function shape_str(t)
    local s = {}
    for i = 1, t.ndim do s[i] = tostring(t.shape[i]) end
    return "(" .. table.concat(s, ", ") .. ")"
  end
  local function same_layout(name, what, t, ref, refwhat, level)
    if t.dtype ~= ref.dtype then
      fail(level + 1, "%s: %s has dtype %s, but %s has dtype %s", name, what, t.dtype.name, refwhat, ref.dtype.name)
    end
    if t:numel() ~= ref:numel() then
      fail(level + 1, "%s: %s has shape %s (%d elements), but %s has shape %s (%d elements)", name, what,
        shape_str(t), t:numel(), refwhat, shape_str(ref), ref:numel())
    end
  end
  local function check_list(name, what, list, n, ref, refwhat, level)
    if type(list) ~= "table" or T.is_tensor(list) then
      fail(level + 1, "%s: %s must be a list of tensors, got %s", name, what, T.is_tensor(list) and "a tensor" or type(list))
    end
    if #list ~= n then
      fail(level + 1, "%s: %s holds %d tensors, expected %d (the group's size)", name, what, #list, n)
    end
    for i = 1, n do
      check_tensor(name, what .. "[" .. i .. "]", list[i], level + 1)
      same_layout(name, what .. "[" .. i .. "]", list[i], ref, refwhat, level + 1)
    end
  end

  -- the MPI operation of a reduce op on a dtype, and whether the values go
  -- through a float32 buffer (float16 and bfloat16: MPI has no such types)
  local OPS = { sum = true, avg = true, prod = true, product = true, min = true, max = true, band = true,
    bor = true, bxor = true }
  local function mpi_op(name, op, dtype, level)
    if type(op) ~= "string" or not OPS[op] then
      fail(level + 1, "%s: unknown op '%s' (expected one of sum, avg, prod, min, max, band, bor, bxor)", name,
        tostring(op))
    end
    if op == "product" then op = "prod" end
    local dn = dtype.name
    if dn == "bool" then
      if op == "sum" or op == "max" or op == "bor" then return "lor", false end
      if op == "prod" or op == "min" or op == "band" then return "land", false end
      fail(level + 1, "%s: op '%s' is not defined for bool tensors", name, op)
    end
    local float = dtype.is_floating_point
    if op == "avg" and not float then
      fail(level + 1, "%s: op 'avg' needs a floating point tensor, got %s (use 'sum' and divide)", name, dn)
    end
    if (op == "band" or op == "bor" or op == "bxor") and float then
      fail(level + 1, "%s: op '%s' needs an integer or bool tensor, got %s", name, op, dn)
    end
    -- NCCL reduces float16/bfloat16 itself
    local stage = (dn == "float16" or dn == "bfloat16") and not (S.world and S.world.backend == "nccl")
    return op == "avg" and "sum" or op, stage
  end
  -- a buffer for reducing t's values: t itself when it can be; else a
  -- contiguous copy (float32 for float16/bfloat16)
  local function red_buf(t, stage)
    if stage then return t:to(T.float32) end
    return contig(t)
  end

  local function local_world(g) return g.comm == nil end

  -- EMBER_DISTRIBUTED_DEBUG=DETAIL (PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL):
  -- before each collective the ranks compare what they pass (the operation,
  -- its element count, the dtype) with one small all_reduce, so a mismatch
  -- is an error on every rank instead of a truncation or silent garbage.
  -- Off by default: it doubles the number of collectives.
  local DETAIL = os.getenv("EMBER_DISTRIBUTED_DEBUG") == "DETAIL"
  local OPNAMES = { "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather", "scatter", "barrier" }
  local OPCODE, DTCODE = {}, {}
  for i, nm in ipairs(OPNAMES) do OPCODE[nm] = i end
  for i, nm in ipairs { "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64" } do DTCODE[nm] = i end
  local function agree(name, g, count, dtype, level)
    if not DETAIL then return end
    local code, dt = OPCODE[name], dtype and (DTCODE[dtype.name] or 99) or 0
    local buf = T.tensor({ code, count, dt, -code, -count, -dt }, { dtype = T.int64, device = g.device })
    local req = g.B.iallreduce(g.comm, addr(name, buf, true), 6, "int64", "max")
    if not g.B.wait(req, g.timeout, name) then timed_out(name, g, level + 1) end
    local v = buf:tolist()
    local what = {}
    if v[1] ~= code or -v[4] ~= code then
      what[#what + 1] = string.format("the operations (%s .. %s)", OPNAMES[-v[4]] or "?", OPNAMES[v[1]] or "?")
    end
    if v[2] ~= count or -v[5] ~= count then
      what[#what + 1] = string.format("the element counts (%d .. %d)", -v[5], v[2])
    end
    if v[3] ~= dt or -v[6] ~= dt then what[#what + 1] = "the dtypes" end
    if #what > 0 then
      fail(level + 1, "%s: the ranks of the group disagree on %s; this rank (%d) passes %d elements of %s " ..
        "(EMBER_DISTRIBUTED_DEBUG=DETAIL)", name, table.concat(what, " and "), S.world._rank, count,
        dtype and dtype.name or "nothing")
    end
  end
  dist._detail = function() return DETAIL end

  -- -- collectives ------------------------------------------------------------------
  local RED_KEYS = set { "op", "group", "async_op" }
  local BCAST_KEYS = set { "src", "group", "async_op" }
  local REDUCE_KEYS = set { "dst", "op", "group", "async_op" }
  local BARRIER_KEYS = set { "group", "async_op", "device_ids" }
  -- The fast path of all_reduce(t) under LuaJIT: no options (a blocking sum
  -- on the default group), a contiguous CPU tensor of a dtype MPI sums as
  -- it is (not bool, whose sum is a logical or, nor float16/bfloat16, which
  -- are staged). Two FFI calls, which LuaJIT compiles into the caller's
  -- trace: the tensor's buffer (bindings/l_dist.c, which bumps its version
  -- as _data_address does) and the MPI module's entry (bindings/dist/l_mpi.c:
  -- the same MPI_Allreduce or timed schedule as the C functions below take).
  -- Each C function called from Lua ended the trace and cost about 1 us of
  -- a 4 KB all_reduce's 3 (docs/distributed.md). Anything else, or a tensor
  -- the buffer call declines, takes the checked path, which raises.
  local f_ar, f_wb, f_header, f_n, f_dt, f_codes, f_sum
  function fast_setup(backend, size)
    if not jit or backend ~= "mpi" or size < 2 or DETAIL or not (M and M.ffi_api and C._ffi_header) then
      return false
    end
    if f_ar == nil then
      local ok, ffi = pcall(require, "ffi")
      if not ok then return false end
      local api, dtn, opn = M.ffi_api()
      f_ar = ffi.cast("struct { int (*allreduce)(int, void *, int64_t, int, int, double); } *", api).allreduce
      f_wb = ffi.cast("struct { void *(*write_buffer)(void *, int64_t *, int32_t *); } *",
        C._dist_ffi()).write_buffer
      f_header, f_n, f_dt = C._ffi_header, ffi.new("int64_t[1]"), ffi.new("int32_t[1]")
      local code = {}
      for i, nm in ipairs(dtn) do if nm ~= "bool" then code[nm] = i end end
      f_codes = {}
      for id1, dv in pairs(C._layout().dtypes) do f_codes[id1 - 1] = code[dv.name] end
      for i, nm in ipairs(opn) do if nm == "sum" then f_sum = i end end
    end
    return f_sum ~= nil
  end

  -- whether all_reduce(t) takes the FFI path on the world group (tests)
  function dist._all_reduce_ffi() return S.world ~= nil and S.world.fast == true end

  function dist.all_reduce(t, o)
    local g = S.world
    if o == nil and g ~= nil and g.fast and not S.broken then
      local h = f_header(t)
      if h ~= nil then
        local a = f_wb(h, f_n, f_dt)
        local code = f_codes[f_dt[0]]
        if a ~= nil and code ~= nil and f_n[0] > 0 then
          local rc = f_ar(g.comm, a, f_n[0], code, f_sum, g.timeout)
          if rc == 0 then return setmetatable({ name = "all_reduce", group = g, done = true }, Work) end
          if rc == 1 then timed_out("all_reduce", g, 2) end
          error(g.B.last_error(), 2)
        end
      end
    end
    o = check_opts("all_reduce", o, RED_KEYS, 2)
    check_tensor("all_reduce", "tensor", t, 2)
    local g = group_of("all_reduce", o.group, 2)
    local op = o.op or "sum"
    local mop, stage = mpi_op("all_reduce", op, t.dtype, 2)
    if not g then return nil end
    if local_world(g) then return launch("all_reduce", g, {}, nil, nil, o.async_op, 2) end
    agree("all_reduce", g, t:numel(), t.dtype, 2)
    local buf = red_buf(t, stage)
    local avg = op == "avg"
    if not o.async_op and buf == t and g.B.allreduce_timed then
      -- blocking, in place: MPI's blocking form when there is no timeout to
      -- keep (the fastest), else start and wait in one C call
      if g.timeout == math.huge then
        g.B.allreduce(g.comm, addr("all_reduce", t, true), t:numel(), t.dtype.name, mop)
      elseif not g.B.allreduce_timed(g.comm, addr("all_reduce", t, true), t:numel(), t.dtype.name, mop, g.timeout) then
        timed_out("all_reduce", g, 2)
      end
      if avg then T.no_grad(div_by, t, g._size) end
      return launch("all_reduce", g, {}, nil, nil, false, 2)
    end
    local req = g.B.iallreduce(g.comm, addr("all_reduce", buf, true), buf:numel(), buf.dtype.name, mop)
    if buf ~= t then addr("all_reduce", t, true) end
    return launch("all_reduce", g, { req }, { t, buf, avg }, (avg or buf ~= t) and post_reduce or nil, o.async_op, 2)
  end

  local function src_opt(name, o, key, default, level)
    local v = o[key]
    if v == nil then
      if default == nil then fail(level + 1, "%s: option '%s' (a rank) is required", name, key) end
      v = default
    end
    return v
  end
  local function pos_opts(o, key)
    if type(o) == "number" then return { [key] = o } end
    return o
  end

  function dist.broadcast(t, o, o2)
    if type(o) == "number" then o2 = o2 or {}; o2.src = o2.src or o; o = o2 end
    o = check_opts("broadcast", o, BCAST_KEYS, 2)
    check_tensor("broadcast", "tensor", t, 2)
    local g = group_of("broadcast", o.group, 2)
    local src = src_opt("broadcast", o, "src", nil, 2)
    if not g then check_int("broadcast", "src", src, 2) return nil end
    local root = group_rank("broadcast", "src", g, src, 2)
    if local_world(g) then return launch("broadcast", g, {}, nil, nil, o.async_op, 2) end
    agree("broadcast", g, t:numel(), t.dtype, 2)
    local buf = contig(t)
    local me = root == g._rank
    if g.timeout == math.huge and not o.async_op and buf == t then
      g.B.bcast(g.comm, addr("broadcast", t, not me), t:numel(), t.dtype.name, root)
      return launch("broadcast", g, {}, nil, nil, false, 2)
    end
    local req = g.B.ibcast(g.comm, addr("broadcast", buf, not me), buf:numel(), buf.dtype.name, root)
    local post
    if buf ~= t and not me then
      addr("broadcast", t, true)
      post = post_copy
    end
    return launch("broadcast", g, { req }, { t, buf }, post, o.async_op, 2)
  end

  function dist.reduce(t, o, o2)
    if type(o) == "number" then o2 = o2 or {}; o2.dst = o2.dst or o; o = o2 end
    o = check_opts("reduce", o, REDUCE_KEYS, 2)
    check_tensor("reduce", "tensor", t, 2)
    local g = group_of("reduce", o.group, 2)
    local op = o.op or "sum"
    local mop, stage = mpi_op("reduce", op, t.dtype, 2)
    local dst = src_opt("reduce", o, "dst", nil, 2)
    if not g then check_int("reduce", "dst", dst, 2) return nil end
    local root = group_rank("reduce", "dst", g, dst, 2)
    if local_world(g) then return launch("reduce", g, {}, nil, nil, o.async_op, 2) end
    agree("reduce", g, t:numel(), t.dtype, 2)
    local me = root == g._rank
    local buf = red_buf(t, stage)
    local req = g.B.ireduce(g.comm, addr("reduce", buf, me), buf:numel(), buf.dtype.name, mop, root, me)
    local post
    if me and (op == "avg" or buf ~= t) then
      addr("reduce", t, true)
      post = post_reduce
    end
    return launch("reduce", g, { req }, { t, buf, op == "avg" }, post, o.async_op, 2)
  end

  local GA_KEYS = set { "group", "async_op" }
  -- all_gather(tensor_list, tensor): tensor_list[i] gets rank i-1's tensor
  function dist.all_gather(list, t, o)
    o = check_opts("all_gather", o, GA_KEYS, 2)
    check_tensor("all_gather", "tensor", t, 2)
    local g = group_of("all_gather", o.group, 2)
    if not g then return nil end
    check_list("all_gather", "tensor_list", list, g._size, t, "the input tensor", 2)
    if local_world(g) then
      T.no_grad(function() list[1]:copy_(t:view(list[1].shape)) end)
      return launch("all_gather", g, {}, nil, nil, o.async_op, 2)
    end
    agree("all_gather", g, t:numel(), t.dtype, 2)
    local n, k = g._size, t:numel()
    local src = contig(t)
    local out = T.empty({ n * k }, { dtype = t.dtype })
    local req = g.B.iallgather(g.comm, addr("all_gather", src, false), addr("all_gather", out, true), k, t.dtype.name)
    for i = 1, n do addr("all_gather", list[i], true) end
    local post = function()
      for i = 1, n do list[i]:copy_(out:narrow(1, (i - 1) * k + 1, k):view(list[i].shape)) end
    end
    return launch("all_gather", g, { req }, { t, src, out, list }, post, o.async_op, 2)
  end

  -- all_gather_into_tensor(output, input): output holds the group's inputs
  -- one after another (world * input's elements; any shape of that size,
  -- as PyTorch's concatenated (n*d1, ...) or stacked (n, d1, ...) forms)
  function dist.all_gather_into_tensor(out, t, o)
    o = check_opts("all_gather_into_tensor", o, GA_KEYS, 2)
    check_tensor("all_gather_into_tensor", "output_tensor", out, 2)
    check_tensor("all_gather_into_tensor", "input_tensor", t, 2)
    local g = group_of("all_gather_into_tensor", o.group, 2)
    if not g then return nil end
    local n, k = g._size, t:numel()
    if out.dtype ~= t.dtype then
      fail(2, "all_gather_into_tensor: output_tensor has dtype %s, but input_tensor has dtype %s", out.dtype.name,
        t.dtype.name)
    end
    if out:numel() ~= n * k then
      fail(2, "all_gather_into_tensor: output_tensor has shape %s (%d elements), expected %d elements (the group's " ..
        "size %d times input_tensor's %d)", shape_str(out), out:numel(), n * k, n, k)
    end
    if local_world(g) then
      T.no_grad(function() out:copy_(t:reshape(out.shape)) end)
      return launch("all_gather_into_tensor", g, {}, nil, nil, o.async_op, 2)
    end
    agree("all_gather_into_tensor", g, k, t.dtype, 2)
    local src, dst = contig(t), contig(out)
    local req = g.B.iallgather(g.comm, addr("all_gather_into_tensor", src, false),
      addr("all_gather_into_tensor", dst, true), k, t.dtype.name)
    local post
    if dst ~= out then
      addr("all_gather_into_tensor", out, true)
      post = post_copy
    end
    return launch("all_gather_into_tensor", g, { req }, { out, dst, t, src }, post, o.async_op, 2)
  end

  -- the common part of reduce_scatter and reduce_scatter_tensor: send is a
  -- contiguous tensor of n * k elements, out gets its k reduced ones
  local function reduce_scatter_flat(name, out, send, op, g, async, level)
    local mop, stage = mpi_op(name, op, out.dtype, level + 1)
    local k = out:numel()
    if stage then send = send:to(T.float32) end
    local recv = red_buf(out, stage)
    local req = g.B.ireduce_scatter(g.comm, addr(name, send, false), addr(name, recv, true), k, recv.dtype.name, mop)
    local post
    if op == "avg" or recv ~= out then
      if recv ~= out then addr(name, out, true) end
      post = post_reduce
    end
    return launch(name, g, { req }, { out, recv, op == "avg", send }, post, async, level + 1)
  end

  -- reduce_scatter(output, input_list): output = op over ranks of input_list[rank + 1]
  function dist.reduce_scatter(out, list, o)
    o = check_opts("reduce_scatter", o, RED_KEYS, 2)
    check_tensor("reduce_scatter", "output", out, 2)
    local g = group_of("reduce_scatter", o.group, 2)
    local op = o.op or "sum"
    mpi_op("reduce_scatter", op, out.dtype, 2)
    if not g then return nil end
    check_list("reduce_scatter", "input_list", list, g._size, out, "output", 2)
    if local_world(g) then
      T.no_grad(function() out:copy_(list[1]:view(out.shape)) end)
      return launch("reduce_scatter", g, {}, nil, nil, o.async_op, 2)
    end
    agree("reduce_scatter", g, out:numel(), out.dtype, 2)
    local flat = {}
    for i = 1, g._size do flat[i] = list[i]:reshape(-1) end
    return reduce_scatter_flat("reduce_scatter", out, T.cat(flat), op, g, o.async_op, 2)
  end

  -- reduce_scatter_tensor(output, input): input holds group-size blocks of output's size
  function dist.reduce_scatter_tensor(out, t, o)
    o = check_opts("reduce_scatter_tensor", o, RED_KEYS, 2)
    check_tensor("reduce_scatter_tensor", "output", out, 2)
    check_tensor("reduce_scatter_tensor", "input", t, 2)
    local g = group_of("reduce_scatter_tensor", o.group, 2)
    local op = o.op or "sum"
    mpi_op("reduce_scatter_tensor", op, out.dtype, 2)
    if not g then return nil end
    if t.dtype ~= out.dtype then
      fail(2, "reduce_scatter_tensor: input has dtype %s, but output has dtype %s", t.dtype.name, out.dtype.name)
    end
    if t:numel() ~= g._size * out:numel() then
      fail(2, "reduce_scatter_tensor: input has shape %s (%d elements), expected %d elements (the group's size %d " ..
        "times output's %d)", shape_str(t), t:numel(), g._size * out:numel(), g._size, out:numel())
    end
    if local_world(g) then
      T.no_grad(function() out:copy_(t:reshape(out.shape)) end)
      return launch("reduce_scatter_tensor", g, {}, nil, nil, o.async_op, 2)
    end
    agree("reduce_scatter_tensor", g, out:numel(), out.dtype, 2)
    return reduce_scatter_flat("reduce_scatter_tensor", out, contig(t), op, g, o.async_op, 2)
  end

  local A2A_KEYS = set { "group", "async_op", "output_split_sizes", "input_split_sizes" }
  local A2A_LIST_KEYS = set { "group", "async_op" }

  -- the counts each rank sends to each other agree with what that rank
  -- expects (one all_to_all of the counts, then one all_reduce of the
  -- verdict, so every rank raises or none does): an uneven exchange with a
  -- mismatch would truncate or leave a rank waiting
  local function counts_agree(name, g, sends, recvs, level)
    local n = g._size
    local sc, rc = T.tensor(sends, { dtype = T.int64, device = g.device }), T.empty({ n }, { dtype = T.int64,
      device = g.device })
    local req = g.B.ialltoall(g.comm, addr(name, sc, false), addr(name, rc, true), 1, "int64")
    if not g.B.wait(req, g.timeout, name) then timed_out(name, g, level + 1) end
    local got, bad = rc:tolist(), 0
    for i = 1, n do if got[i] ~= recvs[i] then bad = i; break end end
    local verdict = T.tensor({ bad > 0 and 1 or 0 }, { dtype = T.int64, device = g.device })
    req = g.B.iallreduce(g.comm, addr(name, verdict, true), 1, "int64", "max")
    if not g.B.wait(req, g.timeout, name) then timed_out(name, g, level + 1) end
    if bad > 0 then
      fail(level + 1, "%s: rank %d sends %d elements to this rank (%d), which expects %d from it", name,
        g.ranks[bad], got[bad], g._rank, recvs[bad])
    elseif verdict:item() ~= 0 then
      fail(level + 1, "%s: the ranks of the group disagree on the split sizes (another rank's expected " ..
        "counts differ from what this rank sends)", name)
    end
  end

  -- all_to_all(output_list, input_list): output_list[i] gets rank i-1's
  -- input_list[rank + 1]; the blocks may differ in size (each output_list[i]
  -- has the size rank i-1 sends), the dtypes may not
  function dist.all_to_all(outs, ins, o)
    o = check_opts("all_to_all", o, A2A_LIST_KEYS, 2)
    local g = group_of("all_to_all", o.group, 2)
    if not g then return nil end
    if type(ins) ~= "table" or T.is_tensor(ins) or not T.is_tensor(ins[1]) then
      fail(2, "all_to_all: input_tensor_list must be a list of tensors")
    end
    local n = g._size
    for _, l in ipairs { { ins, "input_tensor_list" }, { outs, "output_tensor_list" } } do
      local list, what = l[1], l[2]
      if type(list) ~= "table" or T.is_tensor(list) then
        fail(2, "all_to_all: %s must be a list of tensors, got %s", what, T.is_tensor(list) and "a tensor" or type(list))
      end
      if #list ~= n then fail(2, "all_to_all: %s holds %d tensors, expected %d (the group's size)", what, #list, n) end
      for i = 1, n do
        check_tensor("all_to_all", what .. "[" .. i .. "]", list[i], 2)
        if list[i].dtype ~= ins[1].dtype then
          fail(2, "all_to_all: %s[%d] has dtype %s, but input_tensor_list[1] has dtype %s", what, i,
            list[i].dtype.name, ins[1].dtype.name)
        end
      end
    end
    local sends, recvs, even = {}, {}, true
    for i = 1, n do
      sends[i], recvs[i] = ins[i]:numel(), outs[i]:numel()
      if sends[i] ~= sends[1] or recvs[i] ~= sends[1] then even = false end
    end
    if local_world(g) then
      if sends[1] ~= recvs[1] then
        fail(2, "all_to_all: output_tensor_list[1] has %d elements, but input_tensor_list[1] sends %d", recvs[1], sends[1])
      end
      T.no_grad(function() outs[1]:copy_(ins[1]:view(outs[1].shape)) end)
      return launch("all_to_all", g, {}, nil, nil, o.async_op, 2)
    end
    local flat = {}
    for i = 1, n do flat[i] = ins[i]:reshape(-1) end
    local send = T.cat(flat)
    local total = 0
    for i = 1, n do total = total + recvs[i] end
    local recv = T.empty({ total }, { dtype = ins[1].dtype })
    local req
    if even then
      agree("all_to_all", g, sends[1], ins[1].dtype, 2)
      req = g.B.ialltoall(g.comm, addr("all_to_all", send, false), addr("all_to_all", recv, true), sends[1],
        recv.dtype.name)
    else
      counts_agree("all_to_all", g, sends, recvs, 2)
      req = g.B.ialltoallv(g.comm, addr("all_to_all", send, false), addr("all_to_all", recv, true), sends, recvs,
        recv.dtype.name)
    end
    for i = 1, n do addr("all_to_all", outs[i], true) end
    local post = function()
      local at = 1
      for i = 1, n do
        if recvs[i] > 0 then outs[i]:copy_(recv:narrow(1, at, recvs[i]):view(outs[i].shape)) end
        at = at + recvs[i]
      end
    end
    return launch("all_to_all", g, { req }, { send, recv, outs }, post, o.async_op, 2)
  end

  -- the elements of one row (dim 1) of t: the product of the other sizes
  local function row_elems(t)
    local r = 1
    for d = 2, t.ndim do r = r * t.shape[d] end
    return r
  end
  -- split sizes along dim 1 (rows): a list of n non-negative integers
  -- summing to the tensor's first size; nil: n equal blocks
  local function splits(name, key, sizes, t, what, n, level)
    local rows = t.ndim > 0 and t.shape[1] or 1
    if sizes == nil then
      if rows % n ~= 0 then
        fail(level + 1, "%s: %s has %d rows (dim 1), which the group's size %d does not divide; pass %s",
          name, what, rows, n, key)
      end
      local l = {}
      for i = 1, n do l[i] = math.floor(rows / n) end
      return l
    end
    if type(sizes) ~= "table" or T.is_tensor(sizes) or #sizes ~= n then
      fail(level + 1, "%s: %s must be a list of %d row counts (one per rank), got %s", name, key, n,
        type(sizes) == "table" and not T.is_tensor(sizes) and (#sizes .. " entries") or type(sizes))
    end
    local sum = 0
    for i = 1, n do
      local v = sizes[i]
      if type(v) ~= "number" or v % 1 ~= 0 or v < 0 then
        fail(level + 1, "%s: %s[%d] must be a non-negative integer, got %s", name, key, i, tostring(v))
      end
      sum = sum + v
    end
    if sum ~= rows then
      fail(level + 1, "%s: %s sums to %d rows, but %s has %d rows (dim 1)", name, key, sum, what, rows)
    end
    return sizes
  end

  -- all_to_all_single(output, input, {output_split_sizes, input_split_sizes}):
  -- input's rows (dim 1) are split into blocks, block i to rank i-1 (equal
  -- blocks unless input_split_sizes); output's rows receive rank i-1's block
  -- in block i (equal unless output_split_sizes)
  function dist.all_to_all_single(out, t, o)
    o = check_opts("all_to_all_single", o, A2A_KEYS, 2)
    check_tensor("all_to_all_single", "output", out, 2)
    check_tensor("all_to_all_single", "input", t, 2)
    local g = group_of("all_to_all_single", o.group, 2)
    if not g then return nil end
    if out.dtype ~= t.dtype then
      fail(2, "all_to_all_single: output has dtype %s, but input has dtype %s", out.dtype.name, t.dtype.name)
    end
    local n = g._size
    local uneven = o.output_split_sizes ~= nil or o.input_split_sizes ~= nil
    if not uneven then
      same_layout("all_to_all_single", "output", out, t, "input", 2)
      if t:numel() % n ~= 0 then
        fail(2, "all_to_all_single: input has %d elements, which the group's size %d does not divide", t:numel(), n)
      end
    end
    local isz, osz
    local row_i, row_o = row_elems(t), row_elems(out)
    if uneven then
      if t.ndim == 0 or out.ndim == 0 then
        fail(2, "all_to_all_single: split sizes need tensors of at least one dimension (rows along dim 1)")
      end
      if row_i ~= row_o then
        fail(2, "all_to_all_single: a row of output has %d elements, but a row of input has %d", row_o, row_i)
      end
      isz = splits("all_to_all_single", "input_split_sizes", o.input_split_sizes, t, "input", n, 2)
      osz = splits("all_to_all_single", "output_split_sizes", o.output_split_sizes, out, "output", n, 2)
    end
    if local_world(g) then
      if uneven and isz[1] ~= osz[1] then
        fail(2, "all_to_all_single: output_split_sizes[1] (%d) differs from input_split_sizes[1] (%d)", osz[1], isz[1])
      end
      T.no_grad(function() out:copy_(t:reshape(out.shape)) end)
      return launch("all_to_all_single", g, {}, nil, nil, o.async_op, 2)
    end
    local src, dst = contig(t), contig(out)
    local req
    if not uneven then
      agree("all_to_all_single", g, t:numel(), t.dtype, 2)
      req = g.B.ialltoall(g.comm, addr("all_to_all_single", src, false), addr("all_to_all_single", dst, true),
        math.floor(t:numel() / n), t.dtype.name)
    else
      local sends, recvs = {}, {}
      for i = 1, n do sends[i], recvs[i] = isz[i] * row_i, osz[i] * row_o end
      counts_agree("all_to_all_single", g, sends, recvs, 2)
      req = g.B.ialltoallv(g.comm, addr("all_to_all_single", src, false), addr("all_to_all_single", dst, true),
        sends, recvs, t.dtype.name)
    end
    local post
    if dst ~= out then
      addr("all_to_all_single", out, true)
      post = function() out:copy_(dst) end
    end
    return launch("all_to_all_single", g, { req }, { t, src, out, dst }, post, o.async_op, 2)
  end

  -- gather(tensor, {gather_list = (at dst) list, dst = rank})
  -- the arguments of a rooted collective with a list at the root (gather,
  -- scatter): o checked, the group (nil off it), the root's group rank,
  -- whether this rank is the root, and the list (checked there, refused elsewhere)
  local function rooted(name, t, o, listkey, rootkey, role, what)
    o = check_opts(name, o, set { listkey, rootkey, "group", "async_op" }, 3)
    check_tensor(name, "tensor", t, 3)
    local g = group_of(name, o.group, 3)
    local r = src_opt(name, o, rootkey, 0, 3)
    if not g then return o, nil end
    local root = group_rank(name, rootkey, g, r, 3)
    local me = root == g._rank
    local list = o[listkey]
    if me then
      if list == nil then error(("%s: %s is required on the %s rank"):format(name, listkey, role), 3) end
      check_list(name, listkey, list, g._size, t, what, 3)
    elseif list ~= nil then
      error(("%s: %s must not be given on a rank that is not the %s"):format(name, listkey, role), 3)
    end
    return o, g, root, me, list
  end

  function dist.gather(t, o)
    local g, root, me, list
    o, g, root, me, list = rooted("gather", t, o, "gather_list", "dst", "destination", "the input tensor")
    if not g then return nil end
    if local_world(g) then
      T.no_grad(function() list[1]:copy_(t:view(list[1].shape)) end)
      return launch("gather", g, {}, nil, nil, o.async_op, 2)
    end
    agree("gather", g, t:numel(), t.dtype, 2)
    local n, k = g._size, t:numel()
    local src = contig(t)
    local out = me and T.empty({ n * k }, { dtype = t.dtype }) or nil
    local req = g.B.igather(g.comm, addr("gather", src, false), out and addr("gather", out, true), k, t.dtype.name, root)
    local post
    if me then
      for i = 1, n do addr("gather", list[i], true) end
      post = function()
        for i = 1, n do list[i]:copy_(out:narrow(1, (i - 1) * k + 1, k):view(list[i].shape)) end
      end
    end
    return launch("gather", g, { req }, { t, src, out, list }, post, o.async_op, 2)
  end

  -- scatter(tensor, {scatter_list = (at src) list, src = rank}): tensor
  -- gets scatter_list[rank + 1] of src
  function dist.scatter(t, o)
    local g, root, me, list
    o, g, root, me, list = rooted("scatter", t, o, "scatter_list", "src", "source", "the output tensor")
    if not g then return nil end
    if local_world(g) then
      T.no_grad(function() t:copy_(list[1]:view(t.shape)) end)
      return launch("scatter", g, {}, nil, nil, o.async_op, 2)
    end
    agree("scatter", g, t:numel(), t.dtype, 2)
    local n, k = g._size, t:numel()
    local send
    if me then
      local flat = {}
      for i = 1, n do flat[i] = list[i]:reshape(-1) end
      send = T.cat(flat)
    end
    local recv = contig(t)
    local req = g.B.iscatter(g.comm, send and addr("scatter", send, false), addr("scatter", recv, true), k,
      t.dtype.name, root)
    local post
    if recv ~= t then
      addr("scatter", t, true)
      post = function() t:copy_(recv) end
    end
    return launch("scatter", g, { req }, { t, send, recv }, post, o.async_op, 2)
  end

  function dist.barrier(o)
    o = check_opts("barrier", o, BARRIER_KEYS, 2)
    local g = group_of("barrier", o.group, 2)
    if not g then return nil end
    if local_world(g) then return launch("barrier", g, {}, nil, nil, o.async_op, 2) end
    agree("barrier", g, 0, nil, 2)
    if g.timeout == math.huge and not o.async_op then
      g.B.barrier(g.comm)
      return launch("barrier", g, {}, nil, nil, false, 2)
    end
    return launch("barrier", g, { g.B.ibarrier(g.comm) }, nil, nil, o.async_op, 2)
  end

  -- -- point to point ------------------------------------------------------------------
  local P2P_KEYS = set { "dst", "src", "group", "tag" }
  local function p2p_args(name, key, t, o, o2, level)
    if type(o) == "number" or (o == nil and key == "src") then
      local r = o
      o = o2 or {}
      if type(o) ~= "table" then fail(level + 1, "%s: expected a table of options, got %s", name, type(o)) end
      if o[key] == nil then o[key] = r end
    end
    o = check_opts(name, o, P2P_KEYS, level + 1)
    local other = key == "dst" and "src" or "dst"
    if o[other] ~= nil then fail(level + 1, "%s: unknown option '%s'", name, other) end
    check_tensor(name, "tensor", t, level + 1)
    local g = group_of(name, o.group, level + 1)
    local tag = o.tag or 0
    if type(tag) ~= "number" or tag % 1 ~= 0 or tag < 0 or tag > 32767 then
      fail(level + 1, "%s: tag must be an integer in 0..32767, got %s", name, tostring(tag))
    end
    if g and g.backend == "nccl" and tag ~= 0 then
      fail(level + 1, "%s: the nccl backend has no message tags (tag = %d)", name, tag)
    end
    return o, g, tag
  end
  local function peer_of(name, key, g, r, level)
    local p = group_rank(name, key, g, r, level + 1)
    if p == g._rank then
      fail(level + 1, "%s: %s %d is this process's own rank", name, key, r)
    end
    return p
  end

  local function start_send(name, t, o, o2, async, level)
    local g, tag
    o, g, tag = p2p_args(name, "dst", t, o, o2, level + 1)
    if o.dst == nil then fail(level + 1, "%s: option 'dst' (a rank) is required", name) end
    if not g then return nil end
    local peer = peer_of(name, "dst", g, o.dst, level + 1)
    local buf = contig(t)
    local req = g.B.isend(g.comm, addr(name, buf, false), buf:numel(), buf.dtype.name, peer, tag)
    return launch(name, g, { req }, { t, buf }, nil, async, level + 1)
  end
  local function start_recv(name, t, o, o2, async, level)
    local g, tag
    o, g, tag = p2p_args(name, "src", t, o, o2, level + 1)
    if not g then return nil end
    local peer = -1
    if o.src ~= nil then peer = peer_of(name, "src", g, o.src, level + 1) end
    if peer < 0 and g.backend == "nccl" then
      fail(level + 1, "%s: the nccl backend cannot receive from any source: give src", name)
    end
    if local_world(g) then fail(level + 1, "%s: a world of one process has no other rank to receive from", name) end
    local buf = contig(t)
    local req = g.B.irecv(g.comm, addr(name, buf, true), buf:numel(), buf.dtype.name, peer, tag)
    if buf ~= t then addr(name, t, true) end
    local post = function(w)
      if buf ~= t then t:copy_(buf) end
      w.source_global = w.source and w.source >= 0 and g.ranks[w.source + 1] or nil
    end
    return launch(name, g, { req }, { t, buf }, post, async, level + 1)
  end
  function dist.send(t, o, o2) start_send("send", t, o, o2, false, 2) end
  function dist.isend(t, o, o2) return start_send("isend", t, o, o2, true, 2) end
  -- recv(tensor, [src | {src=, group=, tag=}]) -> the sender's rank
  function dist.recv(t, o, o2)
    local w = start_recv("recv", t, o, o2, false, 2)
    if w == nil then return -1 end
    return w.source_global
  end
  function dist.irecv(t, o, o2) return start_recv("irecv", t, o, o2, true, 2) end

  -- -- DistributedDataParallel --------------------------------------------------------
  T.nn.parallel = T.nn.parallel or {}
  local DDP = T.nn.Module:extend("DistributedDataParallel")
  local DDP_KEYS = set { "bucket_cap_mb", "broadcast_buffers", "find_unused_parameters", "process_group" }
  local FIRST_BUCKET_BYTES = 1024 * 1024 -- PyTorch's first bucket (the first gradients ready) is 1 MiB

  function DDP:init(model, o)
    o = check_opts("DistributedDataParallel", o, DDP_KEYS, 4)
    if type(model) ~= "table" or rawget(model, "_modules") == nil then
      error("DistributedDataParallel: expected an nn.Module to wrap", 4)
    end
    local g = group_of("DistributedDataParallel", o.process_group, 4)
    if not g then error("DistributedDataParallel: this rank is not in process_group", 4) end
    local cap = o.bucket_cap_mb or 25
    if type(cap) ~= "number" or not (cap > 0) then
      fail(4, "DistributedDataParallel: bucket_cap_mb must be a positive number, got %s", tostring(cap))
    end
    self.module = model
    rawset(self, "process_group", g)
    rawset(self, "broadcast_buffers", o.broadcast_buffers ~= false)
    rawset(self, "find_unused_parameters", o.find_unused_parameters == true)
    rawset(self, "require_backward_grad_sync", true)
    local params, names = {}, {}
    for name, p in model:named_parameters() do
      if p.requires_grad then
        params[#params + 1] = p
        names[#names + 1] = name
      end
    end
    rawset(self, "_params", params)
    rawset(self, "_names", names)
    local root = g.ranks[1]
    -- the same start on every rank: rank 0's parameters and buffers
    T.no_grad(function()
      for _, p in ipairs(params) do dist.broadcast(p, { src = root, group = o.process_group }) end
      for _, b in model:named_buffers() do
        if T.is_tensor(b) then dist.broadcast(b, { src = root, group = o.process_group }) end
      end
    end)
    -- buckets: parameters in reverse registration order (roughly the order
    -- backward produces their gradients), one dtype per bucket
    local buckets, where = {}, {}
    local cur, bytes, limit = nil, 0, math.min(FIRST_BUCKET_BYTES, cap * 1024 * 1024)
    for i = #params, 1, -1 do
      local p = params[i]
      local nb = p:numel() * p.dtype.itemsize
      if cur and (cur.dtype ~= p.dtype or (bytes + nb > limit and #cur.params > 0)) then
        cur = nil
        limit = cap * 1024 * 1024
      end
      if not cur then
        cur = { params = {}, offsets = {}, numel = 0, dtype = p.dtype }
        buckets[#buckets + 1] = cur
        bytes = 0
      end
      cur.params[#cur.params + 1] = i
      cur.offsets[#cur.offsets + 1] = cur.numel
      cur.numel = cur.numel + p:numel()
      bytes = bytes + nb
      where[i] = { #buckets, #cur.params }
    end
    for _, b in ipairs(buckets) do
      b.buf = T.zeros({ math.max(b.numel, 1) }, { dtype = b.dtype })
      b.views, b.marked, b.ready = {}, {}, 0
      for k, pi in ipairs(b.params) do
        b.views[k] = b.buf:narrow(1, b.offsets[k] + 1, params[pi]:numel())
      end
    end
    rawset(self, "_buckets", buckets)
    rawset(self, "_where", where)
    rawset(self, "_pending", false)
    -- the hooks hold the wrapper weakly: a wrapper that is collected (or
    -- replaced by another wrap of the same model) stops reducing
    local weak = setmetatable({ ddp = self }, { __mode = "v" })
    local handles = {}
    for i, p in ipairs(params) do
      handles[i] = p:register_post_accumulate_grad_hook(function()
        local me = weak.ddp
        if me then me:_grad_ready(i) end
      end)
    end
    rawset(self, "_hooks", handles)
  end

  function DDP:forward(...)
    local g = self.process_group
    if self.broadcast_buffers and g._size > 1 then
      local root, group = g.ranks[1], (not g.is_world) and g or nil
      T.no_grad(function()
        for _, b in self.module:named_buffers() do
          if T.is_tensor(b) then dist.broadcast(b, { src = root, group = group }) end
        end
      end)
    end
    return self.module(...)
  end

  -- fn() with gradient synchronisation off: its backwards only accumulate
  -- into .grad; the next synchronised backward all-reduces the sums
  function DDP:no_sync(fn, ...)
    if type(fn) ~= "function" then error("no_sync: expected a function, got " .. type(fn), 2) end
    local prev = self.require_backward_grad_sync
    rawset(self, "require_backward_grad_sync", false)
    local res = { n = 0 }
    local function keep(ok, ...)
      res.n = select("#", ...)
      for j = 1, res.n do res[j] = select(j, ...) end
      return ok
    end
    local ok = keep(pcall(fn, ...))
    rawset(self, "require_backward_grad_sync", prev)
    if not ok then error(res[1], 0) end
    return (table.unpack or unpack)(res, 1, res.n)
  end

  local function group_opt(g) if g.is_world then return nil end return g end

  function DDP:_start_backward()
    rawset(self, "_pending", true)
    rawset(self, "_next", 1)
    for _, b in ipairs(self._buckets) do
      b.ready, b.marked, b.work = 0, {}, nil
    end
    local me = self
    C._queue_callback(function() me:_finish_backward() end)
  end

  -- launches the complete buckets in order (every rank issues the same
  -- all-reduces in the same order)
  function DDP:_launch_ready()
    local bs = self._buckets
    while self._next <= #bs and bs[self._next].ready == #bs[self._next].params do
      local b = bs[self._next]
      b.work = dist.all_reduce(b.numel > 0 and b.buf:narrow(1, 1, b.numel) or b.buf,
        { op = "avg", async_op = true, group = group_opt(self.process_group) })
      rawset(self, "_next", self._next + 1)
    end
  end

  function DDP:_grad_ready(i)
    if not self.require_backward_grad_sync then return end
    if not self._pending then self:_start_backward() end
    local w = self._where[i]
    local b, k = self._buckets[w[1]], w[2]
    if b.marked[k] then return end
    b.marked[k] = true
    b.ready = b.ready + 1
    local p = self._params[i]
    T.no_grad(function() b.views[k]:copy_(p.grad:reshape(-1)) end)
    if b.ready == #b.params then self:_launch_ready() end
    -- MPI moves a message only inside an MPI call: each gradient that
    -- arrives gives the buckets in flight a step, so they travel during the
    -- backward instead of all at its end
    if self._next > 1 and M then M.progress() end
  end

  function DDP:_finish_backward()
    rawset(self, "_pending", false)
    local bs = self._buckets
    -- how many buckets were launched while the backward was still running
    rawset(self, "stats", { buckets = #bs, launched_in_backward = self._next - 1 })
    if self._next <= #bs then
      local missing = {}
      for _, b in ipairs(bs) do
        for k, pi in ipairs(b.params) do
          if not b.marked[k] then missing[#missing + 1] = pi end
        end
      end
      if not self.find_unused_parameters then
        -- the buckets already launched complete first (every rank launched
        -- the same ones when the same parameters went unused)
        for _, b in ipairs(bs) do if b.work then b.work:wait() end end
        local names = {}
        for j = 1, math.min(#missing, 8) do names[j] = self._names[missing[j]] end
        error(string.format("DistributedDataParallel: %d parameter(s) got no gradient in this backward " ..
          "(not used to compute the loss): %s%s. Pass find_unused_parameters = true, or make every parameter " ..
          "take part in the output", #missing, table.concat(names, ", "), #missing > 8 and ", ..." or ""), 0)
      end
      T.no_grad(function()
        for _, b in ipairs(bs) do
          for k = 1, #b.params do
            if not b.marked[k] then
              b.views[k]:zero_()
              b.marked[k] = true
              b.ready = b.ready + 1
              b.unused = b.unused or {}
              b.unused[k] = true
            end
          end
        end
      end)
      self:_launch_ready()
    end
    T.no_grad(function()
      for _, b in ipairs(bs) do
        b.work:wait()
        for k, pi in ipairs(b.params) do
          local p = self._params[pi]
          local v = b.views[k]:view(p.shape)
          if p.grad == nil then p.grad = v:clone() else p.grad:copy_(v) end
        end
        b.unused = nil
      end
    end)
  end

  T.nn.parallel.DistributedDataParallel = DDP
  T.nn.DistributedDataParallel = T.nn.DistributedDataParallel or DDP

  -- -- DistributedSampler ------------------------------------------------------------
  local Sampler = {}
  Sampler.__index = Sampler
  local SAMPLER_KEYS = set { "num_replicas", "rank", "shuffle", "seed", "drop_last" }
  function T.data.DistributedSampler(dataset, o, ...)
    require("ember.args").nomore("DistributedSampler", 2, ...)
    o = check_opts("DistributedSampler", o, SAMPLER_KEYS, 2)
    if type(dataset) ~= "table" or not dataset.len then
      error("DistributedSampler: expected a dataset (with len)", 2)
    end
    local R, rank = o.num_replicas, o.rank
    if R == nil or rank == nil then
      if not S.initialized then
        error("DistributedSampler: num_replicas and rank are needed when the default process group is not " ..
          "initialized", 2)
      end
      R = R or S.world._size
      rank = rank or S.world._rank
    end
    if type(R) ~= "number" or R % 1 ~= 0 or R < 1 then
      fail(2, "DistributedSampler: num_replicas must be a positive integer, got %s", tostring(R))
    end
    if type(rank) ~= "number" or rank % 1 ~= 0 or rank < 0 or rank >= R then
      fail(2, "DistributedSampler: invalid rank %s, rank should be in the interval [0, %d]", tostring(rank), R - 1)
    end
    local seed = o.seed or 0
    if type(seed) ~= "number" or seed % 1 ~= 0 then
      fail(2, "DistributedSampler: seed must be an integer, got %s", tostring(seed))
    end
    local n = dataset:len()
    local drop = o.drop_last == true
    local ns
    if drop and n % R ~= 0 then ns = math.ceil((n - R) / R) else ns = math.ceil(n / R) end
    return setmetatable({ dataset = dataset, num_replicas = R, rank = rank, shuffle = o.shuffle ~= false,
      seed = seed, drop_last = drop, epoch = 0, num_samples = ns, total_size = ns * R }, Sampler)
  end
  function Sampler:len() return self.num_samples end
  function Sampler:set_epoch(e)
    if type(e) ~= "number" or e % 1 ~= 0 then error("set_epoch: expected an integer epoch, got " .. tostring(e), 2) end
    self.epoch = e
  end
  -- this rank's positions in the dataset (1-based, int64) for the epoch:
  -- PyTorch's rule (a permutation from seed + epoch, or 1..n; padded by
  -- repeating its start up to a multiple of num_replicas, or cut to one
  -- when drop_last; then every num_replicas-th from position rank + 1)
  function Sampler:indices()
    local n = self.dataset:len()
    local idx
    if self.shuffle then
      local state = T.get_rng_state()
      T.manual_seed(self.seed + self.epoch)
      idx = T.randperm(n)
      T.set_rng_state(state)
    else
      idx = T.arange(1, n + 1, { dtype = T.int64 })
    end
    local total = self.total_size
    if not self.drop_last then
      local pad = total - n
      if pad > 0 then
        local parts = { idx }
        local have = n
        while have < total do
          local take = math.min(n, total - have)
          parts[#parts + 1] = idx:narrow(1, 1, take)
          have = have + take
        end
        idx = T.cat(parts)
      end
    else
      idx = idx:narrow(1, 1, total)
    end
    return idx:view(self.num_samples, self.num_replicas):select(2, self.rank + 1):clone()
  end

  return dist
end
