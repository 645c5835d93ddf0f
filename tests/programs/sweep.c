/* A tiny program for recorder tests: fills a 4 MiB array, then sums it with a
 * 64-byte stride three times. Its accesses are dominated by the loops, so QEMU's
 * and valgrind's recordings of it must agree in footprint and access counts. */
#include <stdio.h>
#include <stdlib.h>

#define BYTES (4u << 20)

int main(void) {
    unsigned char *a = malloc(BYTES);
    if (!a)
        return 1;
    for (unsigned i = 0; i < BYTES / 8; i++)
        ((unsigned long *)a)[i] = i * 2654435761u;
    unsigned long sum = 0;
    for (int pass = 0; pass < 3; pass++)
        for (unsigned i = 0; i < BYTES; i += 64)
            sum += a[i];
    printf("%lu\n", sum);
    free(a);
    return 0;
}
