#!/bin/sh
# tools/sum-runs.sh "CMD" ["CMD"...]: runs each command (their output shown
# as it comes), takes the last "N passed, N failed" line each printed, and
# ends with one line summing them. A command that fails without such a
# line (a crash, a build error) counts as one failure. Exits non-zero if any
# command failed.
total_pass=0 total_fail=0 status=0
log=$(mktemp)
trap 'rm -f "$log" "$log.rc"' EXIT
for cmd in "$@"; do
  echo "== $cmd =="
  # the exit status of cmd, not of tee, through a file
  { sh -c "$cmd" 2>&1; echo $? >"$log.rc"; } | tee "$log"
  rc=$(cat "$log.rc")
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    p=${line%% passed*}
    f=${line#*passed, }
    f=${f%% failed}
  else
    p=0 f=0
  fi
  if [ "$rc" != 0 ]; then
    status=1
    [ "$f" -eq 0 ] && f=1
  fi
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
done
echo "$total_pass passed, $total_fail failed"
[ "$status" -eq 0 ] && [ "$total_fail" -eq 0 ]
