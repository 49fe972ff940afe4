#!/bin/sh
# tests/layers/check_layers.sh OBJDIR SRCDIR: the engine's layers hold
# (docs/architecture.md). Each rule is one check; prints "ok NAME" or
# "FAIL NAME: why" and ends with "C-CASES: P passed, F failed".
#
# By symbols (nm on the engine's objects): the em_* functions and tables an
# object of a layer uses are defined in its own layer or the layers below:
#   core     <- core (em_kernels_for, inline in core/kernels.h, names each
#               device's table: the one list; every layer above may use it)
#   cpu/meta/cuda <- core and their own folder (a device never calls another)
#   ops      <- core, ops, autograd (formulas call ops: the one loop)
#   autograd <- core, ops, autograd;  io <- core, ops, autograd, io
# By includes: kernel folders include no autograd/ or ops/ header, core
# includes nothing above it (and no CUDA header: the core builds the same
# with or without CUDA), and bindings use ember.h and l_ember.h, all
# but l_layout.c (the FFI layout export) which reads core/core.h.
# cuda/'s objects include its .cu kernels (*.cu.o) in a build with CUDA.
obj=$1 src=$2
pass=0 fail=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

objects() { # layer -> its objects whose source is still there (no stale ones)
  for o in "$obj/$1"/*.c.o "$obj/$1"/*.cu.o; do
    [ -f "$o" ] && [ -f "$src/engine/src/$1/$(basename "$o" .o)" ] && echo "$o"
  done
}
defs() { # layer -> its defined global symbols
  for o in $(objects $1); do nm --defined-only -g "$o"; done |
    awk 'NF == 3 {print $3}' | sort -u
}
undefs() { # one object -> the em_* symbols it uses from elsewhere
  nm -u "$1" | awk '{print $2}' | grep '^em_' | sort -u
}
for l in core cpu meta cuda ops autograd io; do defs $l >"$tmp/$l"; done
printf 'em_cpu_kernels\nem_meta_kernels\nem_cuda_kernels\n' >"$tmp/tables"

check() { # NAME allowed-layers...: every object of layer NAME
  layer=$1; shift
  for l in "$@"; do cat "$tmp/$l"; done | sort -u >"$tmp/allowed"
  for o in $(objects $layer); do
    extra=$(undefs "$o" | comm -23 - "$tmp/allowed" | tr '\n' ' ')
    name="symbols: $layer/$(basename "$o" .c.o)"
    if [ -z "$extra" ]; then ok "$name"; else bad "$name uses $extra"; fi
  done
}
check core core tables
check cpu core cpu
check meta core meta
check cuda core cuda
check ops core ops autograd tables
check autograd core ops autograd tables
check io core ops autograd io tables

inc() { # NAME pattern files...: no file matches the include pattern
  name=$1 pat=$2; shift 2
  hits=$(grep -lE "$pat" "$@" 2>/dev/null | tr '\n' ' ')
  if [ -z "$hits" ]; then ok "$name"; else bad "$name: $hits"; fi
}
inc "includes: cpu/ and meta/ see only core" '#include "(autograd|ops|io|meta|cuda)/' \
  "$src"/engine/src/cpu/*.[ch] "$src"/engine/src/meta/*.[ch]
inc "includes: cuda/ sees only core and itself" '#include "(autograd|ops|io|cpu|meta)/' \
  "$src"/engine/src/cuda/*.[ch] "$src"/engine/src/cuda/*.cu
inc "includes: core includes no CUDA header" '#include *<(cuda|cub|thrust|cuda_runtime|cuda_fp16|cuda_bf16|cuda_runtime_api)' \
  "$src"/engine/src/core/*.[ch]
inc "includes: core sees nothing above it" '#include "(autograd|ops|io|cpu|meta|cuda)/' \
  "$src"/engine/src/core/*.[ch]
inc "includes: ops see no kernel folder" '#include "(cpu|meta|cuda)/' "$src"/engine/src/ops/*.[ch]
inc "includes: bindings use ember.h (l_layout.c excepted)" '#include "(core|ops|autograd|cpu|meta|io)/' \
  $(ls "$src"/bindings/*.[ch] | grep -v l_layout.c)
echo "C-CASES: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
