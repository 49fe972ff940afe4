-- math: elementwise ops, type promotion, metamethods (issue 5): the parts written in Lua.
return function(T, C)
end
