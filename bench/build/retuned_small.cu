// Build benchmark (issue 47): many small kernels, most of them retuned. Each is a few lines:
// a handful of values kept live across a chain of dependent loads (latency bound), with
// ptxas's register count just above an occupancy cliff.

#define SMALL(NAME, LIVE, OP)                                                                 \
    template <typename T>                                                                     \
    __global__ void __launch_bounds__(256)                                                    \
        NAME(const int *__restrict__ next, const T *__restrict__ x, T *__restrict__ y, int n, \
             int iters) {                                                                     \
        int t = blockIdx.x * blockDim.x + threadIdx.x;                                        \
        T v[LIVE];                                                                            \
        _Pragma("unroll") for (int i = 0; i < LIVE; ++i) v[i] = (T)((t + 5 * i) ^ (3 * i));   \
        int r = next[t % n];                                                                  \
        for (int it = 0; it < iters; ++it) {                                                  \
            _Pragma("unroll") for (int c = 0; c < 12; ++c) r = next[r];                       \
            T s = x[r];                                                                       \
            _Pragma("unroll") for (int i = 0; i < LIVE; ++i) v[i] = OP(v[i], s, v[(i + 1) % LIVE]); \
        }                                                                                     \
        T acc = 0;                                                                            \
        _Pragma("unroll") for (int i = 0; i < LIVE; ++i) acc += v[i];                         \
        y[t] = acc;                                                                           \
    }

#define FMA(a, s, b) ((a) * (s) + (b))
#define SUB(a, s, b) ((a) - (s) * (b))
#define MAXP(a, s, b) ((a) > (b) ? (a) + (s) : (b) - (s))
#define MIX(a, s, b) ((a) * (T)3 + (s) - (b))

SMALL(fma_40, 40, FMA)
SMALL(sub_44, 44, SUB)
SMALL(max_48, 48, MAXP)
SMALL(mix_52, 52, MIX)
SMALL(fma_56, 56, FMA)
SMALL(sub_60, 60, SUB)
SMALL(max_64, 64, MAXP)
SMALL(mix_68, 68, MIX)
SMALL(fma_72, 72, FMA)
SMALL(sub_76, 76, SUB)
SMALL(max_80, 80, MAXP)
SMALL(mix_88, 88, MIX)
SMALL(fma_96, 96, FMA)
SMALL(sub_104, 104, SUB)
SMALL(max_112, 112, MAXP)
SMALL(mix_120, 120, MIX)

#define TYPES(K)                                                                     \
    template __global__ void K<float>(const int *, const float *, float *, int, int); \
    template __global__ void K<double>(const int *, const double *, double *, int, int);
TYPES(fma_40)
TYPES(sub_44)
TYPES(max_48)
TYPES(mix_52)
TYPES(fma_56)
TYPES(sub_60)
TYPES(max_64)
TYPES(mix_68)
TYPES(fma_72)
TYPES(sub_76)
TYPES(max_80)
TYPES(mix_88)
TYPES(fma_96)
TYPES(sub_104)
TYPES(max_112)
TYPES(mix_120)
