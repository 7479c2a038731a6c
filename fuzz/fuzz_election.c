/* Leader election's decisions (informer/election.h) driven by any script of
 * events between two candidates and a model of the API server's Lease (a
 * write succeeds only with the resourceVersion it read, as the real one):
 * reads and writes sent, delivered and answered in any order and after any
 * delay, time passing, each candidate's wall clock shifted anywhere (it only
 * goes into renewTime). Invariant: never two candidates leading at the same
 * moment. Opcode 7 also hands arbitrary bytes, decoded as a Lease, to a
 * scratch election (no crash, a verdict of the two).
 *
 * Input: pairs of bytes (opcode & 7, argument); the candidate is arg & 1. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "informer/election.h"
#include "util/err.h"

enum { LEASE = 2000, DEADLINE = 1333 };

struct server {
    char holder[8];
    long rv;
    int64_t renew_ms;
};

struct cand {
    struct tg_election el;
    const char *me;
    int64_t wall_off, mono_off;         /* its clocks: the wall one shifted, the monotonic
                                           one with its own origin (same rate) */
    int reading, writing, delivered, ok;
    struct server snap;                 /* what its read returned */
    long wrv;                           /* the resourceVersion its write carries */
    int64_t sent;                       /* its monotonic ms when the write was sent */
};

static void observe(struct cand *c, int64_t now)
{
    char rv[24];
    snprintf(rv, sizeof rv, "%ld", c->snap.rv);
    struct tg_lease l = {.holder = c->snap.holder, .rv = rv, .renew_ms = c->snap.renew_ms,
                         .duration_s = LEASE / 1000};
    int v = tg_election_observe(&c->el, &l, c->me, now + c->mono_off);
    fz_check(v == TG_ELECT_WAIT || v == TG_ELECT_WRITE, "verdict %d", v);
    if (v == TG_ELECT_WRITE && !c->writing) {
        c->writing = 1;
        c->delivered = c->ok = 0;
        c->wrv = c->snap.rv;
        c->sent = now + c->mono_off;
    }
}

static void scratch(const uint8_t *p, size_t n, int64_t now)
{
    struct tg_lease l;
    if (tg_lease_decode((const char *)p, n, &l))
        return;
    struct tg_election e;
    tg_election_init(&e, LEASE, DEADLINE);
    /* expiry: the record's own leaseDurationSeconds, else ours */
    int64_t dur = l.duration_s > 0 ? l.duration_s * 1000LL : LEASE;
    int v1 = tg_election_observe(&e, &l, "a", now);
    int v2 = tg_election_observe(&e, &l, "a", now + dur - 1);
    int v3 = tg_election_observe(&e, &l, "a", now + dur);
    int free_or_mine = !l.holder || !l.holder[0] || !strcmp(l.holder, "a");
    fz_check(v1 == v2 && v1 == (free_or_mine ? TG_ELECT_WRITE : TG_ELECT_WAIT) &&
             v3 == TG_ELECT_WRITE, "verdicts %d %d %d on a decoded Lease", v1, v2, v3);
    tg_lease_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct server s = {.holder = "", .rv = 1};
    struct cand cs[2] = {{.me = "a"}, {.me = "b", .mono_off = 987654321}};
    for (int i = 0; i < 2; i++)
        tg_election_init(&cs[i].el, LEASE, DEADLINE);
    int64_t now = 1000000;
    for (size_t i = 0; i + 1 < size; i += 2) {
        uint8_t op = data[i] & 7, arg = data[i + 1];
        struct cand *c = &cs[arg & 1];
        switch (op) {
        case 0: now += (arg + 1) * 20; break;
        case 1: if (!c->reading) { c->reading = 1; c->snap = s; } break;
        case 2: if (c->reading) { c->reading = 0; observe(c, now); } break;
        case 3:
            if (c->writing && !c->delivered) {
                c->delivered = 1;
                c->ok = s.rv == c->wrv;
                if (c->ok) {
                    snprintf(s.holder, sizeof s.holder, "%s", c->me);
                    s.rv++;
                    s.renew_ms = now + c->wall_off;
                }
            }
            break;
        case 4:
            if (c->writing && c->delivered) {
                c->writing = 0;
                if (c->ok)
                    tg_election_written(&c->el, c->sent, now + c->mono_off);
                else
                    tg_election_lost(&c->el);
            }
            break;
        case 5: if (!c->reading) { c->snap = s; observe(c, now); } break;
        case 6: c->wall_off = (int8_t)arg * 1000LL; break;
        case 7: {
            size_t n = arg < size - i - 2 ? arg : size - i - 2;
            scratch(data + i + 2, n, now);
            i += n;
            break;
        }
        }
        int a = tg_election_leading(&cs[0].el, now + cs[0].mono_off);
        int b = tg_election_leading(&cs[1].el, now + cs[1].mono_off);
        fz_check(!(a && b), "two leaders at %lld (step %zu)", (long long)now, i / 2);
    }
    return 0;
}
