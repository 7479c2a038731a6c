/* YAML documents as cJSON trees, with the line of every node.
 *
 * The simulator and the policy loader read YAML; the daemon reads JSON. Turning
 * each YAML document into the same cJSON tree the API server's JSON gives lets
 * one decoder serve both (model/decode.c). Plain scalars resolve as YAML 1.2's
 * core schema does (null, true/false, integers, floats; "yes"/"on" stay
 * strings); a numeric scalar keeps its source text in valuestring so that
 * quantities like 0.1 parse exactly. Anchors and aliases are expanded, up to a
 * node budget (no "billion laughs"). */
#ifndef TG_UTIL_YAMLJSON_H
#define TG_UTIL_YAMLJSON_H

#include <stddef.h>

#include "util/hmap.h"
#include "util/strbuf.h"

struct cJSON;

/* Line numbers (1-based) of the nodes of one document. */
struct tg_yaml_lines {
    struct tg_imap map;                 /* cJSON pointer -> line */
    int doc_line;                       /* line where the document starts */
};

/* Called once per document; owns root (cJSON_Delete it, or keep it).
 * lines is valid only during the call. Return nonzero to stop parsing. */
typedef int (*tg_yaml_doc_cb)(void *ud, struct cJSON *root, const struct tg_yaml_lines *lines);

/* Parses every document of buf[0..n). origin names the input in messages.
 * Returns 0, or TG_EPARSE with "origin:line:col: problem" in err (documents
 * before the bad one were delivered), or TG_ENOMEM. */
int tg_yaml_parse(const char *buf, size_t n, const char *origin, tg_yaml_doc_cb cb, void *ud,
                  struct tg_sb *err);

/* Line of a node, or the document's line when unknown. */
int tg_yaml_line(const struct tg_yaml_lines *l, const struct cJSON *node);

/* Reads a whole file into a malloc'ed NUL-terminated buffer ("-" is stdin).
 * Returns 0 or TG_EIO with the reason in err. */
int tg_read_file(const char *path, char **buf, size_t *len, struct tg_sb *err);

#endif
