/* What only the daemon's own files share; daemon.h is its public header (the
 * command). The flow runs one way:
 *
 *   informer --handlers.c--> engine (model, gangs, queue)      object events
 *   main.c's tick: tg_engine_next -> one decision at a time:
 *       PLACE    -> binder.c: Binding requests; tells the engine how they
 *                   ended (tg_engine_forget, tg_engine_bind_done) and
 *                   report.c what happened (a note)
 *       PREEMPT  -> evict.c: DisruptionTarget condition, delete with grace,
 *                   Events on both sides, nominatedNodeName
 *       each     -> report.c: PodGroup status and Events
 *       UNSCHEDULABLE/WAITING of a gang short of minMember -> loss.c: half-bound
 *                   (rolled back by the binder) or ran complete (never rolled
 *                   back: grace, then gang.onMemberLoss); housekeeping too
 *   leader.c -> on_leader(ud, is_leader) -> main.c
 *
 * Each piece is one struct with an init that takes what it reads and the
 * hooks it calls; none writes another's fields. All of it runs on one libuv
 * loop; the metrics HTTP server's thread only reads atomics (metrics.h). */
#ifndef TG_DAEMON_INTERNAL_H
#define TG_DAEMON_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "informer/api.h"
#include "informer/informer.h"
#include "model/queues.h"
#include "scheduler/engine.h"

/* Wall-clock milliseconds since the epoch (with the test offset): for
 * timestamps written to the API, never to judge a duration. */
int64_t tg__wall_ms(void);
/* The engine's clock: the wall clock at start advanced by the monotonic
 * clock (tg_clock_steady_wall_ms): timeouts, backoffs, durations. */
int64_t tg__now_ms(void);

/* ---- handlers.c: informer events -> engine events ----------------------------------- */

struct tg__handlers {
    struct tg_engine *engine;
    struct tg_client *client;           /* InvalidPolicy Events on the ConfigMap */
    const char *scheduler_name;         /* for a warning when the policy names another */
    /* Hooks; each may be NULL. */
    void (*on_change)(void *ud);        /* the engine may have work now */
    void (*on_policy)(void *ud, const struct tg_policy *p); /* a new policy is in force */
    void (*on_podgroup)(void *ud, const char *key);  /* a PodGroup appeared or its spec changed */
    void (*on_members)(void *ud, const char *gang_key); /* a bound member came, changed or went */
    void (*on_synced)(void *ud);        /* every cache has listed */
    void *ud;
    unsigned gang_sources;              /* optional collections to read (TG_INF_BIT each):
                                           the peers' PodGroups and the workloads */
    uint32_t lost;                      /* object events the engine could not take (out of
                                           memory), or decisions lost, since the last resync */
    int64_t resync_ms;                  /* loop ms of the last resync */
    uint32_t nres;                      /* tg_res_count() when a Node last registered a name */
    uint8_t unoffered;                  /* a pod asked for a name no Node had registered
                                           (tg_pod_resolve): a new name resyncs */
    uint8_t newres;                     /* that resync is due */
};

/* Points io's handlers (and on_synced) at h, which is kept by reference. */
void tg__handlers_wire(struct tg__handlers *h, struct tg_informer_opts *io);
/* When something was lost (h->lost; tg__handlers_lost), at most every 200 ms
 * (now_ms: loop ms): every cached object but the policy ConfigMap is handed
 * to the engine again, as an update to itself, so that what an allocation
 * failure dropped gets there and gangs left out of the queue go back. The
 * daemon takes no decision while h->lost is set. */
void tg__handlers_resync(struct tg__handlers *h, const struct tg_informer *inf, int64_t now_ms);
/* The pod key of the informer's pod cache (TG_INF_PODS, which holds this
 * scheduler's unbound pods beside the bound ones) when it is bound; NULL when
 * not cached or not bound, or when pods is NULL. Every `bound` store the
 * daemon's pieces take below is that cache, read through this. */
