/* The static plugin table (no dlopen), status reason texts, and the cluster
 * hooks that fan out to the plugins. Order matters: cheap, selective filters
 * first, counting plugins last. */
#include "plugins/builtin.h"
#include "plugins/numa.h"
#include "plugins/podindex.h"
#include "model/resources.h"
#include "util/intern.h"

#include <stdio.h>

const struct tg_plugin *const tg_plugins[] = {
    &tg_plugin_nodestate,
    &tg_plugin_nodeaffinity,
    &tg_plugin_taints,
    &tg_plugin_volumes,
    &tg_plugin_dra,
    &tg_plugin_ports,
    &tg_plugin_resources,
    &tg_plugin_numa,
    &tg_plugin_interpod,
    &tg_plugin_spread,
    NULL,
};

const char *tg_reason_name(uint8_t reason)
{
    static const char *const names[] = {
#define TG__REASON_NAME(name, text) #name,
        TG_REASON_MAP(TG__REASON_NAME)
#undef TG__REASON_NAME
    };
    return reason < TG_R__COUNT ? names[reason] : "UNKNOWN";
}

/* Reasons whose argument is an interned string (a label key, a sentence). */
static int arg_is_str(uint8_t reason)
{
    switch (reason) {
    case TG_R_TAINT: case TG_R_SELECTOR: case TG_R_RESERVED: case TG_R_POD_AFFINITY:
    case TG_R_POD_ANTI: case TG_R_POD_ANTI_OF: case TG_R_NO_LABEL: case TG_R_SPREAD:
    case TG_R_HOST_PORT: case TG_R_VOLUME: case TG_R_CLAIM: case TG_R_WAIT:
    case TG_R_LEVEL_LABEL:
        return 1;
    default:
        return 0;
    }
}

const char *tg_reason_text(uint8_t reason, uint32_t arg, char *buf, unsigned n)
{
    static const char *const texts[] = {
#define TG__REASON_TEXT(name, text) text,
        TG_REASON_MAP(TG__REASON_TEXT)
#undef TG__REASON_TEXT
    };
    if (reason >= TG_R__COUNT) {
        snprintf(buf, n, "unknown reason");
        return buf;
    }
    const char *a = "";
    char kbuf[64];
    if (reason == TG_R_INSUFFICIENT || reason == TG_R_NUMA)
        a = tg_res_name(arg);
    else if (reason == TG_R_NUMA_KUBELET)
        a = tg_numa_kubelet_text(arg, kbuf, sizeof kbuf);
    else if (arg_is_str(reason))
        a = tg_str(arg);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
    snprintf(buf, n, texts[reason], a);
#pragma GCC diagnostic pop
    return buf;
}

static void node_changed(void *ud, struct tg_cluster *c, uint32_t slot)
{
    (void)ud;
    for (const struct tg_plugin *const *p = tg_plugins; *p; p++)
        if ((*p)->node_changed)
            (*p)->node_changed(c, slot);
}

static void usage_changed(void *ud, struct tg_cluster *c, struct tg_usage *u, int sign)
{
    (void)ud;
    for (const struct tg_plugin *const *p = tg_plugins; *p; p++)
        if ((*p)->usage_changed)
            (*p)->usage_changed(c, u, sign);
    tg__pidx_usage(c, u, sign);
}

static void record_added(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    (void)ud;
    tg__pidx_added(c, u);
}

static void record_removed(void *ud, struct tg_cluster *c, struct tg_usage *u)
{
    (void)ud;
    tg__pidx_removed(c, u);
}

static void record_changing(void *ud, struct tg_cluster *c, struct tg_usage *u, int done)
{
    (void)ud;
    tg__pidx_changing(c, u, done);
}

int tg_plugins_attach(struct tg_cluster *c)
{
    struct tg_cluster_hooks h = {.node_changed = node_changed, .usage_changed = usage_changed,
                                 .record_added = record_added, .record_removed = record_removed,
                                 .record_changing = record_changing};
    int rc = tg__pidx_attach(c);
    return rc ? rc : tg_cluster_listen(c, &h);
}
