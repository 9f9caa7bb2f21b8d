// Uses a macro defined on the command line (NAME, a string with a space) and a header found
// through an include path with a space in it.
#include "defs.h"

#ifndef NAME
#error "NAME must be defined with -DNAME=..."
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

__constant__ char name_str[] = STR(NAME);

__global__ void defines(int *p) { p[threadIdx.x] = name_str[threadIdx.x % sizeof(name_str)] * DEFS_FACTOR; }
