/* A failing allocator for tests: LD_PRELOAD=libfailmalloc.so makes chosen
 * calls of malloc, calloc, realloc, strdup and strndup return NULL (errno
 * ENOMEM), as the environment variable TG_FAILMALLOC says; without it every
 * call passes through. Not for sanitizer builds (ASan interposes malloc
 * itself): preload it into the normal optimised binary.
 *
 * TG_FAILMALLOC is a comma-separated list of key=value:
 *   nth=N        fail the Nth call counted (1-based), only that one
 *   from=N       fail every call from the Nth counted on
 *   p=F          fail each call with probability F (0..1)
 *   seed=S       for p (default 1): the same seed fails the same calls
 *   sites=1      fail the first call from each distinct call stack (its top
 *                frames), once: a systematic pass over every allocation
 *                site a run reaches
 *   only=A:B     count only calls whose caller lies in a loaded object whose
 *                path contains A or B (e.g. only=topogang:libcjson); default
 *                every caller
 *   under=L-H    count only calls made, directly or not, from code of the
 *                main program between offsets L and H (hex, as `nm` prints
 *                them: one function); several ranges joined by ':'
 *   times=K      fail no more than K calls in all
 *   thread=all   count calls of every thread (default: the main thread only,
 *                the daemon's event loop; its HTTP server thread is spared)
 *   armed=0      start disarmed; SIGUSR1 arms, SIGUSR2 disarms (and writes
 *                the report); default armed from the start
 *   report=PATH  writes the figures at exit and on SIGUSR2: calls counted,
 *                calls failed, sites reached, sites failed, then one line per
 *                failed site: "site <hits> <failed> <frames>" with each frame
 *                as object+0xoffset (addr2line -e object offset names it)
 * Counting happens only while armed. Several modes may be given; a call
 * fails when any says so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TLS __thread __attribute__((tls_model("initial-exec")))

enum { FRAMES = 8, DEEP = 48, SITES = 1 << 16, CALLERS = 1 << 14, MAX_ONLY = 8, MAX_UNDER = 8 };

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

/* Allocations made while dlsym resolves the real functions. */
static char boot[1 << 16];
static size_t boot_used;
static int resolving;

static struct {
    int on;                             /* TG_FAILMALLOC was set */
    uint64_t nth, from;
    double p;
    uint64_t rng;
    int sites, all_threads;
    char only[MAX_ONLY][64];
    int nonly;
    uintptr_t under[MAX_UNDER][2];      /* absolute address ranges */
    int nunder;
    uint64_t times;
    char report[512];
} cfg;

static atomic_int armed;
static atomic_ulong calls, failed, sites_seen, sites_failed;
static pid_t main_tid;
static TLS int in_hook;
static TLS pid_t my_tid;

struct site {
    _Atomic uint64_t hash;              /* 0: empty */
    atomic_ulong hits, fails;
    void *frames[FRAMES];
    int nframes;
};
static struct site sites[SITES];

/* Return address -> whether its object passes `only` (1), not (2); 0 unknown. */
static struct {
    _Atomic uintptr_t pc;
    atomic_int verdict;
} callers[CALLERS];

static void *boot_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (boot_used + n > sizeof boot)
        return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;
}

static int is_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static void resolve(void)
{
    if (real_malloc || resolving)
        return;
    resolving = 1;
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    resolving = 0;
}

/* ---- the decision ------------------------------------------------------------------- */

/* Whether the stack passes through one of the `under` ranges. */
static int under_wanted(void)
{
    void *bt[DEEP];
    int k = backtrace(bt, DEEP);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < cfg.nunder; j++)
            if ((uintptr_t)bt[i] > cfg.under[j][0] && (uintptr_t)bt[i] <= cfg.under[j][1])
                return 1;
    return 0;
}

static uint64_t xorshift(void)
{
    uint64_t x = cfg.rng; /* races between threads only blur the sequence */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    cfg.rng = x;
    return x;
}

