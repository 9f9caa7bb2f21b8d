#!/usr/bin/env python3
"""A build's process timeline from an strace log: start, end, duration and name of each
tool run (with its -arch and the files it names), in start order.

    strace -f --seccomp-bpf -tt -e trace=execve,exit_group -e signal=none -o T <build command>
    python3 bench/results/timeline.py T
"""
import re
import sys

starts, names, ev, t0 = {}, {}, [], None
for line in open(sys.argv[1]):
    p = line.split()
    pid, t = p[0], p[1]
    h, m, s = t.split(':')
    ts = int(h) * 3600 + int(m) * 60 + float(s)
    if t0 is None:
        t0 = ts
    if 'execve(' in line and 'ENOENT' not in line:
        tool = re.search(r'execve\("([^"]+)"', line).group(1).split('/')[-1]
        arch = re.search(r'-arch=(sm_\d+)', line)
        files = re.findall(r'"([^"]*\.(?:ptx|cubin|o))"', line)
        starts[pid] = ts - t0
        names[pid] = ' '.join([tool, arch.group(1) if arch else '',
                               ' '.join(f.split('/')[-1] for f in files)[:90]])
    if ('exit_group' in line or '+++ exited' in line) and pid in names:
        ev.append((starts[pid], ts - t0, names.pop(pid)))
for s, e, n in sorted(ev):
    if n.split()[0] in ('sh', 'rm', 'nvcc-orion', 'cc1plus', 'as'):
        continue
    print(f"{s:7.2f} {e:7.2f} {e - s:6.2f} {n}")
