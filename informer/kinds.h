/* The object kinds the scheduler caches, as struct tg_kind descriptors over
 * the compact structs of model/objects.h, plus a small ConfigMap struct for
 * the policy ConfigMap. */
#ifndef TG_INFORMER_KINDS_H
#define TG_INFORMER_KINDS_H

#include <stdint.h>

#include "informer/store.h"

/* A ConfigMap reduced to its string data. */
struct tg_configmap {
    char *key;               /* "namespace/name", owned */
    char *uid, *rv;          /* owned, may be NULL */
    uint32_t ndata;
    char **keys, **vals;     /* data entries, owned */
};

/* Value of data[k], or NULL. */
const char *tg_configmap_get(const struct tg_configmap *cm, const char *k);

extern const struct tg_kind tg_kind_node;        /* struct tg_node_obj, key = name */
extern const struct tg_kind tg_kind_pod;         /* struct tg_pod, requests only */
extern const struct tg_kind tg_kind_pod_spec;    /* struct tg_pod with TG_DECODE_SPEC */
extern const struct tg_kind tg_kind_podgroup;    /* struct tg_podgroup */
extern const struct tg_kind tg_kind_configmap;   /* struct tg_configmap */

#endif
