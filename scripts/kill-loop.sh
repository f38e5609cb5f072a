#!/usr/bin/env bash
# The DMTCP-style restart test: run a scenario under mpirun with checkpoints,
# SIGKILL one rank at KILLS random points (each later than the last), restart
# each time from the newest valid checkpoint, finish on AFTER ranks, and
# compare the digest with the run that never failed.
#
#   scripts/kill-loop.sh NAME BEFORE AFTER UNIT LAST EVERY KILLS WANT -- SCENARIO [ARGS…]
#
# UNIT is the model's boundary (step, day, gvt), kills fall in 1..LAST-1,
# checkpoints every EVERY boundaries; WANT is the failure-free digest.
# Needs target/release/parsim built with --features mpi.
set -euo pipefail
name=$1 before=$2 after=$3 unit=$4 last=$5 every=$6 kills=$7 want=$8
shift 8
[ "$1" = "--" ] && shift
bin=target/release/parsim
dir=target/ci/kill-$name
rm -rf "$dir"
mkdir -p "$dir"
digest_of() { grep -o '"digest": "[0-9a-f]*"' "$1/summary.json" | cut -d'"' -f4; }
points=$(shuf -i "1-$((last - 1))" -n "$kills" | sort -n | tr '\n' ' ')
echo "$name: SIGKILL at $unit ${points}on $before ranks, then finish on $after"
restart=()
for k in $points; do
  rank=$((k % before))
  if timeout 300 mpirun -n "$before" "$bin" run "$@" --backend mpi -q --out "$dir/out" \
    --checkpoint-every "$every" --checkpoint-dir "$dir/ck" "${restart[@]}" \
    --inject "kill:rank=$rank,$unit=$k" </dev/null >"$dir/log-$k.txt" 2>&1; then
    echo "$name: the run meant to be killed at $unit $k finished"; cat "$dir/log-$k.txt"; exit 1
  fi
  grep -q "SIGKILL" "$dir/log-$k.txt" || { echo "$name: no SIGKILL at $unit $k"; cat "$dir/log-$k.txt"; exit 1; }
  # Killed before the first checkpoint: the next run starts from the beginning.
  if ls "$dir/ck/manifests/"*.json >/dev/null 2>&1; then restart=(--restart "$dir/ck"); fi
done
timeout 300 mpirun -n "$after" "$bin" run "$@" --backend mpi -v --out "$dir/out" --checkpoint-every "$every" \
  --checkpoint-dir "$dir/ck" "${restart[@]}" </dev/null >"$dir/log-final.txt" 2>&1 \
  || { echo "$name: the final restart failed"; cat "$dir/log-final.txt"; exit 1; }
# Every kill may have come before a checkpoint was whole (a SIGKILLed rank's
# background writes die with it): then the final run starts from the beginning.
grep -m1 -o "restarting from checkpoint.*" "$dir/log-final.txt" || echo "$name: no whole checkpoint was left: the final run started from the beginning"
got=$(digest_of "$dir/out")
[ "$got" = "$want" ] || { echo "$name: digest $got after $kills kills != $want without"; exit 1; }
echo "$name: digest $got equals the failure-free run's after $kills kills ($before → $after ranks)"
