-- views: narrow/select/transpose/permute/view/reshape/... (issue 3): the parts written in Lua.
return function(T, C)
end
