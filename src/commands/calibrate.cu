// nvcc-orion calibrate's microbenchmarks (issue 32; Resios' instantiation workflow,
// docs/papers.md §Resios): what the static model's memory parameters are on this GPU.
// Built by `nvcc-orion calibrate` with the user's nvcc, run, and read back line by line
// (src/predict/calibration.rs):
//   DEVICE,<name>,<sm>,<SMs>,<L2 bytes>,<CUDA driver API version>
//   CHASE,<footprint bytes>,<cycles per load>       one thread, L1-cached global loads
//   SHARED,<cycles per load>                        one thread, shared memory
//   STREAM,<L1|L2|DRAM>,<warps per SM>,<bytes per clock per SM>
// Exit status 3 and one NO-GPU line when there is no usable GPU. Every measurement takes a
// few milliseconds; the whole run well under a minute.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            printf("ERROR,%s,%s\n", #x, cudaGetErrorString(e_));                               \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

// Line size the chase steps by: one access per 128-byte L1 line.
static const unsigned LINE_WORDS = 32;

// One thread follows `next` for `steps` loads twice (the first pass warms the caches) and
// times the second.
__global__ void chase(const unsigned *__restrict__ next, int steps, unsigned *sink,
                      long long *cycles)
{
    unsigned j = 0;
    for (int i = 0; i < steps; ++i)
        j = __ldca(&next[j]);
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i)
        j = __ldca(&next[j]);
    long long t1 = clock64();
    sink[0] = j;
    cycles[0] = t1 - t0;
}

// The same chase through shared memory.
__global__ void chase_shared(const unsigned *__restrict__ next, int n, int steps, unsigned *sink,
                             long long *cycles)
{
    __shared__ unsigned s[4096];
    for (int i = 0; i < n; ++i)
        s[i] = next[i];
    unsigned j = 0;
    for (int i = 0; i < steps; ++i)
        j = s[j];
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i)
        j = s[j];
    long long t1 = clock64();
    sink[0] = j;
    cycles[0] = t1 - t0;
}

__device__ unsigned smid()
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// Every warp streams 16-byte loads: from shared memory (level 0), from a buffer L2 holds with
// L1 bypassed (1), or from a buffer far larger than L2 (2). Each block records its SM and its
// first and last clock.
__global__ void stream(const float4 *__restrict__ buf, size_t words, int level, int iters,
                       size_t offset, float *sink, long long *clocks, unsigned *sms)
{
    __shared__ float4 tile[1024];
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t threads = (size_t)gridDim.x * blockDim.x;
    float4 acc = make_float4(0, 0, 0, 0);
    if (level == 0) {
        for (int i = threadIdx.x; i < 1024; i += blockDim.x)
            tile[i] = buf[i];
        __syncthreads();
    }
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
        float4 v;
        if (level == 0)
            v = tile[(threadIdx.x + i * 32) & 1023];
        else
            v = __ldcg(&buf[(offset + tid + (size_t)i * threads) % words]);
        acc.x += v.x;
        acc.y += v.y;
        acc.z += v.z;
        acc.w += v.w;
    }
    __syncthreads();
    long long t1 = clock64();
    if (acc.x + acc.y + acc.z + acc.w == 1234.5f)
        sink[tid] = acc.x;
    if (threadIdx.x == 0) {
        clocks[2 * blockIdx.x] = t0;
        clocks[2 * blockIdx.x + 1] = t1;
        sms[blockIdx.x] = smid();
    }
}

// A random single cycle over `n` slots (Sattolo), each slot `stride` words apart.
static std::vector<unsigned> cycle(size_t n, unsigned stride, unsigned seed)
{
    std::vector<unsigned> order(n);
    for (size_t i = 0; i < n; ++i)
        order[i] = (unsigned)i;
    unsigned x = seed;
    for (size_t i = n - 1; i > 0; --i) {
        x = x * 1664525u + 1013904223u;
        size_t k = x % i;
        unsigned t = order[i];
        order[i] = order[k];
        order[k] = t;
    }
    std::vector<unsigned> next(n * stride, 0);
    for (size_t i = 0; i < n; ++i)
        next[(size_t)order[i] * stride] = order[(i + 1) % n] * stride;
    return next;
}

