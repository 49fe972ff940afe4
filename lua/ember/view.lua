-- Views and layout: the parts written in Lua on top of ember.core (l_view.c,
-- l_index.c): the *_as forms, and the registration of T.newaxis with the
-- index parser.
return function(T, C)
  local M = C._methods

  -- t:view_as(other) == t:view(other.shape), and so on.
  function M.view_as(t, other) return t:view(other.shape) end
  function M.reshape_as(t, other) return t:reshape(other.shape) end
  function M.expand_as(t, other) return t:expand(other.shape) end

  -- T.newaxis (made in tensor.lua) is the sentinel the index parser knows.
  C._set_newaxis(T.newaxis)
end
