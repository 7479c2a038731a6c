/* Incremental splitter for newline-delimited JSON (watch streams).
 *
 * Bytes are fed as they arrive; each complete line is handed to the callback
 * exactly once. Complete lines inside a chunk are passed straight from the
 * chunk without copying; only an unfinished tail is kept, and a search for
 * the newline never rescans bytes already scanned, so a 50 MB object that
 * arrives in 16 KB reads costs O(size), not O(size^2). */
#ifndef TG_INFORMER_JSONL_H
#define TG_INFORMER_JSONL_H

#include <stddef.h>

struct tg_jsonl {
    char *buf;          /* unfinished line, owned */
    size_t len, cap;
    size_t scanned;     /* bytes of buf known to hold no newline */
    size_t max_line;    /* 0: 256 MiB */
};

/* Called per line (without the newline; never empty). Return 0 to go on,
 * nonzero to stop: tg_jsonl_feed then returns that value. */
typedef int (*tg_jsonl_fn)(void *ud, const char *line, size_t len);

/* Feeds data. Returns 0, the callback's nonzero value, TG_ERANGE when a line
 * exceeds max_line, or TG_ENOMEM. */
int tg_jsonl_feed(struct tg_jsonl *j, const char *data, size_t len, tg_jsonl_fn fn, void *ud);
/* Drops any partial line (a stream restarts). */
void tg_jsonl_reset(struct tg_jsonl *j);
void tg_jsonl_free(struct tg_jsonl *j);

#endif
