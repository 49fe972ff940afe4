-- T.cuda (docs/cuda.md): is a device there, streams and events, the
-- caching allocator's numbers, the generator's seed. Every function that
-- needs a device raises, naming itself, why there is none:
--   "memory_allocated: CUDA is not available (no CUDA driver or device found: ...)"
--   "memory_allocated: ember was built without CUDA (...)"
-- Devices are given as an integer (0-based, as CUDA and PyTorch number
-- them), "cuda:N", "cuda" or a device value; nil is cuda:0.
return function(T, C)
  local A = require("ember.argcheck")(T)
  local unpack = table.unpack or unpack
  local cuda = {}
  T.cuda = cuda
  local function pack(...) return { n = select("#", ...), ... } end
  -- the C entries, raising their messages as the engine's other errors
  -- read (no Lua position in front: the message names the function)
  local raw = C
  C = setmetatable({}, { __index = function(_, k)
    local f = raw[k]
    if type(f) ~= "function" or not k:match("^_cuda_") then return f end
    return function(...)
      local r = pack(pcall(f, ...))
      if r[1] then return unpack(r, 2, r.n) end
      error((tostring(r[2]):gsub("^[^\n]-%.lua:%d+: ", "")), 0)
    end
  end })

  local function device_index(op, d)
    if d == nil then return 0 end
    if type(d) == "number" then
      if d ~= math.floor(d) or d < 0 then
        error(string.format("%s: invalid device %s (expected an index >= 0)", op, tostring(d)), 3)
      end
      return d
    end
    if type(d) == "string" or type(d) == "table" then
      local ok, dev = pcall(T.device, d)
      if ok and dev.type == "cuda" then return dev.index end
    end
    error(string.format("%s: expected a cuda device (an index, 'cuda', 'cuda:N' or a device), got %s",
      op, type(d) == "string" and ("'" .. d .. "'") or (type(d) == "table" and tostring(d) or type(d))), 3)
  end
  local function nomore(op, n, ...)
    if select("#", ...) > n then
      local extra = select(n + 1, ...)
      if A.is_opts(extra) then
        local k = next(extra)
        if k ~= nil then error(string.format("%s: unknown option '%s' (%s takes no options)", op, tostring(k), op), 3) end
        error(string.format("%s: takes no options", op), 3)
      end
      error(string.format("%s: takes at most %d argument%s", op, n, n == 1 and "" or "s"), 3)
    end
  end

  function cuda.is_available(...)
    nomore("is_available", 0, ...)
    return C._cuda_device_count() > 0
  end
  function cuda.is_built(...)
    nomore("is_built", 0, ...)
    return C._cuda_built()
  end
  function cuda.device_count(...)
    nomore("device_count", 0, ...)
    return C._cuda_device_count()
  end
  function cuda.current_device(...)
    nomore("current_device", 0, ...)
    C._cuda_check("current_device", 0)
    return 0
  end
  function cuda.synchronize(device, ...)
    nomore("synchronize", 1, device, ...)
    C._cuda_synchronize(device_index("synchronize", device))
  end

  -- memory (the caching allocator's numbers, in bytes)
  local function mem(op, field)
    cuda[op] = function(device, ...)
      nomore(op, 1, device, ...)
      return select(field, C._cuda_memory(op, device_index(op, device)))
    end
  end
  mem("memory_allocated", 1)
  mem("max_memory_allocated", 2)
  mem("memory_reserved", 3)
  mem("max_memory_reserved", 4)
  function cuda.memory_stats(device, ...)
    nomore("memory_stats", 1, device, ...)
    local a, ma, r, mr = C._cuda_memory("memory_stats", device_index("memory_stats", device))
    return { ["allocated_bytes.all.current"] = a, ["allocated_bytes.all.peak"] = ma,
      ["reserved_bytes.all.current"] = r, ["reserved_bytes.all.peak"] = mr }
  end
  function cuda.reset_peak_memory_stats(device, ...)
    nomore("reset_peak_memory_stats", 1, device, ...)
    C._cuda_reset_peak("reset_peak_memory_stats", device_index("reset_peak_memory_stats", device))
  end
  function cuda.empty_cache(...)
    nomore("empty_cache", 0, ...)
    C._cuda_empty_cache()
  end
  function cuda.manual_seed(seed, ...)
    nomore("manual_seed", 1, seed, ...)
    C._cuda_manual_seed("manual_seed", seed, 0)
  end
  function cuda.manual_seed_all(seed, ...)
    nomore("manual_seed_all", 1, seed, ...)
    C._cuda_manual_seed("manual_seed_all", seed, nil)
  end

  -- streams: a Stream wraps the engine's stream (ud; nil for the default
  -- stream of its device). The current stream of each device is this
  -- state's, kept here and told to the engine.
  local Stream = {}
  Stream.__index = Stream
  Stream.__name = "ember.cuda.Stream"
  local default_streams, current = {}, {}
  local function default_stream(d)
    local s = default_streams[d]
    if not s then
      s = setmetatable({ device_index = d, device = T.device("cuda:" .. d) }, Stream)
      default_streams[d] = s
    end
    return s
  end
  local function is_stream(s) return getmetatable(s) == Stream end
  Stream.__tostring = function(s)
    return string.format("<ember.cuda.Stream device=cuda:%d%s>", s.device_index, s.ud and "" or " (default)")
  end
  Stream.__eq = function(a, b) return rawequal(a, b) end

  local stream_opts = A.set { "device", "priority" }
  setmetatable(Stream, { __call = function(_, opts, ...)
    nomore("Stream", 1, opts, ...)
    local o = A.check_opts("Stream", opts, stream_opts, 2)
    local d = device_index("Stream", o.device)
    local prio = o.priority or 0
    if type(prio) ~= "number" or prio ~= math.floor(prio) then
      error("Stream: priority must be an integer", 2)
    end
    return setmetatable({ ud = C._cuda_stream_new(d, prio), device_index = d,
      device = T.device("cuda:" .. d), priority = prio }, Stream)
  end })
  cuda.Stream = Stream

  function Stream:synchronize(...)
    nomore("synchronize", 0, ...)
    C._cuda_stream_synchronize(self.device_index, self.ud)
  end
  function Stream:query(...)
    nomore("query", 0, ...)
    return C._cuda_stream_query(self.device_index, self.ud)
  end
  function Stream:wait_event(ev, ...)
    nomore("wait_event", 1, ev, ...)
    ev:wait(self)
  end
  function Stream:record_event(ev, ...)
    nomore("record_event", 1, ev, ...)
    ev = ev or cuda.Event()
    ev:record(self)
    return ev
  end
  function Stream:wait_stream(other, ...)
    nomore("wait_stream", 1, other, ...)
    self:wait_event(other:record_event())
  end

  function cuda.current_stream(device, ...)
    nomore("current_stream", 1, device, ...)
    local d = device_index("current_stream", device)
    C._cuda_check("current_stream", d)
    return current[d] or default_stream(d)
  end
  function cuda.default_stream(device, ...)
    nomore("default_stream", 1, device, ...)
    local d = device_index("default_stream", device)
    C._cuda_check("default_stream", d)
    return default_stream(d)
  end
  function cuda.set_stream(s, ...)
    nomore("set_stream", 1, s, ...)
    if not is_stream(s) then error("set_stream: expected a T.cuda.Stream, got " .. type(s), 2) end
    C._cuda_set_stream(s.device_index, s.ud)
    current[s.device_index] = s.ud and s or nil
  end
  -- T.cuda.stream(s, fn, ...): fn(...) with s current on its device, the
  -- previous stream restored afterwards (also when fn raises)
  function cuda.stream(s, fn, ...)
    if not is_stream(s) then error("stream: expected a T.cuda.Stream, got " .. type(s), 2) end
    if type(fn) ~= "function" then error("stream: expected a function for argument #2, got " .. type(fn), 2) end
    local d = s.device_index
    local prev = current[d]
    cuda.set_stream(s)
    local res = pack(pcall(fn, ...))
    cuda.set_stream(prev or default_stream(d))
    if not res[1] then error(res[2], 0) end
    return unpack(res, 2, res.n)
  end

  -- events
  local Event = {}
  Event.__index = Event
  Event.__name = "ember.cuda.Event"
  local event_opts = A.set { "enable_timing", "blocking", "interprocess", "device" }
  setmetatable(Event, { __call = function(_, opts, ...)
    nomore("Event", 1, opts, ...)
    local o = A.check_opts("Event", opts, event_opts, 2)
    if o.interprocess then error("Event: interprocess events are not supported", 2) end
    if o.blocking then error("Event: blocking events are not supported (synchronize() waits)", 2) end
    local d = device_index("Event", o.device)
    return setmetatable({ ud = C._cuda_event_new(d, o.enable_timing and true or false),
      device_index = d, enable_timing = o.enable_timing and true or false }, Event)
  end })
  cuda.Event = Event

  local function stream_of(op, s, d)
    if s == nil then return current[d] and current[d].ud or nil end
    if not is_stream(s) then error(op .. ": expected a T.cuda.Stream, got " .. type(s), 3) end
    return s.ud
  end
  function Event:record(s, ...)
    nomore("record", 1, s, ...)
    C._cuda_event_record(self.ud, stream_of("record", s, self.device_index))
  end
  function Event:wait(s, ...)
    nomore("wait", 1, s, ...)
    C._cuda_event_wait(self.ud, self.device_index, stream_of("wait", s, self.device_index))
  end
  function Event:synchronize(...)
    nomore("synchronize", 0, ...)
    C._cuda_event_synchronize(self.ud)
  end
  function Event:query(...)
    nomore("query", 0, ...)
    return C._cuda_event_query(self.ud)
  end
  function Event:elapsed_time(other, ...)
    nomore("elapsed_time", 1, other, ...)
    if getmetatable(other) ~= Event then error("elapsed_time: expected a T.cuda.Event, got " .. type(other), 2) end
    return C._cuda_event_elapsed(self.ud, other.ud)
  end

  -- t:record_stream(s)
  raw._methods.record_stream = function(t, s, ...)
    nomore("record_stream", 2, t, s, ...)
    if not is_stream(s) then error("record_stream: expected a T.cuda.Stream, got " .. type(s), 2) end
    C._cuda_record_stream(t, s.ud)
  end

  -- T.backends.cuda.matmul.allow_tf32 (torch.backends.cuda.matmul.allow_tf32):
  -- float32 products on cuda may use TF32 tensor cores; off by default, as
  -- PyTorch's. Any other key, or a value that is not a boolean, is an error.
  T.backends = T.backends or {}
  T.backends.cuda = T.backends.cuda or {}
  T.backends.cuda.matmul = setmetatable({}, {
    __index = function(_, k)
      if k == "allow_tf32" then return raw._cuda_allow_tf32() end
      error(string.format("T.backends.cuda.matmul: unknown setting '%s' (expected allow_tf32)", tostring(k)), 2)
    end,
    __newindex = function(_, k, v)
      if k ~= "allow_tf32" then
        error(string.format("T.backends.cuda.matmul: unknown setting '%s' (expected allow_tf32)", tostring(k)), 2)
      end
      if type(v) ~= "boolean" then
        error("T.backends.cuda.matmul.allow_tf32: expected a boolean, got " .. type(v), 2)
      end
      raw._cuda_allow_tf32(v)
    end,
  })

  -- T.backends.cudnn (torch.backends.cudnn): conv2d on cuda through cuDNN.
  -- enabled (default true; false: im2col + cuBLAS), allow_tf32 (default
  -- false, unlike PyTorch's true: float32 convolutions stay float32, as
  -- matmul's), deterministic (default false), benchmark (default false:
  -- cuDNN's timed choice, found once per problem); is_available()
  -- (libcudnn loads: needs a build with CUDA, not a device) and version()
  -- (nil when not available). Unknown keys and non-boolean values are
  -- errors.
  local CUDNN = { enabled = 1, allow_tf32 = 2, deterministic = 3, benchmark = 4 }
  local function cudnn_key(k)
    local i = CUDNN[k]
    if not i then
      error(string.format("T.backends.cudnn: unknown setting '%s' (expected enabled, allow_tf32, " ..
        "deterministic, benchmark, is_available or version)", tostring(k)), 3)
    end
    return i
  end
  local cudnn_fns = {
    is_available = function() return raw._cuda_cudnn_version() > 0 end,
    version = function()
      local v = raw._cuda_cudnn_version()
      if v > 0 then return v end
      return nil
    end,
  }
  T.backends.cudnn = setmetatable({}, {
    __index = function(_, k)
      if cudnn_fns[k] then return cudnn_fns[k] end
      return raw._cuda_cudnn(cudnn_key(k))
    end,
    __newindex = function(_, k, v)
      local i = cudnn_key(k)
      if type(v) ~= "boolean" then
        error(string.format("T.backends.cudnn.%s: expected a boolean, got %s", k, type(v)), 2)
      end
      raw._cuda_cudnn(i, v)
    end,
  })
end
