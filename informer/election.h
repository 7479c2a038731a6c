/* Leader election's decisions over a coordination.k8s.io Lease, as
 * client-go's leaderelection judges them, with no I/O: every time is this
 * process's monotonic clock in ms (tg_clock_mono_ms), passed in. No wall
 * clock is compared with another machine's: renewTime is only part of the
 * record's identity.
 *
 * A candidate reads the Lease every retry period and hands it to
 * tg_election_observe:
 * - the record's identity (holderIdentity, renewTime, resourceVersion,
 *   leaseDurationSeconds) is remembered with the time this process first saw
 *   it so; a different record restarts that time;
 * - the candidate may write (take or renew) when the holder is itself, when
 *   there is none, or when this process has seen the record unchanged for the
 *   record's leaseDurationSeconds (else its own lease duration). A standby
 *   whose wall clock runs fast or slow judges exactly as one whose does not.
 * The holder leads until renew_deadline after it sent the last write that
 * succeeded (tg_election_written). The API server stored that write after it
 * was sent and a standby saw it after that, so the holder has stopped
 * (tg_election_leading is 0) lease - renew_deadline before any standby may
 * take over: that margin covers the writes it had in flight. */
#ifndef TG_INFORMER_ELECTION_H
#define TG_INFORMER_ELECTION_H

#include <stdint.h>

#include "informer/api.h"

enum tg_election_verdict {
    TG_ELECT_WAIT,                      /* another holds it and it has not expired */
    TG_ELECT_WRITE,                     /* take it (free, expired) or renew it (ours) */
};

struct tg_election {
    int64_t lease_ms, deadline_ms;      /* ours: leaseDuration, renewDeadline */
    uint64_t seen_id;                   /* identity of the record last observed */
    int64_t seen_ms;                    /* when this process first observed it so */
    int64_t seen_dur_ms;                /* its leaseDurationSeconds, else lease_ms */
    int64_t sent_ms;                    /* when our last successful write was sent */
    uint8_t observed, leading;
};

/* An election for a lease of lease_ms with renew deadline deadline_ms
 * (0 < deadline_ms < lease_ms: else TG_EINVAL). Nothing to free. */
int tg_election_init(struct tg_election *e, int64_t lease_ms, int64_t deadline_ms);
/* cur was read at now (me: this candidate's identity): TG_ELECT_WRITE or
 * TG_ELECT_WAIT. A record held by another stops this candidate leading. */
int tg_election_observe(struct tg_election *e, const struct tg_lease *cur, const char *me,
                        int64_t now);
/* Our write of the Lease, sent at sent_ms, succeeded (answered at now). */
void tg_election_written(struct tg_election *e, int64_t sent_ms, int64_t now);
/* Someone else holds the Lease (a write refused with 409, a stop): not leading. */
void tg_election_lost(struct tg_election *e);
/* Whether this candidate leads at now: it holds the Lease and renewed it
 * (sent) less than renew_deadline ago. */
int tg_election_leading(const struct tg_election *e, int64_t now);
/* When leading lapses unless renewed (monotonic ms); 0 when not leading. */
int64_t tg_election_deadline(const struct tg_election *e);

#endif
