#!/bin/sh
# tests/install_test.sh BUILD_DIR -- run by ctest as the test "install".
# `make install` into a temporary DESTDIR (PREFIX=/usr/local), then uses the
# installed files only: luajit with nothing but that prefix's Lua paths, run
# outside the source tree, requires ember and makes a tensor; a small C host
# compiles against the installed ember.pc and runs; the rockspec loads and
# names the install dirs. EMBER_TEST_LUAROCKS=1 also runs `luarocks make`
# into a temporary tree (a full rebuild, so not by default).
# Prints "ok NAME" / "FAIL NAME" and ends with "C-CASES: P passed, F failed".
build=$(cd "${1:-build}" && pwd) || exit 1
# Under `make test-asan` the sanitizer runtime is preloaded: keep it for what
# loads ember (luajit, the C host) and away from the tools (cc, make, cmake),
# whose own leaks are none of our business.
# (not the build tree's ember/core.so that test-asan also preloads: the
# installed copy must be the one that runs)
preload=$(printf '%s\n' ${LD_PRELOAD:-} | grep -v 'ember/core\.so$' | tr '\n' ' ')
unset LD_PRELOAD
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; printf '%s\n' "$2" | sed 's/^/  /'; }
check() { name=$1; shift; if out=$("$@" 2>&1); then ok "$name"; else bad "$name" "$out"; fi; }

# PREFIX=/usr (Debian's own layout, multiarch): ember/core.so and the Lua
# files must land on LuaJIT's default /usr paths. (First, so that the build
# is left configured for the default prefix by the install below.)
usr=$tmp/usr-root
check "make install PREFIX=/usr puts the module on LuaJIT's default /usr paths" sh -c "
  make -s --no-print-directory -C '$src' install BUILD='$build' PREFIX=/usr DESTDIR='$usr' >/dev/null &&
  USR='$usr' luajit -e '
    local root = os.getenv(\"USR\")
    local function under(paths)
      local r = {}
      for t in paths:gmatch(\"[^;]+\") do
        if t:sub(1, 5) == \"/usr/\" and t:sub(1, 11) ~= \"/usr/local/\" then r[#r + 1] = root .. t end
      end
      return table.concat(r, \";\")
    end
    assert(package.searchpath(\"ember.core\", under(package.cpath)), \"core.so not on the /usr cpath\")
    assert(package.searchpath(\"ember\", under(package.path)), \"init.lua not on the /usr path\")'" 
root=$tmp/root
p=$root/usr/local
check "make install PREFIX=/usr/local DESTDIR=..." \
  make -s --no-print-directory -C "$src" install BUILD="$build" PREFIX=/usr/local DESTDIR="$root"

missing=""
for f in lib/libember.so lib/libember.a include/ember.h include/ember_lua.h \
         lib/lua/5.1/ember/core.so share/lua/5.1/ember/init.lua \
         share/lua/5.1/ember/repl.lua lib/pkgconfig/ember.pc; do
  [ -f "$p/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "installed files are where Debian's LuaJIT and pkg-config look"
else bad "installed files" "missing:$missing"; fi

# The install dirs are on Debian's default LuaJIT paths (so a plain
# `luajit -e 'require "ember"'` works after a real install).
check "share/lua/5.1 and lib/lua/5.1 are on LuaJIT's default paths" luajit -e '
  assert(package.path:find("/usr/local/share/lua/5.1/?.lua", 1, true), package.path)
  assert(package.path:find("/usr/local/share/lua/5.1/?/init.lua", 1, true), package.path)
  assert(package.cpath:find("/usr/local/lib/lua/5.1/?.so", 1, true), package.cpath)'

check "luajit requires the installed ember (only its paths) and makes a tensor" \
  env -u EMBER_BUILD LD_PRELOAD="$preload" P="$p" LUA_PATH="$p/share/lua/5.1/?.lua;$p/share/lua/5.1/?/init.lua" \
  LUA_CPATH="$p/lib/lua/5.1/?.so" sh -c 'cd "$1" && luajit -e "
    local P = os.getenv(\"P\")
    local T = require \"ember\"
    local where = package.searchpath(\"ember\", package.path)
    assert(where:sub(1, #P) == P, where)
    assert(package.searchpath(\"ember.core\", package.cpath):sub(1, #P) == P)
    local t = T.tensor{{1, 2}, {3, 4}}
    assert(T.is_tensor(t) and t:numel() == 4 and t:tolist()[2][1] == 3)
    assert(T.zeros(2, 3, {dtype = T.float64}).dtype == T.float64)
    assert(require(\"ember.repl\").run)
  "' sh "$tmp"

cat >"$tmp/host.c" <<'CEOF'
#include <stdio.h>
#include <ember.h>
#include <ember_lua.h>
int main(void) {
  int64_t sizes[2] = {2, 3};
  em_tensor *t;
  if (em_zeros(2, sizes, EM_FLOAT32, em_cpu(), &t) != EM_OK) {
    fprintf(stderr, "%s\n", em_last_error());
    return 1;
  }
  printf("numel=%lld\n", (long long)em_tensor_numel(t));
  em_tensor_release(t);
  return 0;
}
CEOF
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
san=""
# an ASan build's library needs the program linked with the sanitizers too
if nm -D "$p/lib/libember.so" 2>/dev/null | grep -q __asan; then san="-fsanitize=address,undefined"; fi
check "a C host compiles against the installed ember.pc" \
  sh -c "cc $san -o '$tmp/host' '$tmp/host.c' \$(pkg-config --cflags --libs ember) $(pkg-config --cflags luajit)"
check "the C host runs against the installed libember.so" \
  sh -c "LD_PRELOAD='$preload' LD_LIBRARY_PATH='$p/lib' '$tmp/host' | grep -qx numel=6"
check "ember.pc gives the installed prefix" \
  sh -c "[ \"\$(pkg-config --variable=includedir ember)\" -ef '$p/include' ]"

check "ember-scm-1.rockspec loads and builds the Lua module into the rock tree" \
  env ROCKSPEC="$src/ember-scm-1.rockspec" luajit -e '
  local spec = {}
  assert(setfenv(assert(loadfile(os.getenv("ROCKSPEC"))), spec))()
  assert(spec.package == "ember" and spec.version == "scm-1", "package/version")
  assert(spec.build.type == "cmake", "build type")
  local v = spec.build.variables
  assert(v.EMBER_INSTALL_LUA_DIR == "$(LUADIR)" and v.EMBER_INSTALL_LUA_CDIR == "$(LIBDIR)", "dirs")
  assert(v.EMBER_INSTALL_ENGINE == "OFF", "engine")'

if [ "${EMBER_TEST_LUAROCKS:-0}" = 1 ] && command -v luarocks >/dev/null; then
  mkdir "$tmp/src"
  (cd "$src" && git ls-files -co --exclude-standard | grep -v '^build' | tar -cf - -T -) | tar -xf - -C "$tmp/src"
  check "luarocks make installs ember into a tree" \
    sh -c "cd '$tmp/src' && luarocks --lua-version=5.1 make --tree '$tmp/rocks' ember-scm-1.rockspec"
  check "luajit requires ember from the luarocks tree" \
    sh -c "cd '$tmp' && LUA_PATH='$tmp/rocks/share/lua/5.1/?.lua;$tmp/rocks/share/lua/5.1/?/init.lua' \
      LUA_CPATH='$tmp/rocks/lib/lua/5.1/?.so' luajit -e 'assert(require(\"ember\").ones(3):numel() == 3)'"
fi

echo "C-CASES: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