static int caller_allowed(void *pc)
{
    if (!cfg.nonly)
        return 1;
    uintptr_t k = (uintptr_t)pc;
    size_t i = (k >> 4) % CALLERS;
    for (size_t n = 0; n < 16; n++, i = (i + 1) % CALLERS) {
        uintptr_t have = atomic_load(&callers[i].pc);
        if (have == k)
            return atomic_load(&callers[i].verdict) == 1;
        if (have == 0)
            break;
    }
    Dl_info info;
    int ok = 0;
    if (dladdr(pc, &info) && info.dli_fname)
        for (int j = 0; j < cfg.nonly && !ok; j++)
            ok = strstr(info.dli_fname, cfg.only[j]) != NULL;
    uintptr_t zero = 0;
    if (atomic_compare_exchange_strong(&callers[i].pc, &zero, k))
        atomic_store(&callers[i].verdict, ok ? 1 : 2);
    return ok;
}

static struct site *site_of(void **frames, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)frames[i];
        h *= 1099511628211ull;
    }
    if (!h)
        h = 1;
    size_t i = h % SITES;
    for (size_t probe = 0; probe < SITES; probe++, i = (i + 1) % SITES) {
        uint64_t have = atomic_load(&sites[i].hash);
        if (have == h)
            return &sites[i];
        if (have == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(&sites[i].hash, &zero, h)) {
                memcpy(sites[i].frames, frames, (size_t)n * sizeof *frames);
                sites[i].nframes = n;
                atomic_fetch_add(&sites_seen, 1);
                return &sites[i];
            }
            if (atomic_load(&sites[i].hash) == h)
                return &sites[i];
        }
    }
    return NULL; /* table full */
}

/* 1: this call fails. caller: the allocating function's return address. */
static int should_fail(void *caller)
{
    if (!cfg.on || !atomic_load(&armed) || in_hook)
        return 0;
    if (!my_tid)
        my_tid = (pid_t)syscall(SYS_gettid);
    if (!cfg.all_threads && my_tid != main_tid)
        return 0;
    in_hook = 1;
    int fail = 0;
    if (!caller_allowed(caller) || (cfg.nunder && !under_wanted()))
        goto out;
    uint64_t n = atomic_fetch_add(&calls, 1) + 1;
    fail = (cfg.nth && n == cfg.nth) || (cfg.from && n >= cfg.from) ||
           (cfg.p > 0 && (double)(xorshift() >> 11) / 9007199254740992.0 < cfg.p);
    if (fail && cfg.times && atomic_load(&failed) >= cfg.times)
        fail = 0;
    if (cfg.sites || fail) {
        void *bt[FRAMES + 2];
        int k = backtrace(bt, FRAMES + 2);
        /* bt[0] is should_fail, bt[1] the wrapper: the site starts at the caller */
        struct site *s = k > 2 ? site_of(bt + 2, k - 2) : NULL;
        if (s) {
            unsigned long hits = atomic_fetch_add(&s->hits, 1);
            if (cfg.sites && hits == 0 && !(cfg.times && atomic_load(&failed) >= cfg.times))
                fail = 1;
            if (fail && atomic_fetch_add(&s->fails, 1) == 0)
                atomic_fetch_add(&sites_failed, 1);
        }
    }
    if (fail)
        atomic_fetch_add(&failed, 1);
out:
    in_hook = 0;
    return fail;
}

/* ---- the wrappers ------------------------------------------------------------------- */

void *malloc(size_t n)
{
    resolve();
    if (!real_malloc)
        return boot_alloc(n);
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    resolve();
    if (!real_calloc)
        return boot_alloc(a * b); /* static: already zero */
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    resolve();
    if (is_boot(p)) { /* rare: grow out of the boot buffer */
        void *q = malloc(n);
        size_t avail = (size_t)(boot + sizeof boot - (char *)p);
        if (q)
            memcpy(q, p, n < avail ? n : avail); /* the old block's size is unknown */
        return q;
    }
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_realloc(p, n);
}

void free(void *p)
{
    if (!p || is_boot(p))
        return;
    resolve();
    real_free(p);
}

