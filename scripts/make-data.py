#!/usr/bin/env python3
"""Writes the small inputs the README's commands use, under scenarios/data/:
a 64 x 64 grid graph (METIS) with its coordinates, pins and an old partition
for the partitioner, a small-world edge list (SNAP text), and a 5,000-agent
contact network (SNAP text). Deterministic: running it again gives the same
files."""
import os
import random

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "data")
os.makedirs(here, exist_ok=True)

# 64 x 64 grid: vertex (y, x) -> y * 64 + x, 4-neighbour edges.
n = 64
adj = [[] for _ in range(n * n)]
for y in range(n):
    for x in range(n):
        v = y * n + x
        if x + 1 < n:
            adj[v].append(v + 1); adj[v + 1].append(v)
        if y + 1 < n:
            adj[v].append(v + n); adj[v + n].append(v)
edges = sum(len(a) for a in adj) // 2
with open(os.path.join(here, "grid-64x64.graph"), "w") as f:
    f.write(f"% a 64 x 64 grid graph, vertex y*64+x (METIS numbering from 1)\n{n * n} {edges}\n")
    for a in adj:
        f.write(" ".join(str(u + 1) for u in sorted(a)) + "\n")
with open(os.path.join(here, "grid-64x64.xyz"), "w") as f:
    for y in range(n):
        for x in range(n):
            f.write(f"{x} {y} 0\n")
with open(os.path.join(here, "grid-64x64.pins"), "w") as f:
    # The four corners pinned to parts 0-3, every other vertex free.
    corners = {0: 0, n - 1: 1, n * (n - 1): 2, n * n - 1: 3}
    for v in range(n * n):
        f.write(f"{corners.get(v, -1)}\n")
with open(os.path.join(here, "grid-64x64.part.8"), "w") as f:
    # Eight horizontal stripes: a starting point for repartitioning.
    for v in range(n * n):
        f.write(f"{(v // n) * 8 // n}\n")

rng = random.Random(42)
# A small world: a ring of 2,000 vertices, each linked to 3 on each side, 10 % rewired.
m = 2000
with open(os.path.join(here, "small-world.txt"), "w") as f:
    f.write("# a Watts-Strogatz small world, 2000 vertices (SNAP edge list: u v per line)\n")
    for v in range(m):
        for j in range(1, 4):
            w = rng.randrange(m) if rng.random() < 0.1 else (v + j) % m
            if w != v:
                f.write(f"{v}\t{w}\n")
# A contact network: Erdos-Renyi, 5,000 agents, mean degree 8.
agents, pairs = 5000, 5000 * 8 // 2
seen = set()
with open(os.path.join(here, "contacts-5k.txt"), "w") as f:
    f.write("# an Erdos-Renyi contact network: 5000 agents, mean degree 8 (u v per line)\n")
    while len(seen) < pairs:
        u, v = rng.randrange(agents), rng.randrange(agents)
        if u != v and (min(u, v), max(u, v)) not in seen:
            seen.add((min(u, v), max(u, v)))
            f.write(f"{u} {v}\n")
