-- Views and layout: the parts written in Lua on top of ember.core (l_view.c,
-- l_index.c): the *_as forms, and the registration of T.newaxis with the
-- index parser.
return function(T, C)
  local M = C._methods

  -- t:view_as(other) == t:view(other.shape), and so on.
  local function shape_of(op, other)
    if not T.is_tensor(other) then
      error(("%s: expected a tensor for argument #2, got %s"):format(op, type(other)), 3)
    end
    return other.shape
  end
  local nomore = require("ember.args").nomore
  function M.view_as(t, other, ...)
    nomore("view_as", 2, ...)
    return t:view(shape_of("view_as", other))
  end
  function M.reshape_as(t, other, ...)
    nomore("reshape_as", 2, ...)
    return t:reshape(shape_of("reshape_as", other))
  end
  function M.expand_as(t, other, ...)
    nomore("expand_as", 2, ...)
    return t:expand(shape_of("expand_as", other))
  end

  -- T.newaxis (made in tensor.lua) is the sentinel the index parser knows.
  C._set_newaxis(T.newaxis)
end
