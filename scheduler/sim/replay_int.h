/* What only the replay's own files share (replay.c runs the trace,
 * replay_report.c writes tables and JSON, replay_plot.c the SVG). Times are
 * ms since the trace start unless said otherwise. */
#ifndef TG_SIM_REPLAY_INT_H
#define TG_SIM_REPLAY_INT_H

#include "scheduler/engine.h"
#include "scheduler/fairshare.h"
#include "scheduler/sim/replay.h"

#define TG__RP_NONE UINT32_MAX

enum tg__rpod_state { TG__RP_FUTURE, TG__RP_PENDING, TG__RP_BINDING, TG__RP_RUNNING,
                      TG__RP_DONE, TG__RP_GONE };
enum tg__rgang_state { TG__RG_FUTURE, TG__RG_WAITING, TG__RG_RUNNING, TG__RG_DONE };
enum tg__run_end { TG__RUN_RUNNING, TG__RUN_COMPLETED, TG__RUN_PREEMPTED };

/* One pod of the trace, through its incarnations (a preempted pod is
 * recreated under a new name: <name>-r<n>). */
struct tg__rpod {
    const struct tg_simpod *sp;         /* the input pod and its duration */
    struct tg_pod live;                 /* the incarnation the engine sees (shallow copy of
                                           sp->pod; key owned) */
    uint32_t gang;                      /* index in gangs, TG__RP_NONE: not this scheduler's */
    uint32_t inc;                       /* incarnation */
    uint32_t run;                       /* index of its run in its gang, TG__RP_NONE */
    uint32_t node;                      /* interned node while binding or bound */
    uint8_t state;                      /* enum tg__rpod_state */
    int64_t bound_ms;                   /* absolute clock time of its bind */
    int64_t main;                       /* requests of the main extended resource */
};

struct tg__run {
    int64_t start, end;                 /* end < 0: not ended; start < 0: binding */
    uint8_t why;                        /* enum tg__run_end */
    int level;                          /* tree level, -1: unknown (running at the start) */
    char *domain;                       /* owned, NULL: unknown */
    uint32_t *pods, *nodes;             /* rpod index, interned node */
    uint32_t npods, cap;
    uint32_t done;                      /* pods completed */
    uint32_t by;                        /* preempted by this gang, TG__RP_NONE */
};

/* A preemption this gang made. */
struct tg__pre {
    int64_t at;
    char *group;                        /* the victim's PodGroup key, NULL: a pod of no group */
    char **pods;                        /* the victims' input names */
    uint32_t npods;
};

struct tg__rgang {
    char *key;                          /* PodGroup key, or the input pod key */
    uint8_t grouped, state, invalid;
    uint8_t timed_out;                  /* passed its timeout at some point */
    uint8_t overdue;                    /* ... in the wait it is in now */
    uint8_t initial;                    /* was running at the trace start */
    const struct tg_podgroup *pg;
    int32_t priority;
    uint32_t queue;                     /* interned tenant queue (issue 19), 0 none */
    uint32_t *pods, npods, cappods;     /* rpod indices, input order */
    uint32_t min;
    int64_t main;                       /* main extended resource of every member */
    int64_t arrival;                    /* <0: not arrived */
    uint32_t binding;                   /* binds in flight */
    struct tg__run *runs;
    uint32_t nruns, capruns;
    struct tg__pre *pre;
    uint32_t npre;
    int64_t resv_at;                    /* <0: never reserved */
    char *resv_domain;
    char *reason;                       /* the engine's last word while it waited */
};

/* State at one sampling time. */
struct tg__sample {
    int64_t t;
    int64_t used;                       /* main resource in use */
    uint32_t queue;                     /* gangs waiting */
    int64_t waiting;                    /* main resource of the gangs waiting */
    uint32_t free_nodes;
    uint32_t free_dom[TG_MAX_LEVELS + 1]; /* per tree level: domains wholly free */
};

struct tg__event;

/* Tenant queues over time (issue 19): per queue and integrated resource,
 * the engine's allocated amount and fair share (tg_engine_fairshare: the
 * numbers `simulate` prints) integrated over time, advanced at each event
 * time in O(queues x nres) (replay_queues.c); and, per sample, each queue's
 * allocated amount and fair share of the main resource for the plot. Empty
 * (nq 0) when the input holds no Queue. */
