// Compiles kernels/*.cu through nvcc-orion (NVCC_ORION_BIN or PATH; plain nvcc otherwise) into
// libkernels.a, linked with the toolkit's static CUDA runtime.
fn main() {
    nvcc_orion_build::Build::new()
        .files(["kernels/walk.cu", "kernels/norm.cu"])
        .include("kernels")
        .arch("sm_80")
        .arch("sm_90")
        .block_size("256")
        .compile("kernels");
}
