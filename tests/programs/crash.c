/* A tiny program for recorder tests: does some work, then dies of a segmentation
 * fault, so that `tiersim record` must report the crash and leave a trace that
 * readers see as truncated. */
#include <stdio.h>

static volatile int *nowhere;
static int work[4096];

int main(void) {
    for (int i = 0; i < 4096; i++)
        work[i] = i;
    printf("%d\n", work[4095]);
    fflush(stdout);
    return *nowhere;
}
