// Found through `-I "inc dir"` (a path with a space).
#pragma once
#define DEFS_FACTOR 7