const struct tg_pod *tg__bound_pod(const struct tg_store *pods, const char *key);
/* A decision or its binds were lost to an allocation failure: resync soon. */
static inline void tg__handlers_lost(struct tg__handlers *h)
{
    h->lost++;
}
/* --gang-sources: "all", "none" or a comma list of upstream, scheduler-plugins,
 * volcano, kai, job, jobset, lws, pytorchjob, mpijob, trainjob, into *mask
 * (TG_INF_BIT each). Returns 0 or TG_EINVAL with the reason in err. */
int tg__gang_sources_parse(const char *list, unsigned *mask, char *err, size_t n);

/* ---- queues.c: the tenant Queues (model/queues.h) ---------------------------------------- */

struct tg__queues;
/* A record of the Queues the daemon reads; tg__queues_free frees it.
 * Returns 0 or TG_ENOMEM. */
int tg__queues_new(struct tg_client *c, struct tg__queues **out);
void tg__queues_free(struct tg__queues **q);
/* Points io's three Queue collections at q and asks for them (discovered:
 * an API whose CRD is not installed is not watched). Call after
 * tg__handlers_wire. */
void tg__queues_wire(struct tg__queues *q, struct tg_informer_opts *io);
/* The informer whose stores hold the decoded Queues (NULL: none yet). */
void tg__queues_set_informer(struct tg__queues *q, const struct tg_informer *inf);
/* Whether this process leads: only the leader writes Events and conditions;
 * on becoming leader it tells each problem the stores hold once. */
void tg__queues_leading(struct tg__queues *q, int leading);
/* fn(ud) after every Queue added, changed or deleted (the engine's door). */
void tg__queues_on_change(struct tg__queues *q, void (*fn)(void *ud), void *ud);
/* Counts Queue changes: a caller that kept a set compares it to know it is stale. */
uint64_t tg__queues_generation(const struct tg__queues *q);
/* The current Queues, one per name (when two APIs define the same name, the
 * topogang.io one, else KAI's, wins), with `problem` set where their spec
 * has one. *out: an array the caller frees; the objects stay the informer's,
 * valid until the next informer event (copy what is kept). Returns the count,
 * or TG_ENOMEM. */
int tg__queues_current(const struct tg__queues *q, const struct tg_queue_obj ***out);
/* The same over the three APIs' stores (indexed by enum tg_queue_api; NULL:
 * not watched): what tg__queues_current reads. */
int tg__queues_merge(const struct tg_store *const st[TG_QAPI_N], const struct tg_queue_obj ***out);

/* The status of topogang.io Queues (leader only; never KAI's or Volcano's,
 * whose controllers own theirs): per queue, allocated and fairShare per
 * resource (Kubernetes names; whole GPUs as integers, cpu, memory and
 * fractions as quantity strings), waitingGangs and runningGangs, written by
 * a JSON merge patch of the status subresource that names only these keys
 * (the Valid condition stays), only when changed since the last write, at
 * most once per TG_QSTATUS_MIN_MS per Queue. Called from housekeeping. */
enum { TG_QSTATUS_MIN_MS = 1000 };
struct tg_engine;
struct tg_fairshare;
struct cJSON;
void tg__queues_status_tick(struct tg__queues *q, const struct tg_engine *e, int64_t now_ms);
/* Each queue's own gangs (tg_engine_queue_gangs): waiting[0..n) then
 * running[0..n), indexed as tg_engine_fairshare(e)'s queues; counted again
 * (one pass over the gangs) at most once per TG_QSTATUS_MIN_MS, or when the
 * queue set changed. NULL (n 0) while queues are off. Valid until the next
 * call. The status and /metrics read the same counts. */
const uint32_t *tg__queues_gangs(struct tg__queues *q, const struct tg_engine *e, int64_t now_ms,
                                 uint32_t *n);
/* The status of the fair-share tree's queue q (a new object, the caller's). */
struct cJSON *tg__queues_status_build(const struct tg_fairshare *fs, uint32_t q, uint32_t waiting,
                                      uint32_t running);
