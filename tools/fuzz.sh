#!/bin/sh
# tools/fuzz.sh [npy|npz|ember|all] [seconds]: fuzzes the file loaders with
# libFuzzer (clang, ASan + UBSan), starting from tests/fuzz/corpus/<target>.
# New interesting inputs go to build-fuzz/corpus/<target>; copy the ones
# that found a bug into tests/fuzz/corpus/<target> so ctest replays them.
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
targets=${1:-all}
secs=${2:-60}
[ "$targets" = all ] && targets="npy npz ember"
mkdir -p build-fuzz
srcs=$(find engine/src -name "*.c" -not -path "*/cuda/*" | sort)
for t in $targets; do
  T=$(echo "$t" | tr a-z A-Z)
  bin=build-fuzz/fuzz_$t
  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -DFUZZ_$T -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -Iengine/include -Iengine/src $srcs tests/fuzz/fuzz_loaders.c \
    -lz -lm -lpthread -o "$bin"
  mkdir -p "build-fuzz/corpus/$t"
  echo "== fuzzing $t for ${secs}s"
  "$bin" -max_total_time="$secs" -timeout=10 -max_len=65536 -rss_limit_mb=2048 \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t"
done
