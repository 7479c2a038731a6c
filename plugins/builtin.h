/* The built-in plugins' descriptors, for plugins/registry.c. */
#ifndef TG_PLUGINS_BUILTIN_H
#define TG_PLUGINS_BUILTIN_H

#include "plugins/plugin.h"

extern const struct tg_plugin tg_plugin_nodestate;
extern const struct tg_plugin tg_plugin_nodeaffinity;
extern const struct tg_plugin tg_plugin_taints;
extern const struct tg_plugin tg_plugin_resources;

/* 1 when the pod's nodeSelector and required node affinity match the node;
 * else 0 with *bad_key the mismatching nodeSelector key, or TG_STR_NONE when
 * the affinity terms failed. */
int tg__node_affinity_match(const struct tg_podspec *ps, const struct tg_node_obj *o,
                            uint32_t *bad_key);

#endif
