// A kernel whose first variant name is already taken by a kernel of the user's
// (tests/multi_variant.rs): the build must still succeed, with plain tune's code and one
// warning. `hops` keeps many values live across a chain of dependent loads, so the tuner
// builds lower register budgets for it.
#define KEEP 44

extern "C" __global__ void hops(const int *next, const float *w, float *out, int n, int steps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float keep[KEEP];
#pragma unroll
    for (int i = 0; i < KEEP; ++i) keep[i] = w[(size_t)i * n + t % n];
    int at = t % n;
    unsigned trail = 0;
    for (int s = 0; s < steps; ++s) {
        at = next[at];
        trail = trail * 31u + (unsigned)at;
    }
    float acc = (float)(trail & 0xfff);
#pragma unroll
    for (int i = 0; i < KEEP; ++i) acc = fmaf(acc, keep[i], keep[(i + 5) % KEEP]);
    out[t] = acc;
}

extern "C" __global__ void hops__orion_v1(float *out) { out[threadIdx.x] = 1.f; }
