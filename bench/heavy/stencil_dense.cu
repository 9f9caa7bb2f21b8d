// Register-heavy dense stencils: a high-order star stencil streaming along z with the column
// of planes held in registers (2.5-D blocking, as in seismic and wave-equation codes), WENO5
// reconstruction of several conserved variables (smoothness indicators divided into the
// weights), and a normalised box smoother. Each keeps many values live across its sweep; the
// divisions and square roots call the compiler's slow-path helper subroutines. Written for
// issue 46's coverage measurement (bench/results/spill2smem-heavy.md).
template <typename T> __device__ __forceinline__ T rt(T x) { return sqrt(x); }
template <> __device__ __forceinline__ float rt<float>(float x) { return sqrtf(x); }

// Order-2R star stencil in x, y, z; the 2R+1 planes of the column in registers, NZ steps.
template <typename T, int R, int NZ>
__global__ void star_column(const T *__restrict__ in, T *__restrict__ out, int nx, int ny,
                            T vmax) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x + R;
  const int y = blockIdx.y * blockDim.y + threadIdx.y + R;
  const int plane = nx * ny;
  T col[2 * R + 1];
#pragma unroll
  for (int k = 0; k < 2 * R + 1; k++) col[k] = in[k * plane + y * nx + x];
#pragma unroll
  for (int z = 0; z < NZ; z++) {
    const int c = (z + R) * plane + y * nx + x;
    T lap = T(-3 * R) * col[R];
#pragma unroll
    for (int k = 1; k <= R; k++) {
      const T w = T(1.0 / (k * k));
      lap += w * (col[R - k] + col[R + k] + in[c - k] + in[c + k] + in[c - k * nx] +
                  in[c + k * nx]);
    }
    const T v = col[R];
    out[c] = T(2) * v + lap / (T(1) + rt<T>(v * v + vmax));
#pragma unroll
    for (int k = 0; k < 2 * R; k++) col[k] = col[k + 1];
    col[2 * R] = in[(z + 2 * R + 1) * plane + y * nx + x];
  }
}

// WENO5 left-biased reconstruction of NV variables at a face, with the five-point stencils of
// every variable loaded first.
template <typename T, int NV>
__global__ void weno5(const T *__restrict__ q, T *__restrict__ face, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x + 2;
  T v[NV][5];
#pragma unroll
  for (int m = 0; m < NV; m++)
#pragma unroll
    for (int k = 0; k < 5; k++) v[m][k] = q[m * n + i + k - 2];
  const T eps = T(1e-6);
#pragma unroll
  for (int m = 0; m < NV; m++) {
    const T a = v[m][0], b = v[m][1], c = v[m][2], d = v[m][3], e = v[m][4];
    const T b0 = T(13.0 / 12) * (a - 2 * b + c) * (a - 2 * b + c) +
                 T(0.25) * (a - 4 * b + 3 * c) * (a - 4 * b + 3 * c);
    const T b1 = T(13.0 / 12) * (b - 2 * c + d) * (b - 2 * c + d) + T(0.25) * (b - d) * (b - d);
    const T b2 = T(13.0 / 12) * (c - 2 * d + e) * (c - 2 * d + e) +
                 T(0.25) * (3 * c - 4 * d + e) * (3 * c - 4 * d + e);
    const T a0 = T(0.1) / ((eps + b0) * (eps + b0));
    const T a1 = T(0.6) / ((eps + b1) * (eps + b1));
    const T a2 = T(0.3) / ((eps + b2) * (eps + b2));
    const T s = T(1) / (a0 + a1 + a2);
    const T p0 = (2 * a - 7 * b + 11 * c) / T(6), p1 = (-b + 5 * c + 2 * d) / T(6);
    const T p2 = (2 * c + 5 * d - e) / T(6);
    T r = s * (a0 * p0 + a1 * p1 + a2 * p2);
    // Couple the variables (a characteristic-like mix) so every stencil stays live.
#pragma unroll
    for (int o = 0; o < NV; o++) r += T(0.01) * v[o][(m + o) % 5] / (T(1) + v[o][2] * v[o][2]);
    face[m * n + i] = r;
  }
}

// A normalised W x W box smoother: every value of the window held, each output divided by
// the window's root-mean-square.
template <typename T, int W>
__global__ void box_rms(const T *__restrict__ in, T *__restrict__ out, int pitch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  T v[W][W];
  T ss = 0;
#pragma unroll
  for (int a = 0; a < W; a++)
#pragma unroll
    for (int b = 0; b < W; b++) {
      v[a][b] = in[(y + a) * pitch + x + b];
      ss += v[a][b] * v[a][b];
    }
  const T inv = T(1) / rt<T>(ss / T(W * W) + T(1e-12));
#pragma unroll
  for (int a = 0; a < W; a++) {
    T row = 0;
#pragma unroll
    for (int b = 0; b < W; b++) row += v[a][b] * v[(a + b) % W][(2 * b + a) % W];
    out[(y + a) * pitch + x] = row * inv / (T(1) + v[a][a] * v[a][a]);
  }
}

template __global__ void star_column<float, 4, 8>(const float *, float *, int, int, float);
template __global__ void star_column<float, 6, 8>(const float *, float *, int, int, float);
template __global__ void star_column<float, 8, 8>(const float *, float *, int, int, float);
template __global__ void star_column<double, 4, 8>(const double *, double *, int, int, double);
template __global__ void star_column<double, 6, 8>(const double *, double *, int, int, double);
template __global__ void weno5<float, 5>(const float *, float *, int);
template __global__ void weno5<float, 8>(const float *, float *, int);
template __global__ void weno5<double, 5>(const double *, double *, int);
template __global__ void weno5<double, 7>(const double *, double *, int);
template __global__ void box_rms<float, 6>(const float *, float *, int);
template __global__ void box_rms<float, 8>(const float *, float *, int);
template __global__ void box_rms<double, 5>(const double *, double *, int);
template __global__ void box_rms<double, 6>(const double *, double *, int);
