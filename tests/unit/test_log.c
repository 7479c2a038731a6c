/* util/log.c's buffering (tg_log_buffer): info records held until a flush,
 * a warning, a full buffer or the process's exit, never lost or reordered;
 * off, each record is written at once. stderr is pointed at a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/log.h"

static char path[] = "/tmp/tg-test-log-XXXXXX";
static int saved = -1;

static int setup(void **s)
{
    (void)s;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    tg_log_buffer(0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unlink(path);
    return 0;
}

/* What stderr's file holds now (a static buffer). */
static const char *written(size_t *len)
{
    static char buf[1 << 20];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static void empty_file(void)
{
    assert_int_equal(ftruncate(2, 0), 0);
    assert_int_equal(lseek(2, 0, SEEK_SET), 0);
}

static void held_until_flush_or_warning(void **s)
{
    (void)s;
    empty_file();
    tg_log_buffer(1);
    tg_info("test", "first %d", 1);
    tg_info("test", "second");
    assert_string_equal(written(NULL), "");
    tg_log_flush();
    const char *w = written(NULL);
    assert_non_null(strstr(w, "msg=\"first 1\""));
    assert_true(strstr(w, "first 1") < strstr(w, "second"));
    /* a warning writes what is held first, then itself */
    tg_info("test", "third");
    assert_null(strstr(written(NULL), "third"));
    tg_warn("test", "careful");
    w = written(NULL);
    assert_non_null(strstr(w, "third"));
    assert_non_null(strstr(w, "level=warn"));
    assert_true(strstr(w, "third") < strstr(w, "careful"));
    tg_log_buffer(0);
}

static void off_writes_at_once(void **s)
{
    (void)s;
    empty_file();
    tg_log_buffer(1);
    tg_info("test", "held");
    tg_log_buffer(0);   /* turning it off writes what is held */
    assert_non_null(strstr(written(NULL), "held"));
    tg_info("test", "direct");
    assert_non_null(strstr(written(NULL), "direct"));
}

/* More than the buffer holds: every record written once, in order. */
static void full_buffer_loses_nothing(void **s)
{
    (void)s;
    enum { N = 3000 };  /* ~100 bytes each: several buffers' worth */
    empty_file();
    tg_log_buffer(1);
    for (int i = 0; i < N; i++)
        tg_info("test", "record %05d", i);
    size_t len;
    const char *w = written(&len);
    assert_true(len > 0);           /* some went when the buffer filled */
    assert_null(strstr(w, "record 02999"));
    tg_log_flush();
    w = written(&len);
    const char *at = w;
    for (int i = 0; i < N; i++) {
        char want[32];
        snprintf(want, sizeof want, "record %05d\"", i);
        const char *p = strstr(at, want);
        assert_non_null(p);
        at = p + 1;
    }
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += w[i] == '\n';
    assert_int_equal(lines, N);
    tg_log_buffer(0);
}

/* The process's exit writes what is held. */
static void exit_writes_held(void **s)
{
    (void)s;
    empty_file();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tg_log_buffer(1);
        tg_info("test", "said before exit");
        exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_non_null(strstr(written(NULL), "said before exit"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(held_until_flush_or_warning),
        cmocka_unit_test(off_writes_at_once),
        cmocka_unit_test(full_buffer_loses_nothing),
        cmocka_unit_test(exit_writes_held),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
