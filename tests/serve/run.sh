#!/usr/bin/env bash
# tests/serve/run.sh: ember inside nginx (examples/serve/), tested end to end.
# Trains the digits CNN for one epoch (examples/train_digits.lua), starts
# nginx on 127.0.0.1 (a free port, a temporary prefix) with the Lua module,
# checks its answers against the same model run by bin/ember, sends bad
# requests (400/405/413/404 with a JSON error, no worker lost), then a
# bounded load with wrk (SERVE_REQUESTS requests: none may fail, worker RSS
# may grow by at most SERVE_RSS_GROWTH_KB after a warm-up in which every
# worker answered 1000 requests: an access log of $pid counts them), and
# stops nginx.
# Ends with "N passed, N failed"; exits non-zero on any failure. Skips
# (exit 0, says why) when nginx, its Lua module, resty.core, lua-cjson,
# wrk or curl is missing.
#
# Environment (defaults: Debian's packages nginx-light libnginx-mod-http-lua
# lua-cjson wrk, with luajit2):
#   NGINX=/usr/sbin/nginx  NGINX_MODULES_DIR=/usr/lib/nginx/modules
#   LUA_RESTY_DIR=/usr/share/lua/5.1 (resty/core.lua)  EMBER_BUILD=build
#   LD_LIBRARY_PATH is passed through (an unpacked libluajit2)
#   SERVE_MODEL=file (skip the training)  SERVE_REQUESTS=20000
#   SERVE_WORKERS=2  SERVE_RSS_GROWTH_KB=16384  SERVE_KEEP=1 (keep the prefix)
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 1
nginx=${NGINX:-/usr/sbin/nginx}
unset NGINX   # nginx itself reads $NGINX (inherited sockets of a binary upgrade)
NGINX_MODULES_DIR=${NGINX_MODULES_DIR:-/usr/lib/nginx/modules}
LUA_RESTY_DIR=${LUA_RESTY_DIR:-/usr/share/lua/5.1}
EMBER_BUILD=${EMBER_BUILD:-$here/build}
case $EMBER_BUILD in /*) ;; *) EMBER_BUILD=$here/$EMBER_BUILD ;; esac
export EMBER_BUILD   # bin/ember's build
requests=${SERVE_REQUESTS:-20000}
workers=${SERVE_WORKERS:-2}
rss_bound_kb=${SERVE_RSS_GROWTH_KB:-16384}
warmup=2000

skip() {
  echo "serve: SKIPPED: $*"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
}
[ -x "$nginx" ] || skip "no nginx at $nginx (Debian: nginx-light; or set NGINX=)"
for m in ndk_http_module.so ngx_http_lua_module.so; do
  [ -f "$NGINX_MODULES_DIR/$m" ] || skip "no $NGINX_MODULES_DIR/$m (Debian: libnginx-mod-http-lua; or set NGINX_MODULES_DIR=)"
done
[ -f "$LUA_RESTY_DIR/resty/core.lua" ] || skip "no resty/core.lua in $LUA_RESTY_DIR (Debian: lua-resty-core; or set LUA_RESTY_DIR=)"
command -v wrk >/dev/null || skip "no wrk (Debian: wrk)"
command -v curl >/dev/null || skip "no curl (Debian: curl)"
luajit -e 'require "cjson.safe"' 2>/dev/null || skip "lua-cjson is not installed (Debian: lua-cjson)"
"$nginx" -v 2>/dev/null || skip "$nginx does not run (for an unpacked libluajit2, set LD_LIBRARY_PATH)"

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check "what" test-args...
  local what=$1; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}

[ -f "$EMBER_BUILD/ember/core.so" ] || { bad "no $EMBER_BUILD/ember/core.so: run make (or set EMBER_BUILD=)"; finish; }

dir=$(mktemp -d /tmp/ember-serve.XXXXXX)
# Debian's module is built for OpenResty's luajit2: loaded with upstream
# LuaJIT's libluajit it lacks lua_setexdata and friends
mkdir -p "$dir/logs"
printf 'load_module %s;\nload_module %s;\nevents {}\n' "$NGINX_MODULES_DIR/ndk_http_module.so" \
  "$NGINX_MODULES_DIR/ngx_http_lua_module.so" >"$dir/probe.conf"
if ! "$nginx" -t -q -p "$dir" -c "$dir/probe.conf" -e "$dir/logs/probe.log" >"$dir/probe.out" 2>&1; then
  if grep -q "undefined symbol: lua" "$dir/probe.out"; then
    why=$(grep -o "undefined symbol: [a-z_]*" "$dir/probe.out" | head -1)
    rm -rf "$dir"
    skip "the Lua module needs OpenResty's luajit2 (Debian: libluajit2-5.1-2; or LD_LIBRARY_PATH=): $why"
  fi
  cat "$dir/probe.out"
  bad "nginx loads $NGINX_MODULES_DIR/ngx_http_lua_module.so"
  rm -rf "$dir"
  finish
fi
nginx_pid=
stop_nginx() {
  [ -n "$nginx_pid" ] || return 0
  kill -QUIT "$nginx_pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$nginx_pid" 2>/dev/null; then
    kill -KILL "$nginx_pid" 2>/dev/null
    for w in $(worker_pids); do kill -KILL "$w" 2>/dev/null; done
  fi
  wait "$nginx_pid" 2>/dev/null
  nginx_pid=
}
cleanup() {
  stop_nginx
  if [ "${SERVE_KEEP:-0}" = 1 ]; then echo "serve: kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
worker_pids() { # the master's children, from /proc (no procps needed)
  [ -n "$nginx_pid" ] || return 0
  # after the last ')' (the name may hold spaces): state, then the parent's pid
  awk -v p="$nginx_pid" '{ pid = $1; sub(/.*\) /, ""); if ($2 == p) print pid }' /proc/[0-9]*/stat 2>/dev/null | sort
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# -- the model: one epoch of examples/train_digits.lua --------------------------
if [ -n "${SERVE_MODEL:-}" ]; then
  model=$SERVE_MODEL
