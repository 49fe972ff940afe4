-- reductions and linear algebra (issue 5): the parts written in Lua.
return function(T, C)
end