struct tg__rqueues {
    uint32_t nq, nres;
    uint32_t res[TG_FS_MAX_RES];        /* model ids integrated: the main resource and
                                           every resource a queue gives a quota or limit */
    double *used_ms, *share_ms;         /* [q * nres + k]: amount (model units) x ms */
    double *snap_used, *snap_share;     /* the same as of the last cluster change */
    int64_t at;                         /* absolute: integrated up to here */
    float *samp;                        /* [sample * 2 * nq + 2q (+1)]: allocated, fair share
                                           of the main resource */
    uint32_t capsamp;                   /* samples samp holds room for */
};

struct tg_replay {
    const struct tg_simdata *data;
    struct tg_policy policy;
    struct tg_replay_opts opts;
    struct tg_engine *engine;
    int engine_up;
    uint32_t ours;                      /* interned schedulerName */
    int64_t t0, now;                    /* absolute clock (ms since the epoch) */
    struct tg__rpod *pods;
    uint32_t npods;
    struct tg__rgang *gangs;
    uint32_t ngangs;
    struct tg_hmap gang_idx;            /* rgang key -> index */
    struct tg_hmap live_idx;            /* current incarnation key -> rpod index */
    struct tg__event *ev;               /* the event heap */
    uint32_t nev, capev;
    uint64_t seq;
    int64_t *bind_free;                 /* per bind worker: when it is free */
    uint32_t nworkers;
    /* resources */
    uint32_t main_res;                  /* the main extended resource (GPUs), or cpu */
    int64_t alloc[TG_RES_MAX], used[TG_RES_MAX];
    double used_ms[TG_RES_MAX];         /* integrals over time (unit x ms) */
    int64_t integ_at;                   /* absolute: integrated up to here */
    /* over time */
    int64_t last_change;                /* absolute: the last event that changed the cluster */
    int64_t quiet_from;                 /* absolute: last change of any kind (stop rule) */
    int64_t next_sample;                /* ms since the start */
    struct tg__sample *samples;
    uint32_t nsamples, capsamples;
    uint32_t queue;                     /* gangs waiting now */
    int64_t waiting;                    /* their main resource */
    int cut;                            /* the last drain hit its budget */
    uint64_t changes, sampled_change;   /* state changes so far; at the last sample */
    uint32_t *dom_free, *dom_all;       /* sampling scratch, per tree domain */
    uint32_t capdom;
    struct tg__rqueues qs;
    struct tg_replay_summary sum;
    int64_t end;                        /* ms since the start */
};

/* Tenant queues over time (replay_queues.c). init after the engine holds
 * the Queues (0 or TG_ENOMEM); integrate moves the integrals to `upto`
 * (absolute) at the current amounts; checkpoint remembers them as of the
 * last cluster change (the replay's end when no --until); sample records
 * sample i (0 or TG_ENOMEM); finish settles the integrals at the end. */
int tg__rq_init(struct tg_replay *r);
void tg__rq_integrate(struct tg_replay *r, int64_t upto);
void tg__rq_checkpoint(struct tg_replay *r);
int tg__rq_sample(struct tg_replay *r, uint32_t i);
void tg__rq_finish(struct tg_replay *r, int until_hit);
void tg__rq_free(struct tg_replay *r);
/* Per queue q and integrated resource k: seconds of allocation and of fair
 * share, in the resource's Kubernetes unit (GPUs, cpu cores, memory bytes). */
double tg__rq_used_s(const struct tg_replay *r, uint32_t q, uint32_t k);
double tg__rq_share_s(const struct tg_replay *r, uint32_t q, uint32_t k);

/* The gang's state at the end: Completed, Running, Pending, Unschedulable
 * (waiting past its timeout), Invalid. */
const char *tg__replay_status(const struct tg__rgang *g);
/* The tree level's name ("cluster" for 0). */
const char *tg__replay_level_name(const struct tg_replay *r, int level);
/* Seconds, as JSON numbers and in tables. */
void tg__replay_secs(struct tg_sb *o, int64_t ms);

#endif