else
  echo "serve: training the digits CNN for one epoch (examples/train_digits.lua)"
  if ! ./bin/ember examples/train_digits.lua cnn 1 "$dir/model" >"$dir/train.log" 2>&1; then
    tail -20 "$dir/train.log"
    bad "examples/train_digits.lua cnn 1 trained and saved a model"
    finish
  fi
  model=$dir/model/cnn.ember
  grep "test accuracy" "$dir/train.log" | tail -1
fi
check "the model file is there ($model)" test -s "$model"
mkdir -p "$dir/req" "$dir/resp" "$dir/logs" "$dir/tmp"
./bin/ember tests/serve/check.lua requests "$dir/req" || { bad "tests/serve/check.lua wrote the requests"; finish; }

# -- nginx: the template filled in, a free port -------------------------------
lua_path="$here/lua/?.lua;$here/lua/?/init.lua;$here/examples/?.lua;$here/examples/serve/?.lua;$LUA_RESTY_DIR/?.lua"
# as root the workers would run as nobody, who may not read the checkout
user_line=
[ "$(id -u)" = 0 ] && user_line="user root root;"
start_nginx() { # port
  sed -e "s|@MODULES_DIR@|$NGINX_MODULES_DIR|g" -e "s|@WORKERS@|$workers|g" \
      -e "s|@LISTEN@|127.0.0.1:$1|g" -e "s|@LUA_PATH@|$lua_path|g" \
      -e "s|@LUA_CPATH@|$EMBER_BUILD/?.so|g" -e "s|@MODEL@|$model|g" \
      -e "s|@THREADS@|1|g" -e "s|@MAX_BATCH@|256|g" \
      -e "s|access_log off;|log_format ember_pid '\$pid'; access_log logs/pid.log ember_pid;|" \
      examples/serve/nginx.conf.in >"$dir/nginx.conf"
  : >"$dir/logs/error.log"
  "$nginx" -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" -g "daemon off; $user_line" \
    >>"$dir/nginx.out" 2>&1 &
  nginx_pid=$!
  for _ in $(seq 1 200); do
    kill -0 "$nginx_pid" 2>/dev/null || { wait "$nginx_pid" 2>/dev/null; nginx_pid=; return 1; }
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}
port_in_use() { # port: listed in /proc/net/tcp (hex, state 0A = listen)
  local hex
  hex=$(printf '%04X' "$1")
  grep -qiE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port=
for _ in $(seq 1 20); do
  p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  port_in_use "$p" && continue
  if start_nginx "$p"; then port=$p; break; fi
  if grep -q "Address already in use" "$dir/logs/error.log" "$dir/nginx.out" 2>/dev/null; then
    stop_nginx
    continue
  fi
  break
done
if [ -z "$port" ]; then
  cat "$dir/nginx.out" "$dir/logs/error.log" 2>/dev/null | tail -30
  bad "nginx started and /health answered 200"
  finish
fi
url=http://127.0.0.1:$port
ok "nginx $("$nginx" -v 2>&1 | sed 's/.*version: //') started on 127.0.0.1:$port (pid $nginx_pid, prefix $dir)"
echo "serve: /health: $(curl -s "$url/health")"
workers_before=$(worker_pids | tr '\n' ' ')
check "$workers worker processes ($workers_before)" test "$(worker_pids | wc -l)" -eq "$workers"
check "every worker loaded the model in init_worker_by_lua" \
  test "$(grep -c 'digits_server: loaded' "$dir/logs/error.log")" -eq "$workers"

# -- answers against bin/ember ---------------------------------------------------
post() { # name [curl args]: POSTs req/name.json, the answer in resp/name.json; prints code
  local name=$1; shift
  curl -s -o "$dir/resp/$name.json" -w '%{http_code} %{content_type}' -X POST \
    -H 'Content-Type: application/json' --data-binary "@$dir/req/$name.json" "$@" "$url/predict"
}
good="single batch1 batch64 batch256 fractional"
for name in $good; do
  got=$(post "$name")
  check "POST $name.json: 200 application/json (got $got)" test "$got" = "200 application/json"
done
while read -r status line; do
  case $status in PASS) ok "$line" ;; FAIL) bad "$line" ;; *) bad "check.lua: $status $line" ;; esac
