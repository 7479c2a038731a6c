/* The registry of resource names. cpu, memory, pods and ephemeral-storage have
 * fixed ids; every other name (nvidia.com/gpu, rdma/hca_shared_devices_a,
 * nvidia.com/mig-2g.45gb, hugepages-2Mi) gets the next id when a Node first
 * advertises it. Only Nodes register names (model/decode.c): a pod's request
 * of a name no node offers is held by name on the pod and stands in its
 * requests as TG_RES_UNOFFERED, an id no node has, so pods cannot fill the
 * registry and every name a Node offers gets a slot (up to TG_RES_MAX, a
 * bound on what an admin's node pools advertise, never on tenants).
 * cpu is counted in millicores, everything else in whole units. */
#ifndef TG_MODEL_RESOURCES_H
#define TG_MODEL_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

enum { TG_RES_CPU, TG_RES_MEMORY, TG_RES_PODS, TG_RES_EPHEMERAL,
       TG_RES_UNOFFERED,    /* a pod's request of a name no node offers; no name maps to it */
       TG_RES_NFIXED };
#define TG_RES_MAX 256

/* A (resource, amount) pair: requests, allocatable, usage are sorted arrays of
 * these, by id. */
struct tg_rq {
    uint32_t res;
    int64_t val;
};

/* Id of a resource name, registering it (Nodes only); -1 when TG_RES_MAX
 * names exist. */
int tg_res_id(const char *name, size_t n);
/* Id of a known name, or -1; never registers. */
int tg_res_lookup(const char *name, size_t n);
const char *tg_res_name(uint32_t id);
uint32_t tg_res_count(void);
static inline int tg_res_is_milli(uint32_t id) { return id == TG_RES_CPU; }

/* An amount v of resource id in the model's units (cpu in millicores, memory
 * in bytes, the rest in units), as people and Kubernetes read it, into
 * buf[0..n): cpu and memory as quantities ("1500m", "64Gi"); a whole amount
 * of any other resource as an integer ("16"); a fractional one as a number
 * ("0.5"), or, with TG_AMOUNT_QUANTITY, as a quantity ("500m": what an
 * int-or-string field admits). Returns 1 when buf is a number (JSON writes
 * it bare), 0 when it is a quantity (JSON quotes it). Reasons, `simulate`'s
 * queue table and JSON, and the Queue status all write amounts so. */
enum { TG_AMOUNT_QUANTITY = 1 };
int tg_res_amount(uint32_t id, double v, int flags, char *buf, size_t n);

/* Looks up res in a sorted array; 0 when absent. */
int64_t tg_rq_get(const struct tg_rq *v, uint32_t n, uint32_t res);
/* Sorts by id and sums duplicates in place; returns the new length. */
uint32_t tg_rq_normalize(struct tg_rq *v, uint32_t n);

#endif