static char *dup_n(const char *s, size_t n, void *caller)
{
    resolve();
    if (should_fail(caller)) {
        errno = ENOMEM;
        return NULL;
    }
    char *d = real_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

char *strdup(const char *s)
{
    return dup_n(s, strlen(s), __builtin_return_address(0));
}

char *strndup(const char *s, size_t n)
{
    return dup_n(s, strnlen(s, n), __builtin_return_address(0));
}

/* ---- control and report ----------------------------------------------------------------- */

static void write_report(void)
{
    if (!cfg.on || !cfg.report[0])
        return;
    int saved = in_hook;
    in_hook = 1;
    int fd = open(cfg.report, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto out;
    dprintf(fd, "calls %lu\nfailed %lu\nsites_reached %lu\nsites_failed %lu\n",
            atomic_load(&calls), atomic_load(&failed), atomic_load(&sites_seen),
            atomic_load(&sites_failed));
    for (size_t i = 0; i < SITES; i++) {
        struct site *s = &sites[i];
        if (!atomic_load(&s->hash) || !atomic_load(&s->fails))
            continue;
        dprintf(fd, "site %lu %lu", atomic_load(&s->hits), atomic_load(&s->fails));
        for (int f = 0; f < s->nframes; f++) {
            Dl_info info;
            if (dladdr(s->frames[f], &info) && info.dli_fname)
                dprintf(fd, " %s+0x%lx", info.dli_fname,
                        (unsigned long)((char *)s->frames[f] - (char *)info.dli_fbase - 1));
            else
                dprintf(fd, " ?+%p", s->frames[f]);
        }
        dprintf(fd, "\n");
    }
    close(fd);
out:
    in_hook = saved;
}

static void on_arm(int sig)
{
    (void)sig;
    atomic_store(&armed, 1);
}

static void on_disarm(int sig)
{
    (void)sig;
    atomic_store(&armed, 0);
    write_report(); /* not async-signal-safe in theory (dladdr); a test tool */
}

static int main_base(struct dl_phdr_info *info, size_t size, void *ud)
{
    (void)size;
    *(uintptr_t *)ud = (uintptr_t)info->dlpi_addr; /* the first object is the program */
    return 1;
}

static void parse(const char *spec)
{
    uintptr_t base = 0;
    dl_iterate_phdr(main_base, &base);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    cfg.rng = 1;
    int arm = 1;
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        if (!v)
            continue;
        *v++ = 0;
        if (!strcmp(kv, "nth"))
            cfg.nth = strtoull(v, NULL, 10);
        else if (!strcmp(kv, "from"))
            cfg.from = strtoull(v, NULL, 10);
        else if (!strcmp(kv, "p"))
            cfg.p = strtod(v, NULL);
        else if (!strcmp(kv, "seed"))
            cfg.rng = strtoull(v, NULL, 10) * 2654435761ull + 1;
        else if (!strcmp(kv, "sites"))
            cfg.sites = atoi(v);
        else if (!strcmp(kv, "thread"))
            cfg.all_threads = !strcmp(v, "all");
        else if (!strcmp(kv, "armed"))
            arm = atoi(v);
        else if (!strcmp(kv, "report"))
            snprintf(cfg.report, sizeof cfg.report, "%s", v);
        else if (!strcmp(kv, "times"))
            cfg.times = strtoull(v, NULL, 10);
        else if (!strcmp(kv, "under"))
            for (char *s2 = NULL, *r = strtok_r(v, ":", &s2); r && cfg.nunder < MAX_UNDER;
                 r = strtok_r(NULL, ":", &s2)) {
                char *dash = strchr(r, '-');
                if (!dash)
                    continue;
                cfg.under[cfg.nunder][0] = base + strtoull(r, NULL, 16);
                cfg.under[cfg.nunder][1] = base + strtoull(dash + 1, NULL, 16);
                cfg.nunder++;
            }
        else if (!strcmp(kv, "only"))
            for (char *s2 = NULL, *m = strtok_r(v, ":", &s2); m && cfg.nonly < MAX_ONLY;
                 m = strtok_r(NULL, ":", &s2))
                snprintf(cfg.only[cfg.nonly++], sizeof cfg.only[0], "%s", m);
    }
    atomic_store(&armed, arm);
}

__attribute__((constructor)) static void init(void)
{
    resolve();
    const char *spec = getenv("TG_FAILMALLOC");
    if (!spec || !*spec)
        return;
    main_tid = getpid();
    in_hook = 1;
    void *warm[2];
    backtrace(warm, 2); /* loads libgcc_s now, not inside a wrapper */
    in_hook = 0;
    parse(spec);
    cfg.on = 1;
    struct sigaction sa = {0};
    sa.sa_handler = on_arm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_disarm;
    sigaction(SIGUSR2, &sa, NULL);
}

__attribute__((destructor)) static void fini(void)
{
    write_report();
}
