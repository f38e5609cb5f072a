#!/usr/bin/env python3
"""Writes five METIS graphs of the classes the shared graphs lack, for
checking the partitioner on inputs it was not tuned on (BENCHMARKS.md):

    scripts/fe-graphs.py OUTDIR        # needs numpy and scipy (pip install numpy scipy)

- body1, body2: long, thin, tapered and bent 3-D bodies (40,000 and 30,000
  random points in a 40 × 2 × 1 and a 60 × 2 × 2 box, Delaunay tetrahedra);
- tube1: the surface of a long tube, 40 × 1000 vertices, a random diagonal
  per quad;
- dense2d, dense3d: matrix graphs with several unknowns per node (3 on a
  2-D and 2 on a 3-D Delaunay mesh of 8,000 and 12,000 nodes, every unknown
  coupled to every unknown of its node and of the adjacent nodes), average
  degree about 20 and 31.

Vertex ids are shuffled (a file's order gives a partitioner no hint).
"""
import os, random, sys
import numpy as np
from scipy.spatial import Delaunay

def write(name, n, edges, seed):
    rnd = random.Random(seed); perm = list(range(n)); rnd.shuffle(perm)
    adj = [set() for _ in range(n)]
    for a, b in edges:
        if a != b: adj[perm[a]].add(perm[b]); adj[perm[b]].add(perm[a])
    m = sum(len(a) for a in adj) // 2
    with open(name, 'w') as f:
        f.write(f"{n} {m}\n")
        for a in adj: f.write(' '.join(str(u + 1) for u in sorted(a)) + '\n')

def delaunay_edges(p):
    e = set()
    for s in Delaunay(p).simplices:
        for i in range(len(s)):
            for j in range(i + 1, len(s)):
                a, b = int(s[i]), int(s[j]); e.add((min(a, b), max(a, b)))
    # Drop the long edges Delaunay adds across the concave side of a bent body.
    d = np.array([np.linalg.norm(p[a] - p[b]) for a, b in e]); med = np.median(d)
    return [x for x, dd in zip(e, d) if dd < 4 * med]

def body(out, seed, n, L, W, H):
    p = np.random.default_rng(seed).random((n, 3)) * [L, W, H]
    p[:, 1] = (p[:, 1] - W / 2) * (1 - 0.5 * p[:, 0] / L) + 0.3 * L * np.sin(np.pi * p[:, 0] / L)
    p[:, 2] = (p[:, 2] - H / 2) * (1 - 0.5 * p[:, 0] / L)
    write(out, n, delaunay_edges(p), seed)

def dense(out, seed, n, dofs, dims):
    p = np.random.default_rng(seed).random((n, len(dims))) * dims
    E = [(a * dofs + i, b * dofs + j) for a, b in delaunay_edges(p) for i in range(dofs) for j in range(dofs)]
    E += [(a * dofs + i, a * dofs + j) for a in range(n) for i in range(dofs) for j in range(i + 1, dofs)]
    write(out, n * dofs, E, seed)

def tube(out, seed, nt, nz):
    rnd = random.Random(seed); v = lambda i, j: j * nt + (i % nt); E = []
    for j in range(nz):
        for i in range(nt):
            E.append((v(i, j), v(i + 1, j)))
            if j + 1 < nz:
                E.append((v(i, j), v(i, j + 1)))
                E.append((v(i, j), v(i + 1, j + 1)) if rnd.random() < 0.5 else (v(i + 1, j), v(i, j + 1)))
    write(out, nt * nz, E, seed)

d = sys.argv[1]; os.makedirs(d, exist_ok=True)
body(os.path.join(d, 'body1.graph'), 1, 40000, 40, 2, 1)
body(os.path.join(d, 'body2.graph'), 2, 30000, 60, 2, 2)
tube(os.path.join(d, 'tube1.graph'), 1, 40, 1000)
dense(os.path.join(d, 'dense2d.graph'), 3, 8000, 3, [100, 60])
dense(os.path.join(d, 'dense3d.graph'), 4, 12000, 2, [30, 20, 10])
