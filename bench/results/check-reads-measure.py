#!/usr/bin/env python3
"""Back-to-back builds, before/after: nvcc-orion's own CPU (utime+stime of its threads, from
/proc/PID/stat polled every 5 ms until it exits), the whole build's CPU (wait4's rusage:
nvcc-orion and every tool it waited for), wall, NVCC_ORION_TIMINGS check_s, load average."""
import os, sys, time, json, subprocess
bins = {"before": os.environ.get("BEFORE_BIN", "/tmp/wtcheck/before-orion"),
        "after": os.environ.get("AFTER_BIN", "/tmp/wtcheck/after2-orion")}
src, pairs = sys.argv[1], int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "tune"
tck = os.sysconf("SC_CLK_TCK")
def one(name):
    tj = f"/tmp/wtcheck/m-{name}.jsonl"
    if os.path.exists(tj): os.remove(tj)
    env = dict(os.environ, NVCC_ORION_CACHE="off", NVCC_ORION_TIMINGS=tj, NVCC_ORION=mode)
    argv = [bins[name], "-c", "-O3", "-gencode", "arch=compute_80,code=sm_80",
            "-gencode", "arch=compute_90,code=sm_90", src, "-o", f"/tmp/wtcheck/m-{name}.o"]
    load = os.getloadavg()[0]
    t0 = time.time()
    p = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
    own = 0.0
    while True:
        try:
            f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            if f[0] != "Z":
                own = (int(f[11]) + int(f[12])) / tck
        except Exception:
            pass
        r = os.wait4(p.pid, os.WNOHANG)
        if r[0] == p.pid:
            ru = r[2]; break
        time.sleep(0.005)
    wall = time.time() - t0
    tim = json.loads(open(tj).read().splitlines()[-1])
    return dict(own=own, total=ru.ru_utime + ru.ru_stime, wall=wall, check=tim["check_s"], load=load)
rows = {"before": [], "after": []}
for i in range(pairs):
    for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
        r = one(name); rows[name].append(r)
        print(f"pair {i+1} {name:6} own_cpu={r['own']:.2f}s build_cpu={r['total']:.2f}s wall={r['wall']:.2f}s check_s={r['check']:.3f} load1={r['load']:.1f}", flush=True)
med = lambda v: sorted(v)[len(v)//2]
for name in rows:
    rs = rows[name]
    print(f"median {name:6} own_cpu={med([r['own'] for r in rs]):.2f}s build_cpu={med([r['total'] for r in rs]):.2f}s wall={med([r['wall'] for r in rs]):.2f}s check_s={med([r['check'] for r in rs]):.3f}")
