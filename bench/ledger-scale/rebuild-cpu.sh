#!/bin/bash
# One `gateway projections rebuild` (all) with its wall time, the gateway process's CPU and peak RSS, and Postgres' CPU
# (every postgres process on this host; backends that exited during the run counted through the
# postmaster's children time), and the load average before and after: on a shared machine the CPU
# seconds say what the rebuild costs, the wall time what the neighbours left it.
#   DATABASE_URL=postgres://…  bench/ledger-scale/rebuild-cpu.sh [gateway dir, default .]
set -euo pipefail
dir=${1:-.}
pgcpu() {
  local total=0 main
  main=$(pgrep -o -x postgres)
  for p in $(pgrep -x postgres); do
    read -r u s cu cs < <(awk '{print $14, $15, $16, $17}' "/proc/$p/stat" 2>/dev/null) || continue
    if [ "$p" = "$main" ]; then total=$((total + u + s + cu + cs)); else total=$((total + u + s)); fi
  done
  echo "$total"
}
ticks=$(getconf CLK_TCK)
times=$(mktemp)
before=$(pgcpu)
load=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/time -f "%e %U %S %M" -o "$times" node "$dir/bin/gateway.mjs" projections rebuild 2>/dev/null | tail -1
after=$(pgcpu)
read -r wall user sys rss < "$times"
rm -f "$times"
echo "wall ${wall}s gateway-cpu $(echo "$user + $sys" | bc)s postgres-cpu $(echo "scale=2; ($after - $before) / $ticks" | bc)s peak-rss $((rss / 1024))MB load ${load} -> $(cut -d' ' -f1 /proc/loadavg)"
