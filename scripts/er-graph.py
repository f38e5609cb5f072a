#!/usr/bin/env python3
"""Writes an Erdős–Rényi G(N, M) graph (mean degree 10) as a METIS file, for
measuring partitioners on graphs whose edges do not merge as they coarsen.

    python3 scripts/er-graph.py N OUT.graph [SEED]

M = N·10/2 pairs drawn uniformly (numpy's default generator, SEED 42 by
default); self-loops and repeated pairs are dropped. N = 10^7 takes about a
minute and 790 MB of text (BENCHMARKS.md, "A random graph of 10⁷ vertices
against gpmetis").
"""
import sys

import numpy as np

n = int(sys.argv[1])
out = sys.argv[2]
rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 42)
m = n * 10 // 2
a = rng.integers(0, n, m, dtype=np.int64)
b = rng.integers(0, n, m, dtype=np.int64)
keep = a != b
a, b = a[keep], b[keep]
key = np.unique(np.minimum(a, b) * n + np.maximum(a, b))
lo, hi = key // n, key % n
src = np.concatenate([lo, hi])
dst = np.concatenate([hi, lo])
order = np.argsort(src, kind="stable")
src, dst = src[order], dst[order]
xadj = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))])
with open(out, "w") as f:
    f.write(f"{n} {len(key)}\n")
    names = (dst + 1).astype(str)
    for start in range(0, n, 100000):
        rows = [" ".join(names[xadj[v]:xadj[v + 1]]) for v in range(start, min(n, start + 100000))]
        f.write("\n".join(rows))
        f.write("\n")