/* The merge patch text to write to Queue name (of uid) status now (free()
 * it), or NULL: st equals what was last written to that same Queue, or the
 * last write is younger than TG_QSTATUS_MIN_MS. Takes st; a returned patch
 * counts as written (its resources dropped since then are set null). */
char *tg__queues_status_due(struct tg__queues *q, const char *name, const char *uid,
                            struct cJSON *st, int64_t now_ms);

/* ---- usage.c: time fairness across a restart (the file's top has the rules) ------------- */

enum { TG_USAGE_SAVE_MS = 60000 };
struct tg__usage;
/* The record of the saved usage in ConfigMap <lease_ns>/<lease_name>-usage.
 * Returns 0 or TG_ENOMEM. */
int tg__usage_new(struct tg_client *c, struct tg_engine *e, const char *lease_ns,
                  const char *lease_name, struct tg__usage **out);
void tg__usage_free(struct tg__usage **u);
/* The caches synced / leadership gained or lost: the saved usage is read
 * back once both hold (again after each gain). */
void tg__usage_synced(struct tg__usage *u);
void tg__usage_leading(struct tg__usage *u, int leading);
/* fn(ud) once it is read back (or there is nothing to read). */
void tg__usage_on_ready(struct tg__usage *u, void (*fn)(void *ud), void *ud);
/* 1 when decisions may go on: the saved usage is read back, or not wanted. */
int tg__usage_ready(const struct tg__usage *u);
/* Saves the usage every TG_USAGE_SAVE_MS while leading (final: now, on
 * SIGTERM). loop_ms: the loop's clock. */
void tg__usage_tick(struct tg__usage *u, int64_t loop_ms, int final);

/* ---- binder.c: the binds of a PLACE decision -------------------------------------------- */

enum tg__bind_what {
    TG__BIND_STARTED,                   /* binds queued */
    TG__BIND_SLOW,                      /* still binding a second after the first was sent */
    TG__BIND_DONE,                      /* minMember reached (failed members retry later) */
    TG__BIND_ROLLED_BACK,               /* could not reach minMember: bound members deleted */
    TG__BIND_ABANDONED,                 /* stood down mid-bind: binds stopped, nothing deleted;
                                         * the next leader decides (tg__binder_standdown) */
};

/* What the binder tells the reporter about one gang. Strings are valid
 * during the call only. */
struct tg__bind_note {
    uint8_t what;                       /* enum tg__bind_what */
    uint32_t pods, ok, failed, must;    /* binds of this attempt */
    uint32_t deleted;                   /* ROLLED_BACK: bound members deleted */
    const char *level, *domain;         /* where the gang was placed */
    const char *fail_key, *fail_msg;    /* the first failure, or NULL */
    long fail_status;
    const char *why;                    /* ROLLED_BACK of a half-bound gang found at start */
    const char *pod_ns, *pod_name, *pod_uid; /* a member of this attempt: what its Events regard
                                         * when the gang has no object of its own and no
                                         * member is pending any more (gangs of one) */
    /* ROLLED_BACK: the deletes wait for the RolledBack Event. The reporter
     * sends that Event with told and told_ud as its on_done and ud, or, when
     * it sends none, calls told(told_ud, r) at once (r->err says why); the
     * binder sends the deletes then, or TG__ROLLBACK_WAIT_MS after the note
     * at the latest. NULL when nothing waits. */
    tg_done_fn told;
    void *told_ud;
};

/* How long a rollback's deletes wait for their RolledBack Event's answer. */
enum { TG__ROLLBACK_WAIT_MS = 5000 };

struct tg__binder_hooks {
    void (*on_note)(void *ud, const char *gang_key, const struct tg__bind_note *n);
    /* The pod cache (NULL: none yet; read by tg__bound_pod): whether a pod to roll back ran. */
    const struct tg_store *(*bound)(void *ud);
    void *ud;
};

struct tg__binder;

/* A binder over engine e (bind concurrency and retries from its policy, read
 * at use). Returns 0 or TG_ENOMEM; free with tg__binder_free. */
