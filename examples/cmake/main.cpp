// Pulls the middle of a spring chain sideways, lets it relax on the GPU and checks the
// result against the same integration on the CPU. Without a usable GPU it says so and
// exits 0, so the build can be checked on machines without one.
#include "particles.h"
#include <cmath>
#include <cstdio>
#include <vector>

static float cpu_force(float xl, float x, float xr, float v, const SpringParams &p)
{
    return p.stiffness * (((xr - x) - p.rest_length) - ((x - xl) - p.rest_length)) - p.damping * v;
}

int main()
{
    if (cuda_device_count() == 0) {
        std::printf("particles_demo: no usable CUDA device, skipping the run\n");
        return 0;
    }
    const std::size_t n = 1000;
    const int steps = 200;
    const float dt = 1e-3f;
    const SpringParams p{50.0f, 0.5f, 1.0f};
    std::vector<float> x(n), v(n, 0.0f);
    for (std::size_t i = 0; i < n; ++i)
        x[i] = (float)i + (i == n / 2 ? 0.4f : 0.0f);

    std::vector<float> cx = x, cv = v, nx(n);
    for (int s = 0; s < steps; ++s) {
        nx[0] = cx[0];
        nx[n - 1] = cx[n - 1];
        for (std::size_t i = 1; i + 1 < n; ++i) {
            cv[i] += dt * cpu_force(cx[i - 1], cx[i], cx[i + 1], cv[i], p);
            nx[i] = cx[i] + dt * cv[i];
        }
        cx.swap(nx);
    }

    const int err = simulate_chain(x.data(), v.data(), n, steps, dt, p);
    if (err != 0) {
        std::printf("particles_demo: CUDA error %d (%s)\n", err, cuda_error_string(err));
        return 1;
    }
    float worst = 0.0f;
    for (std::size_t i = 0; i < n; ++i)
        worst = std::fmax(worst, std::fabs(x[i] - cx[i]));
    std::printf("particles_demo: %zu particles, %d steps, max |gpu - cpu| = %g\n", n, steps, worst);
    return worst < 1e-3f ? 0 : 1;
}
