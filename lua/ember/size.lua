-- T.Size: the shape of a tensor, a Lua array of sizes with PyTorch's
-- behaviour: #s, s[i], s == T.Size{2, 3}, tostring "ember.Size([2, 3])",
-- s:numel().
return function(T, C)
  local mt = C._Size_mt
  local methods = {}
  mt.__index = methods
  mt.__name = "ember.Size"

  function methods.numel(s)
    local n = 1
    for i = 1, #s do n = n * s[i] end
    return n
  end

  function methods.totable(s)
    local t = {}
    for i = 1, #s do t[i] = s[i] end
    return t
  end

  mt.__eq = function(a, b)
    if #a ~= #b then return false end
    for i = 1, #a do
      if a[i] ~= b[i] then return false end
    end
    return true
  end

  mt.__tostring = function(s)
    local parts = {}
    for i = 1, #s do parts[i] = string.format("%d", s[i]) end
    return "ember.Size([" .. table.concat(parts, ", ") .. "])"
  end

  mt.__concat = function(a, b)
    return tostring(a) .. tostring(b)
  end

  -- T.Size{2, 3} or T.Size(2, 3)
  T.Size = setmetatable({}, {
    __call = function(_, first, ...)
      local src = type(first) == "table" and first or { first, ... }
      local s = {}
      for i = 1, #src do
        local v = src[i]
        if type(v) ~= "number" or v ~= math.floor(v) or v < 0 then
          error(string.format("Size: expected non-negative integers, got %s at [%d]",
            tostring(v), i), 2)
        end
        s[i] = v
      end
      return setmetatable(s, mt)
    end,
  })
  local nomore = require("ember.args").nomore
  T.is_size = function(s, ...)
    nomore("is_size", 1, ...)
    return getmetatable(s) == mt
  end
end