int tg__binder_new(struct tg_engine *e, struct tg_client *c, uv_loop_t *loop,
                   const struct tg__binder_hooks *h, struct tg__binder **out);
/* Frees every op (their requests are the client's to cancel). */
void tg__binder_free(struct tg__binder **b);
/* Binds the members of a PLACE decision concurrently. Returns 0, or
 * TG_ENOMEM when the binds could not even start: then nothing of the
 * decision stays assumed and the gang goes back with a backoff. */
int tg__binder_bind(struct tg__binder *b, const struct tg_decision *d);
/* Deletes the bound members of g, a gang found half-bound that cannot be
 * completed (uids from the bound pods' cache); why goes into the note. As
 * a rollback of the binder's own, the deletes go once the RolledBack Event
 * is answered (tg__bind_note.told). */
void tg__binder_rollback(struct tg__binder *b, const struct tg_grec *g,
                         const struct tg_store *bound, const char *why);
/* Sends queued binds while fewer than api.bindConcurrency are in flight. */
void tg__binder_pump(struct tg__binder *b);
/* Housekeeping: drops assumptions seen bound or expired (a minute after the
 * bind without being seen), notes slow binds, sends the deletes of rollbacks
 * whose Event got no answer in TG__ROLLBACK_WAIT_MS. */
void tg__binder_tick(struct tg__binder *b);
/* This process stopped leading: every op is abandoned (binds not sent are
 * forgotten, none retried, nothing rolled back; the ops end as their binds in
 * flight come back). Nothing is sent while the client is fenced. */
void tg__binder_standdown(struct tg__binder *b);
/* Shutting down: failed binds are not retried; rollbacks waiting for their
 * Event send their deletes now. */
void tg__binder_stopping(struct tg__binder *b);
uint32_t tg__binder_inflight(const struct tg__binder *b);
/* Pods bound or being bound by this scheduler and not yet seen bound. */
uint32_t tg__binder_assumed(const struct tg__binder *b);

/* ---- evict.c: carrying out a PREEMPT decision --------------------------------------------- */

struct tg__evictor;

/* An evictor. Returns 0 or TG_ENOMEM; free with tg__evict_free. */
int tg__evict_new(struct tg_engine *e, struct tg_client *c, struct tg__evictor **out);
void tg__evict_free(struct tg__evictor **ev);
/* Evicts d's victims as kube-scheduler does and tells both sides; bound is
 * the bound pods' cache as it is now (uids of the victims; the informer
 * makes it only once discovery is done). Returns 0 or TG_ENOMEM (what was
 * sent stays sent; the nomination holds either way). */
int tg__evict(struct tg__evictor *ev, const struct tg_store *bound, const struct tg_decision *d);
/* The Preempting Event's note, "preempting VICTIMS; REASON", in at most
 * cap - 1 bytes (cap >= 64): the reason cut at half the API's note limit
 * (on a UTF-8 boundary, "..."), the victims listed whole until they no
 * longer fit, then " and N more". */
void tg__preempting_note(const struct tg_preemption *p, char *note, size_t cap);

/* ---- report.c: PodGroup status and Events ------------------------------------------------ */

struct tg__rpatch;

struct tg__report {
    struct tg_engine *engine;           /* read: gangs, PodGroups, reservations */
    struct tg_client *client;
    struct tg__rpatch *patches;         /* status patches in flight (owned) */
    uint32_t lost;                      /* status writes not sent or not taken (out of
                                           memory, no answer) since the last tick */
};

void tg__report_init(struct tg__report *r, struct tg_engine *e, struct tg_client *c);
void tg__report_free(struct tg__report *r);
/* The engine frees g: its report state goes. */
void tg__report_gang_freed(struct tg__report *r, struct tg_grec *g);
/* A decision of the engine, as users should see it. */
void tg__report_decision(struct tg__report *r, const struct tg_decision *d);
/* The binder's news of a gang. */
void tg__report_bind(struct tg__report *r, const char *gang_key, const struct tg__bind_note *n);
/* Status again for a gang whose members changed (scheduled count), or whose
 * PodGroup object is new (rewrite != 0: written even if unchanged). */
