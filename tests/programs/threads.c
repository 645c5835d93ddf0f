/* A tiny multi-threaded program for recorder tests: four threads (the main thread
 * and three it starts), each filling and summing an array of its own (1 MiB each,
 * side by side in one static block). Recorded with threads as cores, each thread
 * is a core with its own accesses. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define WORDS (1u << 17)

static unsigned long data[THREADS][WORDS];
static unsigned long sums[THREADS];
/* All four wait here before working, so they all run at once (and each gets a
 * vCPU of its own: QEMU reuses the number of a thread that has ended). */
static pthread_barrier_t start;

static void *work(void *arg) {
    unsigned long t = (unsigned long)arg, s = 0;
    pthread_barrier_wait(&start);
    for (unsigned i = 0; i < WORDS; i++)
        data[t][i] = i ^ t;
    for (unsigned i = 0; i < WORDS; i++)
        s += data[t][i];
    sums[t] = s;
    return NULL;
}

int main(void) {
    pthread_t th[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (unsigned long t = 1; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, work, (void *)t) != 0)
            return 1;
    work(0);
    unsigned long total = sums[0];
    for (unsigned long t = 1; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        total += sums[t];
    }
    printf("%lu\n", total);
    return 0;
}
