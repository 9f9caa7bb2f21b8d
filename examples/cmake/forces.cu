#include "particles.h"

// Damped Hooke springs between neighbouring particles of a 1-D chain.
__device__ float spring_force(float x_left, float x, float x_right, float v,
                             const SpringParams &p)
{
    const float stretch_r = (x_right - x) - p.rest_length;
    const float stretch_l = (x - x_left) - p.rest_length;
    return p.stiffness * (stretch_r - stretch_l) - p.damping * v;
}
