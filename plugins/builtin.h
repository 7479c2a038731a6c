/* The built-in plugins' descriptors, for plugins/registry.c. */
#ifndef TG_PLUGINS_BUILTIN_H
#define TG_PLUGINS_BUILTIN_H

#include "plugins/plugin.h"

extern const struct tg_plugin tg_plugin_nodestate;
extern const struct tg_plugin tg_plugin_nodeaffinity;
extern const struct tg_plugin tg_plugin_taints;
extern const struct tg_plugin tg_plugin_resources;
extern const struct tg_plugin tg_plugin_volumes;
extern const struct tg_plugin tg_plugin_dra;
extern const struct tg_plugin tg_plugin_ports;
extern const struct tg_plugin tg_plugin_interpod;
extern const struct tg_plugin tg_plugin_spread;

/* 1 when the pod's nodeSelector and required node affinity match the node;
 * else 0 with *bad_key the mismatching nodeSelector key, or TG_STR_NONE when
 * the affinity terms failed. */
int tg__node_affinity_match(const struct tg_podspec *ps, const struct tg_node_obj *o,
                            uint32_t *bad_key);
/* 1 when a NodeSelector (terms ORed, requirements ANDed) matches the node. */
int tg__node_terms_match(const struct tg_selterm *terms, uint16_t n, const struct tg_node_obj *o);
/* 1 when every taint with effect NoSchedule/NoExecute is tolerated. */
int tg__taints_tolerated(const struct tg_podspec *ps, const struct tg_node_obj *o);
/* An interned sentence for a reason argument (printf format). */
uint32_t tg__istr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
