// Runs the walks; without a GPU, prints what the runtime says.
#include <cstdio>

int run_walks(int threads);

int main()
{
    int e = run_walks(256);
    std::printf("run_walks: %d\n", e);
    return e == 0 ? 0 : 1;
}
