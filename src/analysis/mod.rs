//! Analyses over decoded SASS: control-flow graphs per function, the call graph, natural loops,
//! liveness per instruction over every register file, and max-live (DESIGN.md §3).
