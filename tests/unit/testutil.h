/* Helpers shared by the core unit tests: run `simulate` on YAML text and get
 * its JSON output back as a cJSON tree. */
#ifndef TG_TESTS_TESTUTIL_H
#define TG_TESTS_TESTUTIL_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Simulates yaml with the default policy (policy_yaml NULL) or the given one;
 * returns the parsed JSON result (cJSON_Delete it). Fails the test on error. */
cJSON *tu_simulate(const char *policy_yaml, const char *yaml);
/* The gang object for a podGroup key ("ns/name"), or for a single pod key. */
const cJSON *tu_gang(const cJSON *res, const char *key);
/* Node of a pod in the result, or NULL. */
const char *tu_node_of(const cJSON *res, const char *pod);
const char *tu_str(const cJSON *obj, const char *key);

struct tg_simdata;
/* Loads YAML text into d (tg_simdata_init'ed here, quiet; tg_simdata_free
 * it): the objects an engine test feeds by hand. Fails the test on error. */
void tu_load(struct tg_simdata *d, const char *yaml);

/* Appends formatted YAML to a growing buffer (free with free()). */
void tu_cat(char **buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A Node with 8 GPUs and the given zone/rack/clique labels ("" omits one). */
void tu_node(char **buf, const char *name, const char *zone, const char *rack, int gpus,
             const char *extra_spec);
/* A Node of `gpus` GPUs with exactly the labels given ("k: v, k: v"). */
void tu_node_labels(char **buf, const char *name, const char *labels, int gpus);
/* A pending topogang pod in namespace ns with an optional group label. */
void tu_pod(char **buf, const char *name, const char *group, const char *requests,
            const char *extra_spec);
/* A fresh directory /tmp/<prefix>-XXXXXX written into dir[n] (a cmocka group
 * setup's work): 0, or -1. tu_tmpdir_remove removes it and all in it. */
int tu_tmpdir_make(char *dir, size_t n, const char *prefix);
int tu_tmpdir_remove(const char *dir);

#endif
