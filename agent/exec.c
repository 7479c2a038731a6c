/* A helper program run with a deadline (see exec.h), on a private libuv
 * loop: uv_spawn in a session of its own (UV_PROCESS_DETACHED) so that the
 * deadline kills its children too, a pipe for its output, a timer. */
#include "agent/exec.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "util/err.h"

struct run {
    uv_process_t proc;
    uv_pipe_t out;
    uv_timer_t timer;
    char *buf;
    size_t cap, n;
    char chunk[4096];
    int exited, timed_out, out_open, pid;
    int64_t status;
    int signal;
};

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct run *r = h->data;
    (void)hint;
    *b = uv_buf_init(r->chunk, sizeof r->chunk);
}

/* Both the process and its output are done: the timer goes, uv_run returns. */
static void maybe_done(struct run *r)
{
    if (r->exited && !r->out_open && !uv_is_closing((uv_handle_t *)&r->timer)) {
        uv_timer_stop(&r->timer);
        uv_close((uv_handle_t *)&r->timer, NULL);
    }
}

static void close_out(struct run *r)
{
    if (r->out_open) {
        r->out_open = 0;
        uv_close((uv_handle_t *)&r->out, NULL);
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct run *r = s->data;
    if (nread > 0) {
        size_t take = (size_t)nread < r->cap - r->n ? (size_t)nread : r->cap - r->n;
        memcpy(r->buf + r->n, b->base, take);
        r->n += take;
    } else if (nread < 0) {                         /* EOF or error: the output is done */
        close_out(r);
        maybe_done(r);
    }
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct run *r = p->data;
    r->exited = 1;
    r->status = status;
    r->signal = sig;
    uv_close((uv_handle_t *)p, NULL);
    if (r->timed_out)
        close_out(r);       /* past the deadline: whatever still holds the pipe */
    maybe_done(r);          /* else the rest of its output, until the deadline */
}

/* The deadline: kill what still runs; a child it left holding the pipe too. */
static void on_deadline(uv_timer_t *t)
{
    struct run *r = t->data;
    uv_kill(-r->pid, SIGKILL);                      /* its process group */
    if (!r->exited) {
        r->timed_out = 1;
        return;                                     /* on_exit_cb follows */
    }
    close_out(r);
    maybe_done(r);
}

int tg_exec_capture(char *const argv[], unsigned timeout_ms, char *buf, size_t cap, size_t *n,
                    char *err, size_t err_len)
{
    uv_loop_t loop;
    struct run r = {.buf = buf, .cap = cap};
    int rc = 0;
    *n = 0;
    if (err && err_len)
        err[0] = 0;
    if (uv_loop_init(&loop))
        return TG_ENOMEM;
    uv_pipe_init(&loop, &r.out, 0);
    r.out.data = r.proc.data = r.timer.data = &r;
    uv_stdio_container_t io[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&r.out},
        {.flags = UV_IGNORE},
    };
    uv_process_options_t po = {.exit_cb = on_exit_cb, .file = argv[0], .args = (char **)argv,
                               .stdio = io, .stdio_count = 3, .flags = UV_PROCESS_DETACHED};
    int e = uv_spawn(&loop, &r.proc, &po);
    if (e) {
        if (err && err_len)
            snprintf(err, err_len, "cannot run %s: %s", argv[0], uv_strerror(e));
        uv_close((uv_handle_t *)&r.out, NULL);
        uv_close((uv_handle_t *)&r.proc, NULL);
        rc = TG_EIO;
        goto out;
    }
    r.out_open = 1;
    r.pid = r.proc.pid;
    uv_read_start((uv_stream_t *)&r.out, on_alloc, on_read);
    uv_timer_init(&loop, &r.timer);
    uv_timer_start(&r.timer, on_deadline, timeout_ms, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    *n = r.n;
    if (r.timed_out) {
        if (err && err_len)
            snprintf(err, err_len, "%s did not finish in %u ms (killed)", argv[0], timeout_ms);
        rc = TG_ETIMEOUT;
    } else if (r.signal || r.status) {
        if (err && err_len)
            snprintf(err, err_len, r.signal ? "%s died of signal %d" : "%s exited with status %d",
                     argv[0], r.signal ? r.signal : (int)r.status);
        rc = TG_EIO;
    }
out:
    uv_run(&loop, UV_RUN_DEFAULT);                  /* close callbacks */
    uv_loop_close(&loop);
    return rc;
}
