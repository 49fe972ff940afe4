-- math: elementwise ops, type promotion, metamethods (issue 5).
-- Everything is bound in C (bindings/l_math.c): the methods and T.functions,
-- their in-place variants and the arithmetic metamethods of the tensor
-- metatable. Nothing is left for Lua to add here yet; docs/math.md is the
-- reference.
return function(T, C)
end
