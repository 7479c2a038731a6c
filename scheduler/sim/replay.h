/* `topogang simulate --replay`: a workload played through virtual time on
 * the scheduling engine (scheduler/engine.h), the daemon's own flow: queue,
 * backoff, placement, preemption, nominations, reservations, timeouts.
 *
 * Input is what `simulate` reads (load.h). A pending pod of this scheduler
 * arrives at its metadata.creationTimestamp (a PodGroup with its first
 * member); once bound it runs for its simulate.topogang.io/duration (absent:
 * until the end). Pods with spec.nodeName run from the trace start (the
 * earliest creationTimestamp of a pending pod). Virtual time jumps from one
 * event to the next: an arrival, a bind finishing (--bind-latency; instant
 * by default), a completion, a Terminating pod gone after its grace period
 * (spec.terminationGracePeriodSeconds, default 30 s), or the engine's next
 * due time (backoff, flush, timeout).
 *
 * Decisions are carried out as the daemon does: PLACE binds the pods;
 * PREEMPT makes every victim Terminating (it holds its node until its grace
 * period ends) and its controller recreates it at once as new pending pods
 * (a gang of this scheduler goes back to the queue and runs its whole
 * duration again: work is lost). The replay makes no scheduling decision
 * of its own.
 *
 * Output: per gang its arrival, runs (start, end, why it ended, level and
 * domain, pods and nodes), waits, preemptions and reservation, final state;
 * a summary (makespan, utilization of every extended resource, waits by
 * gang size, preemptions and work lost, reservations, fragmentation sampled
 * over time; with tenant Queues, each queue's resource-seconds held against
 * its fair share over time); a table, JSON, an SVG plot, and two policies
 * compared. */
#ifndef TG_SIM_REPLAY_H
#define TG_SIM_REPLAY_H

#include <stdint.h>

#include "config/policy.h"
#include "scheduler/rank.h"
#include "scheduler/sim/load.h"
#include "util/strbuf.h"

struct tg_replay;

struct tg_replay_opts {
    int64_t until_ms;                   /* stop at this time after the trace start; <0: none */
    int64_t bind_latency_ms;            /* per pod bind; 0: instant */
    int64_t sample_ms;                  /* fragmentation and plot sampling period; 0: 60 s */
};

/* What a run adds up to, for tests and the benchmark (seconds). */
struct tg_replay_summary {
    uint32_t gangs, pods, completed, running, pending, unschedulable, invalid, never_started;
    uint32_t timed_out, preemptions, victim_gangs, victim_pods, reservations;
    uint32_t reclaims;                  /* preemptions that were reclaims between queues */
    uint64_t attempts, events;
    double end_s;                       /* the replay's end: --until, else the last change */
    double work_lost;                   /* main extended resource x seconds, victims' */
    double wait_p50, wait_p90, wait_p99; /* first start - arrival, started gangs; -1: none */
    double run_ms;                      /* wall time of tg_replay_run */
    struct tg_rank_report rank;         /* summed over every placement: consecutive-rank pairs
                                           of the members it placed, and the levels they cross
                                           (scheduler/rank.h); pairs 0: no ranks */
};

/* A replay of data (kept by reference, read only, until freed) under a
 * policy (copied). NULL when out of memory. Free with tg_replay_free. */
struct tg_replay *tg_replay_new(const struct tg_simdata *data, const struct tg_policy *p,
                                const struct tg_replay_opts *o);
void tg_replay_free(struct tg_replay **r);
/* Plays the trace to its end. Returns 0 or TG_ENOMEM. */
int tg_replay_run(struct tg_replay *r);
const struct tg_replay_summary *tg_replay_summary(const struct tg_replay *r);

/* Results (README "simulate --replay"): a table for people, JSON for tools. */
void tg_replay_table(const struct tg_replay *r, struct tg_sb *out);
void tg_replay_json(const struct tg_replay *r, struct tg_sb *out);
/* Two replays of the same trace side by side: the gangs whose start,
 * level, domain or state differ, and both summaries. name_a/name_b label
 * the policies. */
void tg_replay_compare_table(const struct tg_replay *a, const struct tg_replay *b,
                             const char *name_a, const char *name_b, struct tg_sb *out);
void tg_replay_compare_json(const struct tg_replay *a, const struct tg_replay *b,
                            const char *name_a, const char *name_b, struct tg_sb *out);
/* One self-contained SVG: utilization of the main extended resource, queue
 * length and waiting GPUs over time (b may be NULL; else both, b dashed);
 * with tenant Queues, each queue's share of the main resource (a's). */
void tg_replay_svg(const struct tg_replay *a, const struct tg_replay *b, const char *name_a,
                   const char *name_b, struct tg_sb *out);

/* `topogang simulate --replay ...` once simulate has read its flags: loads
 * files, runs one or two replays, writes the output (and the plot). Returns
 * the exit code (0 ok, 1 failure). */
struct tg_replay_cmd {
    const char **files;
    int nfiles;
    const struct tg_policy *policy, *policy2; /* policy2 NULL: no --compare */
    const char *name, *name2;           /* labels: the --config and --compare files */
    const char *output;                 /* "table" or "json" */
    const char *plot;                   /* SVG path or NULL */
    int quiet;
    struct tg_replay_opts opts;
};
int tg_replay_cmd(const struct tg_replay_cmd *c);

#endif
