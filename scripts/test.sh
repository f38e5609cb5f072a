#!/usr/bin/env bash
# The one test command. On a fresh machine it installs what the tests need
# (Open MPI and libclang, with apt-get), then runs, in order:
#   cargo fmt --check, cargo clippy -D warnings, the whole test suite on the
#   threads backend (with the fuzz corpora replayed, and cargo fuzz for 20 s
#   per target where nightly and cargo-fuzz exist), cargo doc with no warnings, the examples of examples/
#   with their printed results checked, the Comm semantics suite under mpirun -n 1/2/4, a
#   panicking rank under mpirun, the grid digest suite under mpirun -n 2/4,
#   the DES digest suite (every engine against sequential) under mpirun -n
#   1/2/4, the graph-engine and epidemic suites under mpirun -n 2/4, a user's
#   model (the bank, PageRank) under mpirun, the README's main command (the epidemic) on both backends
#   with a digest comparison and --verify, the ring on both backends, the
#   sweep acceptance command on both backends, checkpoint/restart (ranks
#   SIGKILLed under mpirun at random points for the grid, the epidemic and
#   Time Warp, restarts on other rank counts, parsim supervise), the
#   PHOLD acceptance command, replicated execution under mpirun, and
#   parsim scale (strong, weak, MPI; the report rendered by a headless
#   Chromium where one is installable).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
# Each step says when it starts (seconds since the script began), so a
# slow CI run shows where its time went.
step() { printf '\n==> %s   [%d s]\n' "$*" "$(( $(date +%s) - started ))"; }

