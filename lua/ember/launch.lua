-- lua/ember/launch.lua: how bin/ember runs a script in a process started by
-- an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE; docs/distributed.md).
--   luajit lua/ember/launch.lua script.lua args...  |  -e 'chunk' args...
-- The script runs as the main chunk would (arg[0] is the script, ... its
-- arguments). When it raises, the error and its traceback are written as
-- luajit writes them and, if the process group was initialized, the whole
-- job is aborted (MPI_Abort) at once, as torchrun ends the other workers:
-- otherwise the other ranks would wait in their next collective until the
-- group's timeout.
local unpack = table.unpack or unpack
local script, chunk, err, first = arg[1], nil, nil, 2
if script == "-e" then
  chunk, err = load(arg[2] or "", "=(command line)")
  script, first = "-e", 3
elseif script == nil then
  io.stderr:write("usage: luajit lua/ember/launch.lua script.lua [args...]\n")
  os.exit(1)
else
  chunk, err = loadfile(script)
end
if not chunk then
  io.stderr:write((arg[-1] or "lua"), ": ", tostring(err), "\n")
  os.exit(1)
end
local newarg = { [-1] = arg[-1], [0] = script }
for i = first, #arg do newarg[#newarg + 1] = arg[i] end
arg = newarg
local ok, e = xpcall(function() return chunk(unpack(newarg, 1, #newarg)) end, debug.traceback)
if not ok then
  io.stderr:write((newarg[-1] or "lua"), ": ", tostring(e), "\n")
  io.stderr:flush()
  local T = package.loaded["ember"]
  if T and T.distributed and T.distributed.is_initialized() then T.distributed._abort(1) end
  os.exit(1)
end
