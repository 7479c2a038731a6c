/* The objects placement reads besides nodes and pods: Namespaces (their
 * labels, for inter-pod namespaceSelectors), PersistentVolumes,
 * PersistentVolumeClaims, StorageClasses and ResourceClaims.
 *
 * The store owns what it is given: each set takes the object (also on
 * failure) and frees the one it replaces; each delete frees. Lookups are by
 * interned name, or namespace + name. The daemon's informer and the
 * simulator's loader feed the same calls. Single-threaded. */
#ifndef TG_MODEL_STORE_H
#define TG_MODEL_STORE_H

#include <stdint.h>

#include "model/objects.h"
#include "util/hmap.h"

struct tg_objstore {
    struct tg_imap ns;                  /* name -> struct tg_namespace * */
    struct tg_imap pv;                  /* name -> struct tg_pv * */
    struct tg_imap sc;                  /* name -> struct tg_storageclass * */
    struct tg_imap pvc;                 /* ns << 32 | name -> struct tg_pvc * */
    struct tg_imap claim;               /* ns << 32 | name -> struct tg_rclaim * */
    uint32_t ndefault;                  /* StorageClasses marked default */
    uint64_t generation;                /* bumped by every change */
};

/* The struct may also be zero-initialised. */
void tg_objstore_init(struct tg_objstore *s);
void tg_objstore_free(struct tg_objstore *s);

/* Each returns 0 or TG_ENOMEM. */
int tg_objstore_namespace_set(struct tg_objstore *s, struct tg_namespace *n);
void tg_objstore_namespace_delete(struct tg_objstore *s, uint32_t name);
int tg_objstore_pv_set(struct tg_objstore *s, struct tg_pv *v);
void tg_objstore_pv_delete(struct tg_objstore *s, uint32_t name);
int tg_objstore_pvc_set(struct tg_objstore *s, struct tg_pvc *c);
void tg_objstore_pvc_delete(struct tg_objstore *s, uint32_t ns, uint32_t name);
int tg_objstore_sc_set(struct tg_objstore *s, struct tg_storageclass *c);
void tg_objstore_sc_delete(struct tg_objstore *s, uint32_t name);
int tg_objstore_claim_set(struct tg_objstore *s, struct tg_rclaim *c);
void tg_objstore_claim_delete(struct tg_objstore *s, uint32_t ns, uint32_t name);

/* NULL when absent (s may be NULL). */
const struct tg_namespace *tg_objstore_namespace(const struct tg_objstore *s, uint32_t name);
const struct tg_pv *tg_objstore_pv(const struct tg_objstore *s, uint32_t name);
const struct tg_pvc *tg_objstore_pvc(const struct tg_objstore *s, uint32_t ns, uint32_t name);
const struct tg_storageclass *tg_objstore_sc(const struct tg_objstore *s, uint32_t name);
/* The default StorageClass (the first found when several claim it), or NULL. */
const struct tg_storageclass *tg_objstore_default_sc(const struct tg_objstore *s);
const struct tg_rclaim *tg_objstore_claim(const struct tg_objstore *s, uint32_t ns, uint32_t name);
/* 1 when namespace ns's labels match sel. A namespace without a Namespace
 * object has only kubernetes.io/metadata.name. */
int tg_objstore_ns_match(const struct tg_objstore *s, uint32_t ns, const struct tg_labelsel *sel);

#endif