done < <(./bin/ember tests/serve/check.lua compare "$model" "$dir/req" "$dir/resp" $good 2>/dev/null ||
         echo "FAIL check.lua compare exited non-zero")

# -- bad requests ------------------------------------------------------------------
expect() { # code what curl-args...: the status, a JSON content type and an "error" member
  local code=$1 what=$2; shift 2
  local got body
  got=$(curl -s -o "$dir/resp/last" -w '%{http_code} %{content_type}' "$@")
  body=$(head -c 300 "$dir/resp/last")
  if [ "$got" = "$code application/json" ] && printf '%s' "$body" | grep -q '^{"error":"'; then
    ok "$what: $code $(printf '%s' "$body" | head -c 120)"
  else
    bad "$what: expected $code application/json with an error, got '$got' $body"
  fi
}
for f in "$dir"/req/bad_*.json; do
  name=$(basename "$f" .json)
  expect 400 "POST ${name#bad_}" -X POST --data-binary "@$f" "$url/predict"
done
expect 400 "POST with an empty body" -X POST --data-binary "" "$url/predict"
expect 405 "GET /predict" "$url/predict"
expect 405 "PUT /predict" -X PUT --data-binary "@$dir/req/single.json" "$url/predict"
check "405 answers say Allow: POST" sh -c "curl -s -D - -o /dev/null '$url/predict' | grep -qi '^Allow: POST'"
expect 413 "POST 2 MiB (over client_max_body_size)" -X POST --data-binary "@$dir/req/huge.json" "$url/predict"
expect 413 "POST 2 MiB chunked" -X POST -H 'Transfer-Encoding: chunked' --data-binary "@$dir/req/huge.json" "$url/predict"
expect 404 "POST /other" -X POST --data-binary "@$dir/req/single.json" "$url/other"
got=$(post single)
check "a good request after the bad ones: 200 (got $got)" test "$got" = "200 application/json"
check "no worker was replaced by the bad requests" test "$(worker_pids | tr '\n' ' ')" = "$workers_before"

