/* A tiny program for recorder tests: the parent fills one 1 MiB array, a child it
 * forks fills another, and the parent waits for it. A recording holds the
 * program's own accesses only, not its child's. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORDS (1u << 17)

static unsigned long parent_data[WORDS], child_data[WORDS];

static void fill(unsigned long *a) {
    for (unsigned i = 0; i < WORDS; i++)
        a[i] = i * 3;
}

int main(void) {
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        fill(child_data);
        _exit(child_data[7] == 21 ? 0 : 1);
    }
    fill(parent_data);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("%lu %d\n", parent_data[WORDS - 1], WEXITSTATUS(status));
    return 0;
}