void tg__report_refresh(struct tg__report *r, const char *gang_key, int rewrite);
/* Housekeeping: status writes that were lost are made again. */
void tg__report_tick(struct tg__report *r);
/* Whether this process has reported a decision for g yet. */
int tg__report_seen(const struct tg_grec *g);
/* Whether this scheduler writes g's status (topogang.io and upstream PodGroups). */
int tg__report_status_ours(const struct tg_grec *g);
/* Whether g's status says it was complete (reached minMember bound): as set
 * here, else as its PodGroup's status says (Complete; upstream
 * PodGroupScheduled True). 0 for a gang whose status is not ours. */
int tg__report_complete(const struct tg_grec *g);
/* g's MemberLoss condition: state (enum tg_pg_loss; NONE: none) since
 * since_ms with msg (NULL: the last one), written with the status; an
 * Event reason (type Normal/Warning, note msg) too unless reason is NULL. */
void tg__report_loss(struct tg__report *r, struct tg_grec *g, int state, int64_t since_ms,
                     const char *msg, const char *type, const char *reason);

/* ---- loss.c: gangs that ran complete and lost members (scheduler/loss.h) ------------------ */

struct tg__loss;

/* Over engine e; its conditions and Events through r. 0 or TG_ENOMEM. */
int tg__loss_new(struct tg_engine *e, struct tg_client *c, struct tg__report *r,
                 struct tg__loss **out);
void tg__loss_free(struct tg__loss **l);
/* g's life from the API's record (enum tg_life; bound: the bound pods'
 * cache, for what members ran). */
int tg__loss_life(const struct tg_grec *g, const struct tg_store *bound);
/* The same, and a short gang is watched from now on (Event MemberLoss,
 * condition MemberLoss; its grace from the condition's time when the
 * PodGroup records one). The leader only. */
int tg__loss_check(struct tg__loss *l, struct tg_grec *g, const struct tg_store *bound);
/* g's replacements fit nowhere in its domain (reason: the decision's, in
 * numbers): a watched short gang under gang.onNoReplacement requeue is
 * evicted whole now (Event MemberLossRequeued); else nothing. */
void tg__loss_no_room(struct tg__loss *l, struct tg_grec *g, const struct tg_store *bound,
                      const char *reason);
/* Housekeeping: leading != 0 on the leader (the first such tick checks
 * every gang); watched gangs made whole or gone are let go, those past
 * gang.memberLossGraceSeconds get gang.onMemberLoss. A standby forgets all. */
void tg__loss_tick(struct tg__loss *l, const struct tg_store *bound, int leading);

/* ---- leader.c: Lease election -------------------------------------------------------------- */

struct tg__leader;

struct tg__leader_opts {
    const char *identity, *ns, *name;   /* who campaigns, for which Lease (copied) */
    int duration_s;                     /* leaseDurationSeconds */
    int64_t renew_deadline_ms;          /* 0: 2/3 of the duration; else < the duration */
};

/* Campaigns for the Lease o->ns/o->name as o->identity; on_leader(ud, 1) when
 * this process becomes the leader, (ud, 0) when it stops being one (lost, or
 * not renewed within the renew deadline). Fences c's leader-only writes to
 * the times it leads. Returns 0, TG_EINVAL (renew deadline not below the
 * duration) or TG_ENOMEM. */
int tg__leader_start(uv_loop_t *loop, struct tg_client *c, const struct tg__leader_opts *o,
                     void (*on_leader)(void *ud, int is_leader), void *ud,
                     struct tg__leader **out);
/* Releases the Lease (if held), frees the election (*l NULL'ed), then calls
 * done(ud), possibly from a later loop callback. */
void tg__leader_stop(struct tg__leader **l, void (*done)(void *ud), void *ud);

#endif
