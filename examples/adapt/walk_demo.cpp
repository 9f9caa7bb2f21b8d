// Runs examples/kernels/walk.cu's kernel on the GPU and checks every score against the CPU.
// Built against an object from NVCC_ORION=adapt or train, the launches go through the
// selector compiled into that object; the program itself is unchanged. Without a usable GPU
// it prints what the CUDA runtime said and exits 2, exactly as the plain nvcc build does.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

extern "C" int walk_features_run(const int *successor, const float *feat, float *out, int nodes,
                                 int steps, int threads);

static const int kFeatures = 48;  // FEATURES in walk.cu

static float cpu_score(const std::vector<int> &succ, const std::vector<float> &feat, int nodes,
                       int steps, int t)
{
    float f[kFeatures];
    for (int i = 0; i < kFeatures; ++i)
        f[i] = feat[(size_t)i * nodes + t % nodes];
    int v = t % nodes;
    unsigned visits = 0;
    for (int s = 0; s < steps; ++s) {
        v = succ[v];
        visits = visits * 33u + (unsigned)v;
    }
    float score = (float)(visits & 0xffff);
    for (int i = 0; i < kFeatures; ++i)
        score = std::fma(score, f[i], f[(i + 3) % kFeatures]);
    return score;
}

int main()
{
    const int nodes = 4096, steps = 64, threads = 128 * 256;
    std::vector<int> succ(nodes);
    std::vector<float> feat((size_t)kFeatures * nodes), out(threads);
    unsigned x = 12345;
    for (int i = 0; i < nodes; ++i) {
        x = x * 1664525u + 1013904223u;
        succ[i] = (int)(x % nodes);
    }
    for (size_t i = 0; i < feat.size(); ++i)
        feat[i] = 0.5f + (float)(i % 7) * 0.0625f;
    int err = walk_features_run(succ.data(), feat.data(), out.data(), nodes, steps, threads);
    if (err != 0) {
        std::printf("walk_demo: CUDA error %d: %s\n", err, cudaGetErrorString((cudaError_t)err));
        return 2;
    }
    int bad = 0;
    for (int t = 0; t < threads; ++t) {
        float want = cpu_score(succ, feat, nodes, steps, t);
        if (std::fabs(out[t] - want) > 1e-3f * std::fmax(1.0f, std::fabs(want)))
            ++bad;
    }
    std::printf("walk_demo: %d threads, %d mismatches\n", threads, bad);
    return bad ? 1 : 0;
}
