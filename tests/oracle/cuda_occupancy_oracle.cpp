// Oracle for tests/occupancy_oracle.rs: runs the toolkit's own cuda_occupancy.h on points read
// from stdin and prints its answers, one line per point, in the same order.
//
// In:  major minor threads regs static_bytes dynamic_bytes optin max_dynamic carveout barriers
//      virtual_resources
//      (optin 0 = FUNC_SHMEM_LIMIT_DEFAULT, 1 = FUNC_SHMEM_LIMIT_OPTIN; carveout -1 = default)
// Out: status blocks limiting_factors limit_regs limit_smem limit_warps limit_blocks
//      limit_barriers limit_virtual allocated_regs allocated_smem
//      (INT_MAX limits print as -1)
//
// The device properties are what a device of each compute capability reports in
// cudaDeviceProp, transcribed here from the CUDA C++ Programming Guide 13.1, Table 27
// independently of the Rust table, so a typo in either shows as a mismatch. Everything else
// (allocation units, carve-outs, block slots, barrier and virtual-resource limits) the header
// decides for itself.

#include <climits>
#include <cstdio>
#include <cstring>

#include <cuda_occupancy.h>

namespace {

constexpr size_t KB = 1024;

struct Device {
    int major, minor;
    int max_threads_per_sm;
    size_t smem_per_sm, smem_per_block_optin, reserved_per_block;
};

const Device kDevices[] = {
    {7, 5, 1024, 64 * KB, 64 * KB, 0},
    {8, 0, 2048, 164 * KB, 163 * KB, 1 * KB},
    {8, 6, 1536, 100 * KB, 99 * KB, 1 * KB},
    {8, 7, 1536, 164 * KB, 163 * KB, 1 * KB},
    {8, 9, 1536, 100 * KB, 99 * KB, 1 * KB},
    {9, 0, 2048, 228 * KB, 227 * KB, 1 * KB},
    {10, 0, 2048, 228 * KB, 227 * KB, 1 * KB},
    {12, 0, 1536, 100 * KB, 99 * KB, 1 * KB},
};

bool device_props(int major, int minor, cudaOccDeviceProp *p) {
    for (const Device &d : kDevices) {
        if (d.major != major || d.minor != minor) continue;
        p->computeMajor = major;
        p->computeMinor = minor;
        p->maxThreadsPerBlock = 1024;
        p->maxThreadsPerMultiprocessor = d.max_threads_per_sm;
        p->regsPerBlock = 64 * 1024;
        p->regsPerMultiprocessor = 64 * 1024;
        p->warpSize = 32;
        p->sharedMemPerBlock = 48 * KB;
        p->sharedMemPerMultiprocessor = d.smem_per_sm;
        p->numSms = 1;  // only checked to be positive
        p->sharedMemPerBlockOptin = d.smem_per_block_optin;
        p->reservedSharedMemPerBlock = d.reserved_per_block;
        return true;
    }
    return false;
}

long long limit(int v) { return v == INT_MAX ? -1 : v; }

}  // namespace

int main() {
    int major, minor, threads, regs, optin, carveout, barriers, virt;
    unsigned long long static_bytes, dynamic_bytes, max_dynamic;
    while (std::scanf("%d %d %d %d %llu %llu %d %llu %d %d %d", &major, &minor, &threads, &regs,
                      &static_bytes, &dynamic_bytes, &optin, &max_dynamic, &carveout, &barriers,
                      &virt) == 11) {
        cudaOccDeviceProp prop;
        if (!device_props(major, minor, &prop)) {
            std::fprintf(stderr, "oracle: no device row for %d.%d\n", major, minor);
            return 2;
        }
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 1024;
        attr.numRegs = regs;
        attr.sharedSizeBytes = static_bytes;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
        attr.maxDynamicSharedSizeBytes = max_dynamic;
        attr.numBlockBarriers = barriers;
        attr.virtualResourceCount = virt;
        cudaOccDeviceState state;  // default: no cache preference
        state.carveoutConfig = carveout;

        cudaOccResult r;
        std::memset(&r, 0, sizeof r);
        cudaOccError e =
            cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, threads, dynamic_bytes);
        std::printf("%d %d %u %lld %lld %lld %lld %lld %lld %d %llu\n", (int)e,
                    r.activeBlocksPerMultiprocessor, r.limitingFactors, limit(r.blockLimitRegs),
                    limit(r.blockLimitSharedMem), limit(r.blockLimitWarps),
                    limit(r.blockLimitBlocks), limit(r.blockLimitBarriers),
                    limit(r.blockLimitVirtual), r.allocatedRegistersPerBlock,
                    (unsigned long long)r.allocatedSharedMemPerBlock);
    }
    return 0;
}
