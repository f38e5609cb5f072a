#!/usr/bin/env bash
# Builds the MPI test binary TEST of CRATE (a harness-free [[test]] that
# needs the `mpi` feature) and prints its path, for `mpirun -n N "$(...)"`.
#   scripts/mpi-test-bin.sh parsim-grid mpi_grid
set -euo pipefail
crate=$1 test=$2
cargo test -p "$crate" --features mpi --test "$test" --no-run --message-format=json-render-diagnostics \
  | python3 -c '
import json, sys
want = sys.argv[1]
exe = [j["executable"] for j in map(json.loads, sys.stdin)
       if j.get("reason") == "compiler-artifact" and j.get("executable") and j["target"]["name"] == want]
if not exe:
    sys.exit("no test binary named " + want)
print(exe[-1])' "$test"
