#!/usr/bin/env python3
"""A/B of partitioner builds against gpmetis, interleaved, on the shared graphs.

    scripts/partition-ab.py REPS K,K,... 'A=path/to/parsim [args]' 'B=path/to/other/parsim [args]' ...

Runs `parsim partition G K --nooutput` for every build and `gpmetis G K
-ufactor=30 -nooutput` (as M) on every unweighted graph of ../shared/data/graphs
(GRAPHS=a.graph,b.graph to choose; GDIR=dir:dir to read other folders), alternating the order of the tools each
repetition. Prints each case's median whole-process CPU seconds (user + sys of
the child, from getrusage) and edge cut, then geometric means of CPU and cut
against gpmetis and of each build against the first.
"""
import math, os, re, resource, statistics, subprocess, sys

reps=int(sys.argv[1]); Ks=[int(k) for k in sys.argv[2].split(',')]
tools=[(t.split('=',1)[0], t.split('=',1)[1].split()) for t in sys.argv[3:]]+[('M',['gpmetis'])]
only=os.environ.get('GRAPHS')
gdirs=os.environ.get('GDIR', os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../shared/data/graphs')).split(':')
graphs=sorted(os.path.join(d,f) for d in gdirs for f in os.listdir(d) if f.endswith('.graph') and f!='example_weighted.graph')
if only: graphs=[g for g in graphs if os.path.basename(g) in only.split(',')]
def run(cmd):
    r0=resource.getrusage(resource.RUSAGE_CHILDREN)
    o=subprocess.run(cmd,capture_output=True,text=True)
    r1=resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu=(r1.ru_utime-r0.ru_utime)+(r1.ru_stime-r0.ru_stime)
    m=re.search(r'edge cut (\d+)',o.stdout+o.stderr) or re.search(r'Edgecut: (\d+)',o.stdout+o.stderr)
    return cpu, (int(m.group(1)) if m else None)
res={}
for g in graphs:
    for k in Ks:
        for r in range(reps):
            order=tools if r%2==0 else tools[::-1]
            for name,b in order:
                path=g
                if b[0]=='gpmetis': cmd=['gpmetis',path,str(k),'-ufactor=30','-nooutput']
                else: cmd=[b[0],'partition',path,str(k),'--nooutput']+b[1:]
                res.setdefault((g,k,name),[]).append(run(cmd))
def gm(xs): return math.exp(sum(math.log(x) for x in xs)/len(xs))
rows=[]
names=[n for n,_ in tools]
for g in graphs:
    for k in Ks:
        t={n:statistics.median(c for c,_ in res[(g,k,n)]) for n in names}
        c={n:res[(g,k,n)][0][1] for n in names}
        if any(v is None for v in c.values()): print('skip',g,k,c); continue
        rows.append((g,k,t,c))
        print('%-24s %3d '%(os.path.basename(g),k)+' '.join('%s %.3fs %d'%(n,t[n],c[n]) for n in names), flush=True)
for n in names[:-1]:
    print(n,'CPU/gpmetis gm %.3f  cut/gpmetis gm %.4f'%(gm([max(t[n],0.001)/max(t['M'],0.001) for _,_,t,_ in rows]), gm([max(c[n],1)/max(c['M'],1) for _,_,_,c in rows])))
for n in names[1:-1]:
    print('%s/%s CPU gm %.3f cut gm %.4f'%(n,names[0],gm([max(t[n],0.001)/max(t[names[0]],0.001) for _,_,t,_ in rows]), gm([max(c[n],1)/max(c[names[0]],1) for _,_,_,c in rows])))