# ---------------------------------------------------------------- packages
need=()
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
dpkg -s libopenmpi-dev >/dev/null 2>&1 || need+=(libopenmpi-dev)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# gpmetis, for the gpmetis-parity test (partition options through both tools).
command -v gpmetis >/dev/null 2>&1 || need+=(metis)
if [ ${#need[@]} -gt 0 ]; then
  step "installing ${need[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy

# Open MPI as root, more ranks than cores, no ssh.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
export RUST_BACKTRACE=0
mpirun_() { timeout 600 mpirun "$@" </dev/null; }

digest_of() { grep -o '"digest": "[0-9a-f]*"' "$1/summary.json" | cut -d'"' -f4; }

# ---------------------------------------------------------------- checks
step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, all features) -D warnings"
cargo clippy --workspace --all-targets --all-features -- -D warnings

# The test suite is built once, with MPI compiled in: the threads-backend tests
# run as they would without it, the CLI's tests also run their mpirun cases,
# and the MPI suites below (harness-free programs, which say so and stop when
# cargo test runs them outside mpirun) come out of the same build. One feature
# set means one dev build of the workspace instead of one per MPI suite. The
# build without MPI is the README's command below (release), which also
# checks that `--backend mpi` is explained there.
step "cargo test --workspace (threads backend; MPI compiled in, so the CLI's mpirun cases run too)"
cargo test --workspace --features "$(scripts/mpi-test-bin.sh --features)"

# The readers' fuzz targets: the corpora and their mutations were replayed by
# `cargo test` above (crates/parsim-fuzz); with nightly and cargo-fuzz
# installed, each target also runs under libFuzzer for a bounded time.
if cargo +nightly --version >/dev/null 2>&1 && cargo +nightly fuzz --version >/dev/null 2>&1; then
  step "cargo fuzz: every target for ${FUZZ_SECONDS:-20} s"
  for t in $(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v parsim-fuzz-targets); do
    (cd fuzz && cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=2048 >/dev/null 2>"../target/fuzz-$t.log") \
      || { echo "fuzz target $t failed:"; tail -40 "target/fuzz-$t.log"; exit 1; }
  done
else
  step "cargo fuzz: nightly or cargo-fuzz missing, the corpora were replayed by cargo test (crates/parsim-fuzz)"
fi

step "cargo doc --no-deps --workspace with no warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace

# ---------------------------------------------------------------- examples
# Each example of examples/ runs as the README says, and what it prints is checked.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }
step "examples: the bank (M/M/c) against Erlang C, at 1 and 2 ranks, and a sweep of tellers"
# Release builds here and below use 16 codegen units: the same code at
# opt-level 3, compiled on both cores (the CLI crate alone takes 158 s with
# one unit, 114 s with 16, here). They check behaviour; the benchmarks use
# the workspace's profile (one unit, thin LTO) as shipped.
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
# Nor do they link-time optimise: the release build of the examples and the
# CLI took 126 s without LTO against 208 s with thin LTO (16 units each, a
# clean target, this machine), and there are two such builds (without and
# with MPI).
export CARGO_PROFILE_RELEASE_LTO=false
# The examples and the CLI without MPI in one build (the README's command
# below then finds its binary built).
cargo build --release --examples --bin parsim
mkdir -p target/ci
target/release/examples/bank run --ranks 2 --set tellers=5 --out target/ci/bank2 | tee target/ci/bank2.txt
grep -q "Erlang C" target/ci/bank2.txt || { echo "the bank printed no theoretical wait"; exit 1; }
target/release/examples/bank run --ranks 1 --set tellers=5 --out target/ci/bank1 >/dev/null
[ "$(digest_of target/ci/bank1)" = "$(digest_of target/ci/bank2)" ] || { echo "bank: digest differs at 1 and 2 ranks"; exit 1; }
for t in 3 5; do
  target/release/examples/bank run --ranks 2 --set tellers=$t --set minutes=40000 --out target/ci/bank-t$t >/dev/null
  json target/ci/bank-t$t/summary.json "abs(d['metrics']['mean_wait'] - d['metrics']['theory_mean_wait']) < 3 * d['metrics']['mean_wait_se'] or exit(1)" \
    >/dev/null || { echo "bank tellers=$t: the simulated mean wait is not within 3 SE of Erlang C"; cat target/ci/bank-t$t/summary.json; exit 1; }
done
target/release/examples/bank sweep --param tellers=3,4,5 --replications 3 --metrics mean_wait,theory_mean_wait --out target/ci/bank-sweep
for f in results.csv results.json sweep.png tasks.jsonl; do
  [ -s "target/ci/bank-sweep/$f" ] || { echo "the bank sweep did not write $f"; exit 1; }
done
step "examples: PageRank as a Pregel program against a power iteration, at 1 and 3 ranks"
for r in 1 3; do
  target/release/examples/pagerank run --ranks $r --out target/ci/pr$r
  json target/ci/pr$r/summary.json "d['metrics']['max_abs_diff_vs_power_iteration'] < 1e-12 or exit(1)" >/dev/null \
    || { echo "pagerank at $r ranks differs from the power iteration"; exit 1; }
done
[ "$(digest_of target/ci/pr1)" = "$(digest_of target/ci/pr3)" ] || { echo "pagerank: digest differs at 1 and 3 ranks"; exit 1; }
step "examples: the user's own stencil (heater, wall, varying conductivity) at 1, 2 and 4 ranks"
for r in 1 2 4; do
  target/release/examples/heat_source run --ranks $r --out target/ci/hs$r >/dev/null
done
[ "$(digest_of target/ci/hs1)" = "$(digest_of target/ci/hs2)" ] && [ "$(digest_of target/ci/hs1)" = "$(digest_of target/ci/hs4)" ] \
  || { echo "heat_source: digests differ across rank counts"; exit 1; }
echo "heat_source digest $(digest_of target/ci/hs1) at 1, 2 and 4 ranks"
step "examples: a user-defined intervention in the epidemic, at 1 and 2 ranks"
for r in 1 2; do
  target/release/examples/epidemic_policy run --ranks $r --out target/ci/pol$r | tee target/ci/pol$r.txt
  grep -q "without:" target/ci/pol$r.txt || { echo "epidemic_policy printed no comparison"; exit 1; }
  [ -s target/ci/pol$r/policy.png ] || { echo "epidemic_policy wrote no chart"; exit 1; }
done
[ "$(digest_of target/ci/pol1)" = "$(digest_of target/ci/pol2)" ] || { echo "epidemic_policy: digests differ"; exit 1; }

# ---------------------------------------------------------------- MPI
step "building the MPI semantics suite"
suite=$(scripts/mpi-test-bin.sh parsim-comm mpi_conformance)
for n in 1 2 4; do
  step "Comm semantics suite under mpirun -n $n"
  PARSIM_EXPECT_SIZE=$n mpirun_ -n "$n" "$suite"
done

step "a panicking rank under mpirun -n 4 aborts the job with its message"
set +e
out=$(timeout 60 mpirun -n 4 "$suite" --panic </dev/null 2>&1)
rc=$?
set -e
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
  echo "expected a non-zero exit within 60 s, got rc=$rc"; echo "$out"; exit 1
fi
echo "$out" | grep -q "rank 1 failed: panicked: deliberate failure at step 10" \
  || { echo "the failing rank's message is missing:"; echo "$out"; exit 1; }
echo "job ended with rc=$rc and the failing rank's message"

step "building the grid digest suite for MPI"
grid_suite=$(scripts/mpi-test-bin.sh parsim-grid mpi_grid)
for n in 2 4; do
  step "grid digests (every stencil, boundary, decomposition, overlap, deep halo, threads) under mpirun -n $n"
  mpirun_ -n "$n" "$grid_suite"
done

des_suite=$(scripts/mpi-test-bin.sh parsim-des mpi_des)
for n in 1 2 4; do
  step "DES digests (PHOLD std/ties/remote 0.1-1.0, queues; every engine and Time Warp variant) under mpirun -n $n"
  mpirun_ -n "$n" "$des_suite"
done

graph_suite=$(scripts/mpi-test-bin.sh parsim-graph mpi_graph)
for n in 2 4; do
  step "graph engines (Pregel and GAS PageRank/SSSP/components vs sequential, 3 vertex partitions, 2 vertex cuts) under mpirun -n $n"
  mpirun_ -n "$n" "$graph_suite"
done

abm_suite=$(scripts/mpi-test-bin.sh parsim-abm mpi_abm)
for n in 2 4; do
  step "epidemic digests (ER A/B, synthetic with interventions; multilevel/hash/lp, 2 threads per rank) under mpirun -n $n"
  mpirun_ -n "$n" "$abm_suite"
done

step "a user's model under MPI: the bank and PageRank give their threads digests, the bank's sweep its threads table"
# The two examples and the CLI with MPI in one build (used from here on).
cargo build --release -p parsim -p parsim-cli --features mpi --example bank --example pagerank --bin parsim
mpirun_ -n 2 target/release/examples/bank run --backend mpi --set tellers=5 --out target/ci/bank-mpi >/dev/null
[ "$(digest_of target/ci/bank-mpi)" = "$(digest_of target/ci/bank2)" ] || { echo "bank under mpirun -n 2: digest differs"; exit 1; }
mpirun_ -n 3 target/release/examples/pagerank run --backend mpi --out target/ci/pr-mpi >/dev/null
[ "$(digest_of target/ci/pr-mpi)" = "$(digest_of target/ci/pr1)" ] || { echo "pagerank under mpirun -n 3: digest differs"; exit 1; }
mpirun_ -n 3 target/release/examples/bank sweep --backend mpi --param tellers=3,4,5 --replications 3 \
  --metrics mean_wait,theory_mean_wait --out target/ci/bank-sweep-mpi >/dev/null
cmp target/ci/bank-sweep/results.csv target/ci/bank-sweep-mpi/results.csv || { echo "the bank's MPI sweep table differs"; exit 1; }
echo "bank and pagerank digests, and the bank's sweep table, equal on threads and under mpirun"

# ---------------------------------------------------------------- the README's command
step "README main command: cargo run --release -- run scenarios/epidemic.toml"
cargo run --release -- run scenarios/epidemic.toml --out target/ci/epi
for f in summary.json curve.csv epidemic.png; do
  [ -s "target/ci/epi/$f" ] || { echo "the main command did not write $f"; exit 1; }
done
set +e
err=$(target/release/parsim run scenarios/ring.toml --backend mpi -q --out target/ci/no-mpi 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" = 2 ] && echo "$err" | grep -q -- "--features mpi" \
  || { echo "built without MPI, --backend mpi should exit 2 naming --features mpi; got rc=$rc: $err"; exit 1; }
want=$(digest_of target/ci/epi)
cargo run --release -q -- run scenarios/epidemic.toml --ranks 1 --out target/ci/epi1 >/dev/null
[ "$(digest_of target/ci/epi1)" = "$want" ] || { echo "epidemic at 1 rank: digest differs"; exit 1; }
cargo build --release --features mpi
mpirun_ -n 2 target/release/parsim run scenarios/epidemic.toml --backend mpi --out target/ci/epi-mpi >/dev/null
[ "$(digest_of target/ci/epi-mpi)" = "$want" ] || { echo "epidemic under mpirun -n 2: digest differs"; exit 1; }
echo "epidemic digest $want on threads (2 and 1 ranks) and mpirun -n 2"
mpirun_ -n 2 target/release/parsim run scenarios/epidemic-er.toml --backend mpi --verify --out target/ci/epi-er \
  > target/ci/epi-er.txt
cat target/ci/epi-er.txt
grep -q "final size z" target/ci/epi-er.txt || { echo "--verify printed no theory"; exit 1; }

step "capability: every process builds only its share (4·10⁶ agents, 1 process vs mpirun -n 2: digest, peak RSS, per-rank states)"
rss_of() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(max(d['peak_rss_bytes']))" "$1/summary.json"; }
target/release/parsim run scenarios/epidemic.toml --ranks 1 --set abm.agents=4000000 --out target/ci/cap1 >/dev/null
mpirun_ -n 2 target/release/parsim run scenarios/epidemic.toml --backend mpi --set abm.agents=4000000 \
  --set abm.write_states=true --out target/ci/cap2 > target/ci/cap2.txt
grep "memory: peak RSS per process .* GB, .* GB" target/ci/cap2.txt || { echo "no per-process peak RSS line"; exit 1; }
[ "$(digest_of target/ci/cap1)" = "$(digest_of target/ci/cap2)" ] || { echo "capability run: digests differ"; exit 1; }
one=$(rss_of target/ci/cap1); two=$(rss_of target/ci/cap2)
echo "peak RSS: 1 process $one bytes, each of 2 processes at most $two bytes"
python3 -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); sys.exit(0 if b < 0.75*a else 'a process of 2 peaked at %.2f of the single process' % (b/a))" "$one" "$two"
for f in manifest.json rank-00000.bin rank-00001.bin; do
  [ -s "target/ci/cap2/states/$f" ] || { echo "write_states: no $f"; exit 1; }
done
python3 -c "
import json,os,sys
d=sys.argv[1]; m=json.load(open(d+'/manifest.json'))
n=sum(os.path.getsize(d+'/'+p['file'])//7 for p in m['pieces'])
assert n==m['agents']==4000000, (n, m['agents'])
print('states: %d agents in %d per-rank pieces' % (n, len(m['pieces'])))" target/ci/cap2/states

step "the ring scenario: equal digests on threads and MPI"
cargo run --release -- run scenarios/ring.toml --out target/ci/ring-threads
want=$(grep -o '"digest": "[0-9a-f]*"' target/ci/ring-threads/summary.json | cut -d'"' -f4)
for r in 1 2 3 8; do
  cargo run --release -q -- run scenarios/ring.toml --ranks "$r" --out "target/ci/ring-t$r" >/dev/null
  got=$(grep -o '"digest": "[0-9a-f]*"' "target/ci/ring-t$r/summary.json" | cut -d'"' -f4)
  [ "$got" = "$want" ] || { echo "threads --ranks $r: digest $got != $want"; exit 1; }
done
cargo build --release --features mpi   # `cargo run` above rebuilt the binary without MPI
for n in 1 2 4; do
  mpirun_ -n "$n" target/release/parsim run scenarios/ring.toml --backend mpi --out "target/ci/ring-mpi$n"
  got=$(grep -o '"digest": "[0-9a-f]*"' "target/ci/ring-mpi$n/summary.json" | cut -d'"' -f4)
  [ "$got" = "$want" ] || { echo "mpirun -n $n: digest $got != $want"; exit 1; }
done
echo "ring digest $want on threads (1, 2, 3, 4, 8 ranks) and MPI (1, 2, 4 ranks)"

step "sweep acceptance: cargo run --release -- sweep scenarios/sweep-epidemic.toml, and under mpirun"
cargo run --release -- sweep scenarios/sweep-epidemic.toml --out target/ci/sweep
for f in results.csv results.json sweep.png tasks.jsonl; do
  [ -s "target/ci/sweep/$f" ] || { echo "the sweep did not write $f"; exit 1; }
done
cargo build --release --features mpi
mpirun_ -n 3 target/release/parsim sweep scenarios/sweep-epidemic.toml --backend mpi --out target/ci/sweep-mpi >/dev/null
cmp target/ci/sweep/results.csv target/ci/sweep-mpi/results.csv || { echo "the MPI sweep table differs"; exit 1; }
echo "sweep table identical on threads and under mpirun -n 3"

step "resilience: checkpoint, SIGKILL under mpirun at 10 random points, restart (also on other rank counts)"
# The binary built with MPI above runs the threads backend too.
bin=target/release/parsim
HEAT="scenarios/heat2d.toml --set grid.size=[256,256] --set grid.steps=200 --set grid.png=false --set grid.output_every=0"
EPI="scenarios/epidemic.toml --set abm.agents=20000 --set abm.days=100"
TW="scenarios/phold.toml --set phold.lps=256 --set phold.end=50 --set des.engine=optimistic --set des.gvt_interval=256"
$bin run $HEAT -q --out target/ci/ff-heat && heat_want=$(digest_of target/ci/ff-heat)
$bin run $EPI -q --out target/ci/ff-epi && epi_want=$(digest_of target/ci/ff-epi)
$bin run $TW -q --out target/ci/ff-tw && tw_want=$(digest_of target/ci/ff-tw)
scripts/kill-loop.sh heat 4 2 step 200 10 10 "$heat_want" -- $HEAT
scripts/kill-loop.sh epi 2 3 day 100 5 10 "$epi_want" -- $EPI
scripts/kill-loop.sh tw 1 4 gvt 60 5 10 "$tw_want" -- $TW
for pair in "2 3" "1 4"; do scripts/kill-loop.sh "heat-${pair/ /-}" $pair step 200 10 2 "$heat_want" -- $HEAT; done
for pair in "4 2" "1 4"; do scripts/kill-loop.sh "epi-${pair/ /-}" $pair day 100 5 2 "$epi_want" -- $EPI; done
for pair in "4 2" "2 3"; do scripts/kill-loop.sh "tw-${pair/ /-}" $pair gvt 60 5 2 "$tw_want" -- $TW; done
WIN="scenarios/phold.toml --set phold.lps=256 --set phold.end=50 --set des.engine=window"
scripts/kill-loop.sh win 2 3 window 300 40 4 "$tw_want" -- $WIN
CMB="scenarios/phold.toml --set phold.lps=256 --set phold.end=50 --set des.engine=conservative"
scripts/kill-loop.sh cmb 3 2 window 480 40 4 "$tw_want" -- $CMB
SEQ="scenarios/phold.toml --set phold.lps=256 --set phold.end=50 --set des.engine=sequential"
scripts/kill-loop.sh seq 1 3 window 480 40 2 "$tw_want" -- $SEQ

step "resilience: parsim supervise relaunches mpirun -n 2 after a SIGKILL, for the grid, the epidemic and Time Warp"
sup() { # NAME WANT FAULT -- ARGS…
  local name=$1 want=$2 fault=$3; shift 4
  rm -rf "target/ci/sup-$name"
  $bin supervise --restarts 3 -- mpirun -n 2 $bin run "$@" --backend mpi -q --out "target/ci/sup-$name" \
    --checkpoint-every 5 --inject "$fault" </dev/null 2>"target/ci/sup-$name.err" \
    || { echo "supervise $name failed"; cat "target/ci/sup-$name.err"; exit 1; }
  grep -q "relaunching from the newest checkpoint" "target/ci/sup-$name.err" || { echo "supervise $name: no relaunch"; exit 1; }
  [ "$(digest_of "target/ci/sup-$name")" = "$want" ] || { echo "supervise $name: digest differs"; exit 1; }
  echo "supervise $name: $(json "target/ci/sup-$name/summary.json" "d['checkpoint']['restarted_from']['message']")"
}
sup heat "$heat_want" kill:rank=1,step=77 -- $HEAT
sup epi "$epi_want" kill:rank=0,day=48 -- $EPI
sup tw "$tw_want" kill:rank=1,gvt=30 -- $TW

step "resilience: silent errors (one bit flip per run, random step and rank) are caught and rolled back"
scripts/bitflip-campaign.sh 10 | tee target/ci/bitflip.txt
if grep -q " [1-9][0-9]* undetected" target/ci/bitflip.txt; then echo "a bit flip went undetected"; exit 1; fi

step "resilience acceptance: the epidemic killed at day 90 (auto interval for a 10-minute MTBF, and every 10 days)"
epi_full=$(digest_of target/ci/epi)
for how in "--checkpoint auto --mtbf 10m" "--checkpoint-every 10"; do
  rm -rf target/ci/acc-epi
  $bin run scenarios/epidemic.toml $how --inject kill:rank=1,day=90 --auto-restart 3 --out target/ci/acc-epi 2>target/ci/acc-epi.err >/dev/null
  [ "$(digest_of target/ci/acc-epi)" = "$epi_full" ] || { echo "epidemic with $how: digest differs after the kill"; exit 1; }
  grep -E "relaunching|restarting from|starting from the beginning" target/ci/acc-epi.err | sed 's/^/  /'
done
rm -rf target/ci/acc-tw
$bin run scenarios/phold.toml --ranks 2 --set des.engine=optimistic --checkpoint-every 20 --inject kill:rank=1,gvt=45 \
  --auto-restart 2 -q --out target/ci/acc-tw 2>/dev/null
$bin run scenarios/phold.toml -q --out target/ci/acc-seq
[ "$(digest_of target/ci/acc-tw)" = "$(digest_of target/ci/acc-seq)" ] || { echo "PHOLD Time Warp: digest differs after the kill"; exit 1; }
$bin run scenarios/phold.toml --ranks 3 --set des.engine=optimistic -q --restart target/ci/acc-tw/checkpoints --out target/ci/acc-tw3
[ "$(digest_of target/ci/acc-tw3)" = "$(digest_of target/ci/acc-seq)" ] || { echo "PHOLD: restart on 3 ranks differs"; exit 1; }
echo "epidemic and PHOLD (Time Warp, 2 ranks, restarted on 3) end with the failure-free digests after a kill"

step "PHOLD std: Time Warp on 2 ranks commits the sequential history"
cargo run --release -q -- run scenarios/phold.toml --out target/ci/phold-seq >/dev/null
cargo run --release -q -- run scenarios/phold.toml --ranks 2 --set des.engine=optimistic --out target/ci/phold-tw
want=$(grep -o '"digest": "[0-9a-f]*"' target/ci/phold-seq/summary.json | cut -d'"' -f4)
got=$(grep -o '"digest": "[0-9a-f]*"' target/ci/phold-tw/summary.json | cut -d'"' -f4)
[ "$got" = "$want" ] || { echo "PHOLD optimistic digest $got != sequential $want"; exit 1; }
echo "PHOLD digest $want: sequential = optimistic on 2 ranks"

step "replicated execution under MPI: 2 replicas of 2 ranks, a flipped bit caught and rolled back under parsim supervise"
cargo build --release --features mpi -q
heat_small=(--set "grid.size=[512,512]" --set grid.steps=60 --set grid.png=false --set grid.output_every=0)
target/release/parsim run scenarios/heat2d.toml "${heat_small[@]}" -q --out target/ci/rep-ref
target/release/parsim supervise --restarts 2 -- mpirun --allow-run-as-root --oversubscribe -n 4 target/release/parsim run \
  scenarios/heat2d.toml "${heat_small[@]}" --backend mpi -q --replicate 2 --checkpoint-every 10 \
  --inject bitflip:rank=0,step=23 --out target/ci/rep-mpi </dev/null
[ "$(digest_of target/ci/rep-mpi)" = "$(digest_of target/ci/rep-ref)" ] || { echo "replicated MPI run: digest differs"; exit 1; }
json target/ci/rep-mpi/summary.json "d['replicas'] == 2 and d['ranks'] == 2 or exit(1)" >/dev/null || { echo "replicated MPI run: summary"; exit 1; }
echo "replicas caught the flip under mpirun -n 4 and the relaunch gave the failure-free digest"

step "scaling: parsim scale heat2d strong (the README command), weak, and under MPI; the report renders"
target/release/parsim scale scenarios/heat2d.toml --ranks 1,2,4 --out target/ci/scale | tee target/ci/scale.txt
grep -q "of the loss is\|nothing to attribute" target/ci/scale.txt || { echo "scale printed no diagnosis"; exit 1; }
for f in report.html scale.json scale.csv speedup.png efficiency.png loss.png phases.png network.png; do
  [ -s "target/ci/scale/$f" ] || { echo "scale did not write $f"; exit 1; }
done
target/release/parsim scale scenarios/heat2d.toml --ranks 1,2,4 --weak grid.size --reps 1 \
  --set "grid.size=[1024,1024]" --set grid.steps=200 --out target/ci/scale-weak | tail -3
target/release/parsim scale scenarios/heat2d.toml --ranks 1,2,4 --backend mpi --reps 1 \
  --set "grid.size=[1024,1024]" --set grid.steps=200 --out target/ci/scale-mpi | tail -3
json target/ci/scale-mpi/scale.json "d['backend'] == 'mpi' and len(d['points']) == 3 or exit(1)" >/dev/null \
  || { echo "scale under MPI: wrong report"; exit 1; }
# A headless browser renders the page (where Chromium is installable).
if ! command -v chromium >/dev/null 2>&1; then
  su=""; [ "$(id -u)" = 0 ] || su="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $su apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
    || { $su apt-get update -qq && $su apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; } || true
fi
if command -v chromium >/dev/null 2>&1; then
  page="file://$PWD/target/ci/scale/report.html"
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,2400 \
    --screenshot="$PWD/target/ci/scale/screenshot.png" "$page" >/dev/null 2>&1 || true
  timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "$page" 2>/dev/null > target/ci/scale/dom.html || true
  grep -q "<title>parsim scale: grid</title>" target/ci/scale/dom.html || { echo "the report did not render its title"; exit 1; }
  size=$(stat -c %s target/ci/scale/screenshot.png 2>/dev/null || echo 0)
  [ "$size" -gt 30000 ] || { echo "the report's screenshot is blank ($size bytes)"; exit 1; }
  echo "report rendered by Chromium: screenshot $size bytes, title found"
else
  echo "Chromium is not installable here: the report was checked as HTML only"
fi

step "all tests passed in $(( $(date +%s) - started )) s"
