-- the index family and assembling: index_select/gather/scatter/cat/stack/split (issue 4): the parts written in Lua.
return function(T, C)
end
