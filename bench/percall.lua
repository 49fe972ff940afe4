-- bench/percall.lua: the per-call workloads, once, for every Lua runner of
-- them: worker.lua (ember), floor_worker.lua (bench/floor.c's minimal
-- binding) and percall_loop.lua (thread time and callgrind counts).
-- percall(T, S) -> setups, bodies: setups[NAME]() fills the state table S
-- with T's tensors; bodies[NAME](n) makes n calls. T is ember or the floor
-- module; S is the caller's (emptied, never replaced, between workloads).
return function(T, S)
  local setups = {
    percall_add1 = function() S.a, S.b = T.rand(1), T.rand(1) end,
    percall_index = function() S.t = T.rand(4, 4) end,
    percall_slice = function() S.t = T.rand(4, 4) end,
    percall_transpose = function() S.t = T.rand(4, 4) end,
    percall_view = function() S.t = T.rand(4, 4) end,
    percall_shape = function() S.t = T.rand(4, 4) end,
    percall_tensor = function() end,
    percall_item = function() S.t = T.rand(1) end,
  }
  local bodies = {
    percall_add1 = function(n) local a, b = S.a, S.b; for _ = 1, n do local _ = a + b end end,
    percall_index = function(n) local t = S.t; for _ = 1, n do local _ = t[1] end end,
    percall_slice = function(n) local t, k = S.t, { {}, { 2, 3 } }; for _ = 1, n do local _ = t[k] end end,
    percall_transpose = function(n) local t = S.t; for _ = 1, n do local _ = t:transpose(1, 2) end end,
    percall_view = function(n) local t = S.t; for _ = 1, n do local _ = t:view(-1) end end,
    percall_shape = function(n) local t = S.t; for _ = 1, n do local _ = t.shape end end,
    percall_tensor = function(n) for _ = 1, n do local _ = T.tensor { 1, 2, 3 } end end,
    percall_item = function(n) local t = S.t; for _ = 1, n do local _ = t:item() end end,
  }
  return setups, bodies
end
