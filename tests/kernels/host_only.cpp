// Host-only translation unit: no CUDA constructs, compiled by the host compiler only.
#include <cstdio>
#include <vector>

int host_sum(int n) {
    std::vector<int> v(n);
    int s = 0;
    for (int i = 0; i < n; ++i) s += v[i] = i * i;
    return s;
}
