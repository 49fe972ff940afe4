-- luarocks --lua-version=5.1 make ember-scm-1.rockspec
-- (from the checkout; as root for the system tree /usr/local, where
-- Debian's luajit looks; or --local / --tree DIR. Debian 12's luarocks
-- defaults to Lua 5.2: --lua-version=5.1, or `luarocks-5.1`, picks the
-- tree LuaJIT reads.)
-- Builds with CMake (Debian: cmake, libluajit-5.1-dev, libopenblas-dev) and
-- installs the Lua module only: ember/core.so under the tree's lib/lua/5.1
-- and lua/ember/*.lua under share/lua/5.1. `make install` also installs
-- libember, the headers and ember.pc for C hosts (docs/install.md).
rockspec_format = "3.0"
package = "ember"
version = "scm-1"
source = {
  -- `luarocks make` builds the checkout it runs in; this is only read by
  -- `luarocks install`/`download` for a published rock.
  url = "git+file://.",
}
description = {
  summary = "A tensor engine in C, scripted from LuaJIT, with PyTorch's semantics",
  detailed = [[
ember is a tensor engine written in C and scripted from LuaJIT: refcounted
storages and strided views exposed to Lua as userdata, PyTorch's semantics
with 1-based positions.]],
  license = "BSD-3-Clause",
}
dependencies = {
  "lua >= 5.1, < 5.2",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    EMBER_INSTALL_ENGINE = "OFF",
    EMBER_INSTALL_LUA_DIR = "$(LUADIR)",
    EMBER_INSTALL_LUA_CDIR = "$(LIBDIR)",
  },
}
