#!/usr/bin/env bash
# Silent-error campaign: inject one bit flip per run at a random boundary on
# a random rank, and count how many the invariants caught (the run rolled
# back and ended with the failure-free digest), how many went unnoticed and
# changed the result, and how many were harmless.
#
#   scripts/bitflip-campaign.sh RUNS   (needs target/release/parsim)
set -euo pipefail
runs=${1:-20}
bin=target/release/parsim
dir=target/ci/bitflip
mkdir -p "$dir"
digest_of() { grep -o '"digest": "[0-9a-f]*"' "$1/summary.json" | cut -d'"' -f4; }
campaign() { # NAME UNIT LAST EVERY -- ARGS…
  local name=$1 unit=$2 last=$3 every=$4; shift 5
  "$bin" run "$@" -q --out "$dir/$name-ref"
  local want detected=0 undetected=0 harmless=0
  want=$(digest_of "$dir/$name-ref")
  for _ in $(seq "$runs"); do
    local at=$((RANDOM % (last - 1) + 1)) rank=$((RANDOM % 2))
    rm -rf "$dir/$name"
    "$bin" run "$@" -q --ranks 2 --out "$dir/$name" --checkpoint-every "$every" \
      --inject "bitflip:rank=$rank,$unit=$at" --auto-restart 1 2>"$dir/$name.err" || { echo "$name: flip at $unit $at on rank $rank: the run failed"; tail -3 "$dir/$name.err"; exit 1; }
    if grep -q 'invariant violated' "$dir/$name/summary.json"; then
      detected=$((detected + 1))
      [ "$(digest_of "$dir/$name")" = "$want" ] || { echo "$name: rolled back but the digest differs"; exit 1; }
    elif [ "$(digest_of "$dir/$name")" = "$want" ]; then harmless=$((harmless + 1))
    else undetected=$((undetected + 1)); fi
  done
  echo "$name: $runs flips: $detected detected and rolled back, $undetected undetected (result changed), $harmless harmless"
}
campaign heat step 200 10 -- scenarios/heat2d.toml --set 'grid.size=[256,256]' --set grid.steps=200 \
  --set grid.png=false --set grid.output_every=0 --set 'grid.boundary="periodic"'
campaign epidemic day 100 10 -- scenarios/epidemic.toml --set abm.agents=20000 --set abm.days=100
campaign phold-cmb window 480 40 -- scenarios/phold.toml --set phold.lps=256 --set phold.end=50 \
  --set des.engine=conservative
