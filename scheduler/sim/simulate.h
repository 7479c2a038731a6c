/* `topogang simulate`: the scheduling engine on Kubernetes YAML files.
 *
 * Objects are read by load.h; pods with spec.nodeName are usage (whoever
 * scheduled them); pending pods with the policy's schedulerName are
 * gathered into gangs by the engine and tried in queue order (priority,
 * then creation time) with exactly the daemon's code: placement, and where a
 * gang does not fit, preemption of lower-priority gangs (carried out at
 * once: the victims are removed and the gang placed where they were). */
#ifndef TG_SIM_SIMULATE_H
#define TG_SIM_SIMULATE_H

#include <stdint.h>

#include "scheduler/cycle.h"
#include "util/strbuf.h"

struct tg_sim;

/* `topogang simulate ...`: returns the exit code (0 ok, 1 failure, 2 usage). */
int tg_cmd_simulate(int argc, char **argv);

/* Output of one run, for tests and the benchmark. */
struct tg_sim_summary {
    uint32_t nodes, bound_pods, gangs, scheduled, unschedulable, invalid;
    uint32_t pods_placed, pods_pending;
    uint32_t preemptions, victim_pods;
    uint32_t reclaims;                  /* preemptions that were reclaims between queues */
    uint32_t warnings, errors;          /* objects skipped, problems reported */
    double load_ms, schedule_ms;
};

/* New simulation with a policy (copied). NULL on out of memory. */
struct tg_sim *tg_sim_new(const struct tg_policy *p);
void tg_sim_free(struct tg_sim **sim);
/* Reads one file (or "-"). Bad objects are skipped with a message on stderr;
 * returns TG_EPARSE/TG_EIO when the file cannot be read as a whole (the
 * reason is in err). */
int tg_sim_load_file(struct tg_sim *sim, const char *path, struct tg_sb *err);
int tg_sim_load_string(struct tg_sim *sim, const char *yaml, size_t n, const char *origin,
                       struct tg_sb *err);
/* Places every gang. Returns 0 or TG_ENOMEM. */
int tg_sim_run(struct tg_sim *sim);
/* Results as a table for people, or JSON for tools (see README). */
void tg_sim_table(const struct tg_sim *sim, int show_pods, struct tg_sb *out);
void tg_sim_json(const struct tg_sim *sim, struct tg_sb *out);
const struct tg_sim_summary *tg_sim_summary(const struct tg_sim *sim);
/* Silences object warnings on stderr (tests, benchmarks). */
void tg_sim_quiet(struct tg_sim *sim, int quiet);

#endif
