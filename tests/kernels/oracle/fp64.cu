// Oracle coverage: double-precision arithmetic and comparisons (DADD, DMUL, DFMA, DSETP, DMNMX
// sequences), conversions between widths and types (F2F, I2F, F2I, 64-bit forms), 64-bit
// integer arithmetic (IMAD.WIDE, IADD3 carry chains, 64-bit shifts) and a 128-bit add.

__global__ void oracle_fp64(const double *in, const float *inf, const long long *inl,
                            double *out, float *outf, long long *outl) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double a = in[t], b = in[t + 4096];
    float f = inf[t];
    long long l = inl[t];
    double c = a + b;
    double d = fma(a, b, c);
    double e = a * static_cast<double>(f);
    if (e > d) e = d - static_cast<double>(l);
    double m = fmin(c, e) + fmax(a, d);
    double q = (a != a) ? 1.0 : static_cast<double>(static_cast<int>(b));
    out[t] = m + q + static_cast<double>(static_cast<unsigned>(t));
    outf[t] = static_cast<float>(d) + static_cast<float>(l);
    outl[t] = static_cast<long long>(e) + static_cast<long long>(f) +
              static_cast<long long>(static_cast<unsigned long long>(c));
}

__global__ void oracle_wide_int(const unsigned long long *in, unsigned long long *out,
                                unsigned *out32, int n, long long step) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long a = in[t], b = in[t + 4096], c = in[t + 8192];
    // 128-bit sum of three 128-bit values: carries through IADD3/IADD3.X.
    unsigned long long lo = a + b;
    unsigned long long hi = (lo < a) ? 1 : 0;
    lo += c;
    hi += (lo < c) ? 1 : 0;
    hi += a ^ c;
    unsigned long long w = static_cast<unsigned long long>(static_cast<unsigned>(a)) *
                           static_cast<unsigned>(b);
    long long s = static_cast<long long>(t) * step + n;
    unsigned long long r = (a << (n & 63)) | (b >> (63 - (n & 63)));
    out[2 * t] = lo ^ w;
    out[2 * t + 1] = hi + r + static_cast<unsigned long long>(s);
    out32[t] = __umulhi(static_cast<unsigned>(a), static_cast<unsigned>(c)) +
               static_cast<unsigned>(__umul64hi(a, c));
}

// Double-precision sine and cosine: the library's quadrant selection moves bits of the
// quadrant into predicates (R2P), and its slow argument reduction is a call (CALL/RET).
__global__ void oracle_fp64_trig(const double *in, double *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double x = in[t];
    out[t] = sin(x) * 3.0 - cos(x);
}
