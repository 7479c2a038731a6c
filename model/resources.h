/* The registry of resource names. cpu, memory, pods and ephemeral-storage have
 * fixed ids; every other name (nvidia.com/gpu, rdma/hca_shared_devices_a,
 * nvidia.com/mig-2g.45gb, hugepages-2Mi) gets the next id on first sight.
 * cpu is counted in millicores, everything else in whole units. */
#ifndef TG_MODEL_RESOURCES_H
#define TG_MODEL_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

enum { TG_RES_CPU, TG_RES_MEMORY, TG_RES_PODS, TG_RES_EPHEMERAL, TG_RES_NFIXED };
#define TG_RES_MAX 256

/* A (resource, amount) pair: requests, allocatable, usage are sorted arrays of
 * these, by id. */
struct tg_rq {
    uint32_t res;
    int64_t val;
};

/* Id of a resource name, registering it; -1 when TG_RES_MAX names exist. */
int tg_res_id(const char *name, size_t n);
/* Id of a known name, or -1; never registers. */
int tg_res_lookup(const char *name, size_t n);
const char *tg_res_name(uint32_t id);
uint32_t tg_res_count(void);
static inline int tg_res_is_milli(uint32_t id) { return id == TG_RES_CPU; }

/* Looks up res in a sorted array; 0 when absent. */
int64_t tg_rq_get(const struct tg_rq *v, uint32_t n, uint32_t res);
/* Sorts by id and sums duplicates in place; returns the new length. */
uint32_t tg_rq_normalize(struct tg_rq *v, uint32_t n);

#endif
