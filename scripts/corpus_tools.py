"""What the spill-corpus scripts share: the toolkit's tools and what cuobjdump and nvdisasm say
of a cubin's kernels."""
import os
import re
import subprocess


def tool(name):
    home = os.environ.get("CUDA_HOME")
    return os.path.join(home, "bin", name) if home else name


def res_usage(cubin):
    """function -> (registers, stack, shared) from `cuobjdump -res-usage`."""
    out, cur = {}, None
    text = subprocess.run([tool("cuobjdump"), "-res-usage", cubin], capture_output=True,
                          text=True, check=True).stdout
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            cur = m.group(1)
            continue
        m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)", line)
        if m and cur:
            out[cur] = tuple(int(g) for g in m.groups())
    return out


def local_ops(cubin, spills_only=False):
    """kernel -> STL/LDL instructions in its own section; with `spills_only`, only those
    nvdisasm marks SpillRefill (a kernel's own local arrays are no spills)."""
    text = subprocess.run([tool("nvdisasm"), "-c", cubin], capture_output=True, text=True,
                          check=True).stdout
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*\.section\s+\.text\.(\S+?),", line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, 0)
            continue
        if (cur and re.search(r"\b(STL|LDL)(\.\S+)?\s", line)
                and (not spills_only or "SpillRefill" in line)):
            out[cur] += 1
    return out