static int run_chases(size_t l2_bytes)
{
    unsigned *d_sink;
    long long *d_cycles;
    CHECK(cudaMalloc(&d_sink, sizeof(unsigned)));
    CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
    // 4 KiB to four times L2, doubling.
    for (size_t bytes = 4096; bytes <= 4 * l2_bytes; bytes *= 2) {
        size_t lines = bytes / (LINE_WORDS * 4);
        std::vector<unsigned> next = cycle(lines, LINE_WORDS, 12345u);
        unsigned *d_next;
        CHECK(cudaMalloc(&d_next, next.size() * sizeof(unsigned)));
        CHECK(cudaMemcpy(d_next, next.data(), next.size() * sizeof(unsigned),
                         cudaMemcpyHostToDevice));
        // Every line once per pass, at most a million timed loads.
        int steps = (int)(lines < (1u << 20) ? lines : (1u << 20));
        if (steps < 4096)
            steps = 4096;
        chase<<<1, 1>>>(d_next, steps, d_sink, d_cycles);
        CHECK(cudaGetLastError());
        long long cycles;
        CHECK(cudaMemcpy(&cycles, d_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
        printf("CHASE,%zu,%.2f\n", bytes, (double)cycles / steps);
        CHECK(cudaFree(d_next));
    }
    std::vector<unsigned> next = cycle(4096, 1, 54321u);
    unsigned *d_next;
    CHECK(cudaMalloc(&d_next, next.size() * sizeof(unsigned)));
    CHECK(cudaMemcpy(d_next, next.data(), next.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    chase_shared<<<1, 1>>>(d_next, 4096, 4096, d_sink, d_cycles);
    CHECK(cudaGetLastError());
    long long cycles;
    CHECK(cudaMemcpy(&cycles, d_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
    printf("SHARED,%.2f\n", (double)cycles / 4096);
    CHECK(cudaFree(d_next));
    CHECK(cudaFree(d_sink));
    CHECK(cudaFree(d_cycles));
    return 0;
}

static int run_streams(const cudaDeviceProp &p)
{
    const int sms = p.multiProcessorCount;
    const int max_warps = p.maxThreadsPerMultiProcessor / 32;
    const size_t l2_words = (size_t)p.l2CacheSize / 16;
    size_t dram_words = 8 * l2_words;
    if (dram_words < (256u << 20) / 16)
        dram_words = (256u << 20) / 16;
    float4 *d_buf;
    float *d_sink;
    long long *d_clocks;
    unsigned *d_sms;
    CHECK(cudaMalloc(&d_buf, dram_words * sizeof(float4)));
    CHECK(cudaMemset(d_buf, 0, dram_words * sizeof(float4)));
    const int max_blocks = sms * 64;
    CHECK(cudaMalloc(&d_sink, (size_t)max_blocks * 256 * sizeof(float)));
    CHECK(cudaMalloc(&d_clocks, (size_t)max_blocks * 2 * sizeof(long long)));
    CHECK(cudaMalloc(&d_sms, (size_t)max_blocks * sizeof(unsigned)));
    const char *names[3] = {"L1", "L2", "DRAM"};
    const int warps[] = {1, 2, 4, 8, 16, 24, 32, 48, 64};
    for (int level = 0; level < 3; ++level) {
        // L2: a quarter of it, so it stays there; DRAM: the whole buffer.
        size_t words = level == 1 ? l2_words / 4 : dram_words;
        for (int w : warps) {
            if (w > max_warps)
                continue;
            int block = w * 32 < 256 ? w * 32 : 256;
            int blocks = sms * (w * 32 / block);
            int iters = level == 0 ? 4096 : 1024;
            std::vector<long long> clocks(2 * blocks);
            std::vector<unsigned> on(blocks);
            double best = 0;
            // The best of three launches (the first may warm L2).
            for (int rep = 0; rep < 3; ++rep) {
                size_t offset = (size_t)rep * blocks * block * iters;
                stream<<<blocks, block>>>(d_buf, words, level, iters, offset, d_sink, d_clocks,
                                          d_sms);
                CHECK(cudaGetLastError());
                CHECK(cudaMemcpy(clocks.data(), d_clocks, clocks.size() * sizeof(long long),
                                 cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(on.data(), d_sms, on.size() * sizeof(unsigned),
                                 cudaMemcpyDeviceToHost));
                // Per SM: its blocks' bytes over its window of clocks; the mean over SMs.
                std::vector<long long> lo(sms + 64, -1), hi(sms + 64, 0);
                std::vector<double> bytes(sms + 64, 0);
                for (int b = 0; b < blocks; ++b) {
                    unsigned s = on[b] % (sms + 64);
                    if (lo[s] < 0 || clocks[2 * b] < lo[s])
                        lo[s] = clocks[2 * b];
                    if (clocks[2 * b + 1] > hi[s])
                        hi[s] = clocks[2 * b + 1];
                    bytes[s] += (double)block * iters * 16;
                }
                double sum = 0;
                int n = 0;
                for (size_t s = 0; s < lo.size(); ++s)
                    if (lo[s] >= 0 && hi[s] > lo[s]) {
                        sum += bytes[s] / (double)(hi[s] - lo[s]);
                        ++n;
                    }
                double rate = n ? sum / n : 0;
                if (rate > best)
                    best = rate;
            }
            printf("STREAM,%s,%d,%.4f\n", names[level], w, best);
        }
    }
    CHECK(cudaFree(d_buf));
    CHECK(cudaFree(d_sink));
    CHECK(cudaFree(d_clocks));
    CHECK(cudaFree(d_sms));
    return 0;
}

int main()
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("NO-GPU,%s\n", e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
        return 3;
    }
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    int driver = 0;
    CHECK(cudaDriverGetVersion(&driver));
    printf("DEVICE,%s,%d,%d,%d,%d\n", p.name, p.major * 10 + p.minor, p.multiProcessorCount,
           p.l2CacheSize, driver);
    fflush(stdout);
    if (run_chases((size_t)p.l2CacheSize) != 0)
        return 1;
    fflush(stdout);
    if (run_streams(p) != 0)
        return 1;
    return 0;
}
