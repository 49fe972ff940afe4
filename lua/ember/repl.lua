-- The interactive prompt of bin/ember: T is ember; expressions print their
-- values (as "=expr" does in the plain luajit prompt, automatically).
T = require "ember"
io.write("ember ", T.__version or "0.1", " on ", jit and jit.version or _VERSION,
  ": T = require 'ember' is loaded. Type expressions; Ctrl-D leaves.\n")
