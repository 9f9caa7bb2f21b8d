// Shared between the kernel and its launcher. A change here rebuilds the crate (the build
// script reports every header nvcc read as rerun-if-changed).
#pragma once
#define WALK_FEATURES 40
