-- T.train: the loop a person watches (docs/training.md).
--   ProgressBar  a one-line bar for a loop: count, rate, ETA and running
--                metrics, redrawn in place on a terminal and written as
--                plain lines (every tenth of the way and at the end) when
--                stdout is a file or a pipe.
--   CSVLogger    one row of metrics per call, header from the first row.
--   plot_curves  loss / accuracy curves as a PNG (bindings/l_plot.c).
--   clock        a monotonic clock in seconds.
return function(T, C)
  local train = {}
  T.train = train

  -- LuaJIT's FFI for a monotonic clock and isatty; without it (the Lua 5.4
  -- module) os.clock and "not a terminal" serve
  local has_ffi, ffi = pcall(require, "ffi")
  local ok_ts, ts = false, nil
  if has_ffi then
    -- each declaration alone: another module may have declared one already
    -- (then ours fails and theirs serves)
    pcall(ffi.cdef, "int isatty(int fd);")
    pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } ember_timespec;")
    pcall(ffi.cdef, "int clock_gettime(int clk, ember_timespec *ts);")
    ok_ts, ts = pcall(ffi.new, "ember_timespec")
  end
  local ok_clock = ok_ts and pcall(function() return ffi.C.clock_gettime(1, ts) end)
  function train.clock()
    if not ok_clock then return os.clock() end -- CPU time: monotonic, if coarse
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
  -- is fd 1 (io.stdout) a terminal? EMBER_PROGRESS=plain|tty overrides
  function train.isatty()
    local env = os.getenv("EMBER_PROGRESS")
    if env == "plain" then return false end
    if env == "tty" then return true end
    if not has_ffi then return false end
    local ok, r = pcall(function() return ffi.C.isatty(1) end)
    return ok and r == 1
  end

  local function hms(s)
    if s ~= s or s == math.huge then return "?" end
    s = math.floor(s + 0.5)
    local h, m = math.floor(s / 3600), math.floor(s / 60) % 60
    if h > 0 then return string.format("%d:%02d:%02d", h, m, s % 60) end
    return string.format("%d:%02d", m, s % 60)
  end
  train._hms = hms

  local function fmt_metric(v)
    if type(v) ~= "number" then return tostring(v) end
    if v ~= 0 and (math.abs(v) < 1e-3 or math.abs(v) >= 1e5) then return string.format("%.3e", v) end
    return string.format("%.4f", v)
  end

  -- -- ProgressBar ------------------------------------------------------------------
  local Bar = {}
  Bar.__index = Bar
  -- o: total (steps), desc, width (of the bar, 25), out (a file, io.stdout),
  -- tty (force in-place drawing on or off), min_interval (seconds between
  -- redraws on a terminal, 0.1)
  function train.ProgressBar(o)
    o = o or {}
    local self = setmetatable({
      total = o.total, desc = o.desc or "", width = o.width or 25, out = o.out or io.stdout,
      n = 0, metrics = {}, order = {}, start = train.clock(), last_draw = -1, next_plain = 0.1,
      min_interval = o.min_interval or 0.1, closed = false,
    }, Bar)
    if o.tty ~= nil then self.tty = o.tty else self.tty = (o.out == nil or o.out == io.stdout) and train.isatty() end
    return self
  end

  -- set metrics shown after the bar ({loss = 0.31, acc = 0.9}); numbers
  -- are shown as given (keep running averages yourself, or use avg=)
  function Bar:set(metrics)
    for k, v in pairs(metrics or {}) do
      if self.metrics[k] == nil then self.order[#self.order + 1] = k end
      self.metrics[k] = v
    end
    table.sort(self.order)
  end

  function Bar:line()
    local el = train.clock() - self.start
    local rate = el > 0 and self.n / el or 0
    local parts = { self.desc ~= "" and self.desc or nil }
    if self.total and self.total > 0 then
      local frac = math.min(self.n / self.total, 1)
      local full = math.floor(frac * self.width + 1e-9)
      parts[#parts + 1] = "[" .. string.rep("=", full) .. (full < self.width and ">" or "")
        .. string.rep(" ", math.max(self.width - full - 1, 0)) .. "]"
      parts[#parts + 1] = string.format("%d/%d %3d%%", self.n, self.total, math.floor(frac * 100))
    else
      parts[#parts + 1] = tostring(self.n)
    end
    parts[#parts + 1] = string.format("%.1f it/s", rate)
    if self.closed then
      parts[#parts + 1] = "in " .. hms(el)
    elseif self.total then
      parts[#parts + 1] = "ETA " .. hms(rate > 0 and (self.total - self.n) / rate or math.huge)
    end
    for _, k in ipairs(self.order) do parts[#parts + 1] = k .. " " .. fmt_metric(self.metrics[k]) end
    return table.concat(parts, "  ")
  end

  function Bar:draw(force)
    local now = train.clock()
    if self.tty then
      if not force and now - self.last_draw < self.min_interval then return end
      self.last_draw = now
      self.out:write("\r\27[K", self:line())
      self.out:flush()
    else
      -- plain lines at each tenth of the way; the last one is close()'s
      local frac = self.total and self.total > 0 and self.n / self.total or 0
      if force or (frac < 1 and frac >= self.next_plain - 1e-12) then
        while frac >= self.next_plain - 1e-12 do self.next_plain = self.next_plain + 0.1 end
        self.out:write(self:line(), "\n")
        self.out:flush()
      end
    end
  end

  -- advance by k steps (1) and set metrics
  function Bar:update(k, metrics)
    if type(k) == "table" then k, metrics = 1, k end
    self.n = self.n + (k or 1)
    if metrics then self:set(metrics) end
    self:draw(false)
  end

  -- final line (with total time), ending the bar's line
  function Bar:close(metrics)
    if self.closed then return end
    if metrics then self:set(metrics) end
    self.closed = true
    self:draw(true)
    if self.tty then
      self.out:write("\n")
      self.out:flush()
    end
    self.elapsed = train.clock() - self.start
  end

  -- -- CSVLogger --------------------------------------------------------------------
  local CSV = {}
  CSV.__index = CSV
  -- fields: the column order (default: the first row's keys, sorted)
  function train.CSVLogger(path, fields)
    local f, err = io.open(path, "w")
    if not f then error("CSVLogger: cannot open " .. path .. ": " .. tostring(err), 2) end
    return setmetatable({ path = path, file = f, fields = fields, rows = {} }, CSV)
  end
  local function cell(v)
    if v == nil then return "" end
    if type(v) == "number" then
      if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
      local short = string.format("%.15g", v) -- the shortest of these that reads back exactly
      if tonumber(short) == v then return short end
      return string.format("%.17g", v)
    end
    if T.is_tensor(v) then return cell(v:item()) end
    local s = tostring(v)
    if s:find('[,"\n]') then s = '"' .. s:gsub('"', '""') .. '"' end
    return s
  end
  function CSV:log(row)
    if not self.fields then
      self.fields = {}
      for k in pairs(row) do self.fields[#self.fields + 1] = k end
      table.sort(self.fields)
    end
    if not self.header then
      local h = {}
      for i, k in ipairs(self.fields) do h[i] = cell(k) end
      self.file:write(table.concat(h, ","), "\n")
      self.header = true
    end
    local out = {}
    for i, k in ipairs(self.fields) do out[i] = cell(row[k]) end
    self.file:write(table.concat(out, ","), "\n")
    self.file:flush()
    self.rows[#self.rows + 1] = row
  end
  function CSV:close()
    if self.file then self.file:close() end
    self.file = nil
  end

  -- -- plot_curves -----------------------------------------------------------------------
  local PALETTE = { { 31, 119, 180 }, { 214, 39, 40 }, { 44, 160, 44 }, { 255, 127, 14 }, { 148, 103, 189 } }
  -- panels: an array of {series = {{values = {...}, color = {r, g, b}, label = "train"}},
  -- ymin =, ymax =, title = "loss"} or of plain arrays of series values;
  -- written as a PNG of width x height. A series with x = {...} is drawn
  -- against those x (the panel's xmin =, xmax = override the range);
  -- points = true makes it a scatter of dots.
  function train.plot_curves(path, panels, o)
    o = o or {}
    local ps = {}
    for i, p in ipairs(panels) do
      local series = p.series or p
      local ss = {}
      for j, s in ipairs(series) do
        local vals = s.values or s
        ss[j] = { values = vals, color = s.color or PALETTE[(j - 1) % #PALETTE + 1], label = s.label,
                  x = s.x, points = s.points }
      end
      ps[i] = { series = ss, ymin = p.ymin, ymax = p.ymax, xmin = p.xmin, xmax = p.xmax, title = p.title }
    end
    return C._plot_png(path, o.width or 400 * #ps, o.height or 300, ps)
  end
  return train
end
