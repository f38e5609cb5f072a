#!/usr/bin/env bash
# Builds the MPI test binary TEST of CRATE (a harness-free [[test]] that
# needs the `mpi` feature) and prints its path, for `mpirun -n N "$(...)"`.
# (Test names are unique in the workspace; CRATE says where it lives.)
#   scripts/mpi-test-bin.sh parsim-grid mpi_grid
#   scripts/mpi-test-bin.sh --features    (the feature set, for cargo --features)
set -euo pipefail
# Every crate's `mpi` feature: scripts/test.sh builds the test suite with
# these, and the suites are found in that build (a per-crate feature set
# would rebuild the workspace's crates for each suite).
features=parsim-comm/mpi,parsim-grid/mpi,parsim-des/mpi,parsim-graph/mpi,parsim-abm/mpi,parsim/mpi,parsim-cli/mpi
if [ "${1:-}" = --features ]; then
  echo "$features"
  exit 0
fi
crate=$1 test=$2
cargo test --workspace --features "$features" --no-run --message-format=json-render-diagnostics \
  | python3 -c '
import json, sys
want = sys.argv[1]
exe = [j["executable"] for j in map(json.loads, sys.stdin)
       if j.get("reason") == "compiler-artifact" and j.get("executable") and j["target"]["name"] == want]
if not exe:
    sys.exit("no test binary named " + want + " (in " + sys.argv[2] + ")")
print(exe[-1])' "$test" "$crate"
