-- creation: arange/linspace/logspace/eye and the random generator (issue 2): the parts written in Lua.
return function(T, C)
end
