//! Runs the kernels that build.rs compiled through nvcc-orion. Without a usable GPU it says
//! so and exits 0, so the crate can be built and run anywhere.

unsafe extern "C" {
    /// From kernels/walk.cu: 0 ok, 1 no device, 2 CUDA error.
    fn walk_run(nodes: i32, steps: i32, score_sum: *mut f32) -> i32;
    /// From kernels/norm.cu: the same return codes.
    fn norm_run(n: i32, result: *mut f32) -> i32;
}

fn main() {
    let mut sum = 0.0f32;
    // SAFETY: walk_run only writes the one float we pass a valid pointer to.
    let rc = unsafe { walk_run(1 << 16, 32, &mut sum) };
    match rc {
        0 => println!("walk: score sum {sum}"),
        1 => println!("walk: no usable CUDA device, skipping the run"),
        _ => {
            eprintln!("walk: CUDA error");
            std::process::exit(1);
        }
    }
    let mut norm = 0.0f32;
    // SAFETY: norm_run only writes the one float we pass a valid pointer to.
    match unsafe { norm_run(1 << 12, &mut norm) } {
        0 => println!("norm: sum of squares {norm}"),
        1 => println!("norm: no usable CUDA device, skipping the run"),
        _ => {
            eprintln!("norm: CUDA error");
            std::process::exit(1);
        }
    }
}
