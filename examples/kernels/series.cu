// Double-precision special functions by series: for every sample x the kernel evaluates
// J0(x) and J1(x) (Bessel, power series / Hankel asymptotics) in a non-inlined device
// function, then a degree-NC Chebyshev expansion of a user function with Clenshaw's
// recurrence, unrolled over several independent samples per thread for ILP.
#include <cuda_runtime.h>

#define NC 24   // Chebyshev coefficients
#define SPT 4   // samples per thread

__constant__ double c_cheb[NC];

struct Bessel01 {
    double j0, j1;
};

// Kept out of line on purpose: a real call with an ABI, so callee-saved registers count.
__device__ __noinline__ Bessel01 bessel_j01(double x)
{
    const double ax = fabs(x);
    Bessel01 r;
    if (ax < 12.0) {
        // Power series: J_n(x) = sum_k (-1)^k (x/2)^(2k+n) / (k! (k+n)!)
        const double h = 0.5 * x, h2 = h * h;
        double t0 = 1.0, t1 = h, s0 = 1.0, s1 = h;
#pragma unroll 4
        for (int k = 1; k < 40; ++k) {
            t0 *= -h2 / ((double)k * k);
            t1 *= -h2 / ((double)k * (k + 1));
            s0 += t0;
            s1 += t1;
            if (fabs(t0) < 1e-17 * fabs(s0) && fabs(t1) < 1e-17 * fabs(s1))
                break;
        }
        r.j0 = s0;
        r.j1 = s1;
    } else {
        // Hankel asymptotic expansion, four terms of P and Q for n = 0 and n = 1.
        const double z = 8.0 / ax, z2 = z * z;
        const double p0 = 1.0 + z2 * (-0.1098628627e-2 + z2 * (0.2734510407e-4 +
                          z2 * (-0.2073370639e-5 + z2 * 0.2093887211e-6)));
        const double q0 = -0.1562499995e-1 + z2 * (0.1430488765e-3 + z2 * (-0.6911147651e-5 +
                          z2 * (0.7621095161e-6 - z2 * 0.934935152e-7)));
        const double p1 = 1.0 + z2 * (0.183105e-2 + z2 * (-0.3516396496e-4 +
                          z2 * (0.2457520174e-5 - z2 * 0.240337019e-6)));
        const double q1 = 0.04687499995 + z2 * (-0.2002690873e-3 + z2 * (0.8449199096e-5 +
                          z2 * (-0.88228987e-6 + z2 * 0.105787412e-6)));
        const double amp = sqrt(0.636619772367581343 / ax);
        double s, c;
        sincos(ax - 0.785398163397448310, &s, &c);
        r.j0 = amp * (c * p0 - z * s * q0);
        sincos(ax - 2.356194490192344929, &s, &c);
        r.j1 = copysign(amp * (c * p1 - z * s * q1), x);
    }
    return r;
}

__global__ void series_eval(const double *__restrict__ xs, double *__restrict__ out, int n,
                            double a, double b)
{
    const int first = (blockIdx.x * blockDim.x + threadIdx.x) * SPT;
    double x[SPT], t[SPT], b1[SPT], b2[SPT];

#pragma unroll
    for (int s = 0; s < SPT; ++s) {
        x[s] = xs[min(first + s, n - 1)];
        t[s] = (2.0 * x[s] - a - b) / (b - a); // map [a, b] onto [-1, 1]
        b1[s] = 0.0;
        b2[s] = 0.0;
    }
    // Clenshaw, all SPT samples in lock step.
#pragma unroll 6
    for (int k = NC - 1; k >= 1; --k) {
        const double ck = c_cheb[k];
#pragma unroll
        for (int s = 0; s < SPT; ++s) {
            const double b0 = fma(2.0 * t[s], b1[s], ck - b2[s]);
            b2[s] = b1[s];
            b1[s] = b0;
        }
    }
#pragma unroll
    for (int s = 0; s < SPT; ++s) {
        if (first + s < n) {
            const double f = fma(t[s], b1[s], c_cheb[0] - b2[s]);
            const Bessel01 j = bessel_j01(x[s]);
            // out = f(x) * J0(x) + J1(x) / x  (a typical radial kernel)
            out[first + s] = fma(f, j.j0, x[s] != 0.0 ? j.j1 / x[s] : 0.5);
        }
    }
}
