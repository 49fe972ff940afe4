-- creation: arange/linspace/logspace/eye and the random generator (issue 2): the parts written in Lua.
return function(T, C)
  -- PyTorch's memory-format constants, for memory_format = options
  T.preserve_format, T.contiguous_format = "preserve", "contiguous"
end
