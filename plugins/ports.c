/* Host ports, as kube-scheduler's NodePorts: a pod asking for a host port
 * (hostPort, or a containerPort of a hostNetwork pod) goes only where no
 * placed pod holds the same port and protocol on an overlapping address
 * (equal, or either one every address). A shape with host ports counts at
 * most one pod per node: the second would collide with the first. */
#include "plugins/builtin.h"
#include "util/intern.h"

static const char *const protos[] = {"TCP", "UDP", "SCTP"};

static int prefilter(const struct tg_cycle_ctx *cx, struct tg_shape *s, struct tg_status *st)
{
    (void)cx;
    st->code = s->pod->cons && s->pod->cons->nports ? TG_SUCCESS : TG_SKIP;
    return 0;
}

static int conflict(const struct tg_hostport *a, const struct tg_hostport *b)
{
    return a->port == b->port && a->proto == b->proto && (!a->ip || !b->ip || a->ip == b->ip);
}

static uint32_t count(const struct tg_cycle_ctx *cx, const struct tg_shape *s, uint32_t slot,
                      struct tg_status *st)
{
    const struct tg_podcons *mine = s->pod->cons;
    for (const struct tg_usage *u = cx->cluster->nodes[slot].pods; u; u = u->nnext) {
        if (u->hidden || !u->cons)
            continue;
        for (uint16_t i = 0; i < u->cons->nports; i++)
            for (uint16_t j = 0; j < mine->nports; j++)
                if (conflict(&u->cons->ports[i], &mine->ports[j])) {
                    const struct tg_hostport *p = &mine->ports[j];
                    *st = (struct tg_status){TG_UNSCHEDULABLE, TG_R_HOST_PORT,
                                             p->ip ? tg__istr("%s %s:%u", protos[p->proto], tg_str(p->ip), p->port)
                                                   : tg__istr("%s/%u", protos[p->proto], p->port)};
                    return 0;
                }
    }
    return 1;
}

const struct tg_plugin tg_plugin_ports = {
    .name = "NodePorts",
    .prefilter = prefilter,
    .count = count,
};
