-- The Lua side of examples/host/host.c: edits the host's buffer in place.
-- Arguments: the tensor over the host's 4x6 float buffer, and the buffer's
-- address (to show that no copy was made).
local frame, address = ...
local T = require "ember"

assert(T.is_tensor(frame) and frame.dtype == T.float32)
assert(frame:data_ptr() == address, "the tensor is the host's memory, not a copy")

frame[2]:fill_(7)            -- a view of row 2
frame[3][4] = -1             -- one element
local ok, ffi = pcall(require, "ffi")
if ok then
  frame:data()[0] = 100      -- LuaJIT: a typed pointer into the same memory
else
  frame[1][1] = 100
end

local row4 = frame[4]        -- a view: the host gets it back
for i = 1, #row4 do row4[i] = row4[i]:item() * 2 end
return row4
