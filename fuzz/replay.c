/* Runs a fuzz target over files without libFuzzer: every file named, and
 * every file of every directory named, once each. Built for every target in
 * every build (gcc included), so the seed corpus and the regression inputs
 * (fuzz/corpus/<target>/regress-*) replay in the unit suite under the
 * sanitizers. Prints one cmocka-style line; exit 1 when a file cannot be read
 * (a broken invariant aborts). Usage: replay_<target> PATH... */
#include "fuzz/fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b)
                abort();
            buf = b;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    /* An exact-size copy, so that reading past the input is caught. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact)
        abort();
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order. Returns the count or -1. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (!nn)
            abort();
        names = nn;
        if (asprintf(&names[n++], "%s/%s", dir, e->d_name) < 0)
            abort();
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (count >= 0 && run_file(names[i]) == 0)
            count++;
        else
            count = -1;
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int total = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i])
                : run_file(argv[i]) == 0                          ? 1
                                                                  : -1;
        if (n < 0)
            bad = 1;
        else
            total += n;
    }
    printf("%s %s: %d inputs replayed\n", bad || !total ? "[ FAIL ]" : "[  OK  ]", name, total);
    return bad || !total;
}
