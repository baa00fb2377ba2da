/* A `terraform` that logs when it starts and ends, for benches/trace/gaps.py.
 *
 * Put its folder first on PATH: it appends "start ARG1 T" and "end ARG1 T" (CLOCK_MONOTONIC seconds) to
 * $TRACE_LOG and runs the real terraform ($TRACE_TERRAFORM, default /usr/local/bin/terraform) in between,
 * passing its exit status on. Both sides of a comparison go through it, so its own cost cancels out. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void note(const char *what, const char *arg) {
    const char *path = getenv("TRACE_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%s %s %.6f\n", what, arg ? arg : "-", now());
    fclose(f);
}

int main(int argc, char **argv) {
    const char *real = getenv("TRACE_TERRAFORM");
    if (!real) real = "/usr/local/bin/terraform";
    const char *arg = argc > 1 ? argv[1] : "-";
    note("start", arg);
    pid_t pid = fork();
    if (pid == 0) {
        argv[0] = "terraform";
        execv(real, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    note("end", arg);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
