#![no_main]
//! The `.nv.callgraph` section reader (`cubin::callgraph::CallGraph::parse`): never panics.
use nvcc_orion::cubin::callgraph::CallGraph;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = CallGraph::parse(data);
});
