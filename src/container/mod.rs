//! Fatbin containers and the files that carry them: bare fatbins, host objects
//! (`.nv_fatbin`, `__nv_relfatbin`), linked executables and `ar` archives; read, edit, write.