# -- bounded load ------------------------------------------------------------------
run_wrk() { # n: about n requests (each thread stops after its share); prints wrk's line
  # wrk's main thread sleeps for -d whatever its threads do: once every
  # thread has written its file in done/, SIGINT ends the sleep (and so
  # the run); -d 300s is only the bound
  rm -rf "$dir/done" && mkdir -p "$dir/done"
  SERVE_BODY="$dir/req/single.json" SERVE_REQUESTS=$1 SERVE_WRK_THREADS=2 SERVE_DONE_DIR="$dir/done" \
    wrk -t 2 -c 8 -d 300s --timeout 10s -s tests/serve/load.lua "$url/predict" >"$dir/wrk.out" 2>&1 &
  local wrk_pid=$!
  for _ in $(seq 1 6000); do
    [ "$(ls "$dir/done" | wc -l)" -ge 2 ] && break
    kill -0 "$wrk_pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -INT "$wrk_pid" 2>/dev/null
  wait "$wrk_pid" 2>/dev/null
  grep '^wrk:' "$dir/wrk.out" || { echo "wrk: no summary:"; cat "$dir/wrk.out"; }
}
field() { printf '%s\n' "$1" | sed -nE "s/.* $2=([0-9.]+).*/\1/p"; }
rss_line() { local s=""; for w in $(worker_pids); do s="$s $w=$(rss_kb "$w")kB"; done; echo "${s# }"; }
# requests each worker has answered: the access log holds one $pid per request
served() { awk -v p="$1" '$1 == p { n++ } END { print n + 0 }' "$dir/logs/pid.log" 2>/dev/null; }
served_line() { local s=""; for w in $(worker_pids); do s="$s $w=$(served "$w")"; done; echo "${s# }"; }
# warm-up: the kernel hands connections to workers unevenly, so a worker
# can answer few of one round and only reach its plateau (allocator arenas,
# LuaJIT heap) under load; warm up in rounds until every worker has answered
# warmup_min requests (at most 8 rounds), then take the baseline
warmup_min=1000
w1_all=ok
for round in 1 2 3 4 5 6 7 8; do
  w1=$(run_wrk "$warmup")
  echo "serve: warm-up round $round: $w1"
  [ "$(field "$w1" responses)" -ge "$warmup" ] && [ "$(field "$w1" not_200) $(field "$w1" socket_errors)" = "0 0" ] || w1_all=bad
  low=
  for w in $(worker_pids); do [ "$(served "$w")" -lt "$warmup_min" ] && low=1; done
  [ -z "$low" ] && break
done
echo "serve: requests answered per worker after warm-up: $(served_line)"
declare -A rss_before served_before
for w in $(worker_pids); do rss_before[$w]=$(rss_kb "$w"); served_before[$w]=$(served "$w"); done
echo "serve: worker RSS after warm-up: $(rss_line)"
w2=$(run_wrk "$requests")
echo "serve: load: $w2"
echo "serve: worker RSS after $requests more: $(rss_line)"
check "wrk: at least $requests responses (got $(field "$w2" responses))" test "$(field "$w2" responses)" -ge "$requests"
check "wrk: every answer 200 (not_200=$(field "$w2" not_200))" test "$(field "$w2" not_200)" = 0
check "wrk: no socket errors (socket_errors=$(field "$w2" socket_errors))" test "$(field "$w2" socket_errors)" = 0
check "wrk warm-up: every round $warmup answers, all 200, no socket errors" test "$w1_all" = ok
for w in $(worker_pids); do
  before=${rss_before[$w]:-0} after=$(rss_kb "$w")
  n_before=${served_before[$w]:-0} n=$(( $(served "$w") - ${served_before[$w]:-0} ))
  check "worker $w RSS grew by $((after - before)) kB over $n requests after $n_before warm-up requests (bound $rss_bound_kb kB)" \
    test "$((after - before))" -le "$rss_bound_kb"
done
check "no worker was replaced under load" test "$(worker_pids | tr '\n' ' ')" = "$workers_before"

# -- the log and the stop ----------------------------------------------------------
errs=$(grep -E '\[(alert|crit|emerg)\]|exited on signal|\[error\].*(digits_server|lua)' "$dir/logs/error.log")
check "error.log has no alert, crash or Lua error" test -z "$errs"
[ -n "$errs" ] && printf '%s\n' "$errs" | head -10
pids=$workers_before
stop_nginx
alive=
for w in $pids; do kill -0 "$w" 2>/dev/null && alive="$alive $w"; done
check "nginx stopped (master and workers gone)" test -z "$alive"
finish
