/* Incremental splitter for a Kubernetes LIST response body
 *   {"kind":"PodList","apiVersion":"v1","metadata":{...},"items":[{...},{...}]}
 * Each element of "items" and the top-level "metadata" object are handed to
 * callbacks as soon as their last byte arrives, as JSON text to parse on its
 * own. So a 200 MB list of 100,000 pods is decoded while it downloads, and
 * memory holds one item at a time rather than the body and its cJSON tree.
 * Bytes are scanned once (string/escape aware); consumed bytes are dropped. */
#ifndef TG_INFORMER_LISTSTREAM_H
#define TG_INFORMER_LISTSTREAM_H

#include <stddef.h>

/* Return 0 to go on; nonzero stops the feed, which returns that value. */
typedef int (*tg_list_part_fn)(void *ud, const char *json, size_t len);

struct tg_liststream {
    char *buf;                  /* bytes not yet consumed, owned */
    size_t len, cap;
    size_t pos;                 /* next byte of buf to scan */
    size_t start;               /* where the value being captured starts */
    size_t kstart;              /* where the top-level key being read starts */
    int depth, in_str, esc, expect_key, key_open;
    int capture;                /* 0 none, 1 item, 2 metadata */
    int in_items, done;
    char key[16];               /* current top-level key (truncated) */
    tg_list_part_fn on_item, on_meta;
    void *ud;
};

/* Prepares s for a new body (buffers are kept). */
void tg_liststream_reset(struct tg_liststream *s, tg_list_part_fn on_item,
                         tg_list_part_fn on_meta, void *ud);
/* Feeds bytes. Returns 0, a callback's nonzero value, TG_EPARSE (bytes after
 * the end, unbalanced brackets) or TG_ENOMEM. */
int tg_liststream_feed(struct tg_liststream *s, const char *data, size_t len);
/* 0 when a complete top-level object was seen, else TG_EPARSE (truncated). */
int tg_liststream_finish(const struct tg_liststream *s);
void tg_liststream_free(struct tg_liststream *s);

#endif
