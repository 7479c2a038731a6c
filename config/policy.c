/* Policy parsing, validation, defaults and dump, driven by one table.
 *
 * Keys (see policy.h and README "Policy"):
 *   schedulerName, topology.levels[].{name,nodeLabel},
 *   placement.{strategy,defaultPreferred}, scoring.{topology,binpack,numa},
 *   gang.{scheduleTimeoutSeconds,bindRetries,reserveAfterSeconds,memberLossGraceSeconds,
 *   onMemberLoss,onNoReplacement},
 *   api.{qps,burst,bindConcurrency}, numa.{defaultPolicy,policyLabel},
 *   preemption.{enabled,evictBarePods,reclaimMinRuntimeSeconds}, priority.allowPodGroupPriority,
 *   queues.{defaultQueue,usageHalfLifeSeconds}. */
#include "config/policy.h"
#include "model/objects.h"
#include "util/err.h"
#include "util/intern.h"
#include "util/yamljson.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum opt_type { T_STR, T_INT, T_ENUM, T_BOOL };

struct opt {
    const char *path;                   /* "section.key" */
    enum opt_type type;
    size_t off;
    size_t size;                        /* T_STR: buffer size */
    int64_t lo, hi;                     /* T_INT bounds */
    const char *const *names;           /* T_ENUM: NULL-terminated, index = value */
    const int *values;                  /* T_ENUM: stored values */
    const char *def;                    /* default, as text */
};

static const char *const strategy_names[] = {"pack", "spread", NULL};
static const int strategy_values[] = {TG_STRATEGY_PACK, TG_STRATEGY_SPREAD};
static const char *const numa_names[] = {"none", "best-effort", "restricted", "single-numa-node", NULL};
static const char *const loss_names[] = {"keep", "evict", NULL};
static const int loss_values[] = {TG_LOSS_KEEP, TG_LOSS_EVICT};
static const char *const noroom_names[] = {"wait", "requeue", NULL};
static const int noroom_values[] = {TG_NOROOM_WAIT, TG_NOROOM_REQUEUE};
static const int numa_values[] = {TG_NUMA_NONE, TG_NUMA_BEST_EFFORT, TG_NUMA_RESTRICTED,
                                  TG_NUMA_SINGLE_NUMA_NODE};

#define F(field) offsetof(struct tg_policy, field)
#define S(field) sizeof(((struct tg_policy *)0)->field)
static const struct opt opts[] = {
    {"schedulerName", T_STR, F(scheduler_name), S(scheduler_name), 0, 0, NULL, NULL, "topogang"},
    {"placement.strategy", T_ENUM, F(strategy), 0, 0, 0, strategy_names, strategy_values, "pack"},
    {"placement.defaultPreferred", T_STR, F(default_preferred), S(default_preferred), 0, 0, NULL, NULL, "rack"},
    {"scoring.topology", T_INT, F(score_topology), 0, 0, 1000, NULL, NULL, "100"},
    {"scoring.binpack", T_INT, F(score_binpack), 0, 0, 1000, NULL, NULL, "50"},
    {"scoring.numa", T_INT, F(score_numa), 0, 0, 1000, NULL, NULL, "50"},
    {"gang.scheduleTimeoutSeconds", T_INT, F(gang_timeout_s), 0, 1, 31536000, NULL, NULL, "300"},
    {"gang.bindRetries", T_INT, F(bind_retries), 0, 0, 20, NULL, NULL, "3"},
    {"gang.reserveAfterSeconds", T_INT, F(reserve_after_s), 0, 0, 31536000, NULL, NULL, "300"},
    {"gang.memberLossGraceSeconds", T_INT, F(member_loss_grace_s), 0, 0, 31536000, NULL, NULL, "300"},
    {"gang.onMemberLoss", T_ENUM, F(on_member_loss), 0, 0, 0, loss_names, loss_values, "keep"},
    {"gang.onNoReplacement", T_ENUM, F(on_no_replacement), 0, 0, 0, noroom_names, noroom_values, "wait"},
    {"api.qps", T_INT, F(api_qps), 0, 1, 100000, NULL, NULL, "200"},
    {"api.burst", T_INT, F(api_burst), 0, 1, 100000, NULL, NULL, "400"},
    {"api.bindConcurrency", T_INT, F(bind_concurrency), 0, 1, 4096, NULL, NULL, "64"},
    {"numa.defaultPolicy", T_ENUM, F(numa_default), 0, 0, 0, numa_names, numa_values, "none"},
    {"numa.policyLabel", T_STR, F(numa_label), S(numa_label), 0, 0, NULL, NULL, "topogang.io/topology-policy"},
    {"preemption.enabled", T_BOOL, F(preemption), 0, 0, 0, NULL, NULL, "true"},
    {"preemption.evictBarePods", T_BOOL, F(evict_bare_pods), 0, 0, 0, NULL, NULL, "false"},
    {"preemption.reclaimMinRuntimeSeconds", T_INT, F(reclaim_min_runtime_s), 0, 0, 31536000, NULL, NULL, "0"},
    {"priority.allowPodGroupPriority", T_BOOL, F(allow_pg_priority), 0, 0, 0, NULL, NULL, "false"},
    {"queues.defaultQueue", T_STR, F(default_queue), S(default_queue), 0, 0, NULL, NULL, "default"},
    {"queues.usageHalfLifeSeconds", T_INT, F(usage_half_life_s), 0, 0, 31536000, NULL, NULL, "0"},
};
#define NOPTS (sizeof opts / sizeof opts[0])

static const struct { const char *name, *label; } default_levels[] = {
    {"zone", "topology.kubernetes.io/zone"},
    {"block", "cloud.google.com/gce-topology-block"},
    {"rack", "topogang.io/rack"},
    {"nvlink-domain", "nvidia.com/gpu.clique"},
    {"node", "kubernetes.io/hostname"},
};

static void set_text(struct tg_policy *p, const struct opt *o, const char *v)
{
    char *base = (char *)p + o->off;
    switch (o->type) {
    case T_STR:
        snprintf(base, o->size, "%s", v);
        break;
    case T_INT:
        *(int64_t *)base = strtoll(v, NULL, 10);
        break;
    case T_BOOL:
        *(int *)base = !strcmp(v, "true");
        break;
    case T_ENUM:
        for (int i = 0; o->names[i]; i++)
            if (!strcmp(o->names[i], v))
                *(int *)base = o->values[i];
        break;
    }
}

static void finish(struct tg_policy *p)
{
    for (uint32_t i = 0; i < p->nlevels; i++)
        p->levels[i].label_id = tg_intern(p->levels[i].label);
    p->numa_label_id = tg_intern(p->numa_label);
}

void tg_policy_default(struct tg_policy *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < NOPTS; i++)
        set_text(p, &opts[i], opts[i].def);
    p->nlevels = sizeof default_levels / sizeof default_levels[0];
    for (uint32_t i = 0; i < p->nlevels; i++) {
        snprintf(p->levels[i].name, sizeof p->levels[i].name, "%s", default_levels[i].name);
        snprintf(p->levels[i].label, sizeof p->levels[i].label, "%s", default_levels[i].label);
    }
    finish(p);
}

struct pctx {
    const char *origin;
    const struct tg_yaml_lines *lines;
    struct tg_sb *errs;
    struct tg_policy *p;
    int nerr;
    int done;
};

/* Appends one problem and its newline. A control character inside it (keys
 * and values from the YAML may hold line breaks) is written as \n, \t or
 * \xNN, so that every problem stays one line. */
static void put_problem(struct tg_sb *errs, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            tg_sb_puts(errs, "\\n");
        else if (c == '\t')
            tg_sb_puts(errs, "\\t");
        else if (c < 0x20 || c == 0x7f)
            tg_sb_printf(errs, "\\x%02x", c);
        else
            tg_sb_putc(errs, (char)c);
    }
    tg_sb_putc(errs, '\n');
}

static void perr(struct pctx *x, const cJSON *at, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void perr(struct pctx *x, const cJSON *at, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct tg_sb line = {0};
    tg_sb_printf(&line, "%s:%d: %s: %s", x->origin, tg_yaml_line(x->lines, at), key, msg);
    put_problem(x->errs, tg_sb_str(&line));
    tg_sb_free(&line);
    x->nerr++;
}

static void apply_opt(struct pctx *x, const struct opt *o, const cJSON *v)
{
    char *base = (char *)x->p + o->off;
    switch (o->type) {
    case T_STR:
        if (!cJSON_IsString(v)) {
            perr(x, v, o->path, "must be a string");
        } else if (strlen(v->valuestring) >= o->size) {
            perr(x, v, o->path, "is longer than %zu characters", o->size - 1);
        } else {
            snprintf(base, o->size, "%s", v->valuestring);
        }
        break;
    case T_INT: {
        double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
        /* in range before the conversion: (int64_t)1e300 is undefined */
        if (!cJSON_IsNumber(v) || !(d >= (double)o->lo && d <= (double)o->hi) ||
            d != (double)(int64_t)d)
            perr(x, v, o->path, "must be a whole number from %lld to %lld",
                 (long long)o->lo, (long long)o->hi);
        else
            *(int64_t *)base = (int64_t)d;
        break;
    }
    case T_BOOL:
        if (!cJSON_IsBool(v))
            perr(x, v, o->path, "must be true or false");
        else
            *(int *)base = cJSON_IsTrue(v);
        break;
    case T_ENUM: {
        int found = -1;
        for (int i = 0; cJSON_IsString(v) && o->names[i]; i++)
            if (!strcmp(o->names[i], v->valuestring))
                found = i;
        if (found < 0) {
            char list[256] = "";
            for (int i = 0; o->names[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         o->names[i]);
            perr(x, v, o->path, "must be one of %s (got %s%s%s)", list,
                 cJSON_IsString(v) ? "\"" : "", cJSON_IsString(v) ? v->valuestring : "a non-string",
                 cJSON_IsString(v) ? "\"" : "");
        } else {
            *(int *)base = o->values[found];
        }
        break;
    }
    }
}

static void parse_levels(struct pctx *x, const cJSON *lv)
{
    if (!cJSON_IsArray(lv)) {
        perr(x, lv, "topology.levels", "must be a list of {name, nodeLabel}");
        return;
    }
    int n = cJSON_GetArraySize(lv);
    if (n < 1 || n > TG_MAX_LEVELS) {
        perr(x, lv, "topology.levels", "must have 1 to %d levels, not %d", TG_MAX_LEVELS, n);
        return;
    }
    struct tg_policy *p = x->p;
    p->nlevels = 0;
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, lv)
    {
        char key[64];
        snprintf(key, sizeof key, "topology.levels[%d]", i++);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *label = cJSON_GetObjectItemCaseSensitive(it, "nodeLabel");
        if (!cJSON_IsObject(it) || !cJSON_IsString(name) || !cJSON_IsString(label) ||
            !*name->valuestring || !*label->valuestring) {
            perr(x, it, key, "needs a name and a nodeLabel (non-empty strings)");
            continue;
        }
        const cJSON *k;
        cJSON_ArrayForEach(k, it) if (strcmp(k->string, "name") && strcmp(k->string, "nodeLabel"))
            perr(x, k, key, "unknown key \"%s\" (name, nodeLabel)", k->string);
        if (strlen(name->valuestring) >= sizeof p->levels[0].name ||
            strlen(label->valuestring) >= sizeof p->levels[0].label) {
            perr(x, it, key, "name or nodeLabel too long");
            continue;
        }
        for (uint32_t j = 0; j < p->nlevels; j++) {
            if (!strcmp(p->levels[j].name, name->valuestring))
                perr(x, name, key, "level name \"%s\" is used twice", name->valuestring);
            if (!strcmp(p->levels[j].label, label->valuestring))
                perr(x, label, key, "node label \"%s\" is used by two levels", label->valuestring);
        }
        struct tg_level *l = &p->levels[p->nlevels++];
        snprintf(l->name, sizeof l->name, "%s", name->valuestring);
        snprintf(l->label, sizeof l->label, "%s", label->valuestring);
    }
}

static int policy_doc(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    struct pctx *x = ud;
    x->lines = lines;
    if (x->done++) {
        perr(x, root, "(document)", "a policy is one YAML document; extra documents are not allowed");
        cJSON_Delete(root);
        return 1;
    }
    if (!cJSON_IsObject(root)) {
        perr(x, root, "(top)", "the policy must be a map");
        cJSON_Delete(root);
        return 1;
    }
    const cJSON *sec;
    cJSON_ArrayForEach(sec, root)
    {
        if (!strcmp(sec->string, "topology")) {
            if (!cJSON_IsObject(sec)) {
                perr(x, sec, "topology", "must be a map with levels");
                continue;
            }
            const cJSON *k;
            cJSON_ArrayForEach(k, sec) if (strcmp(k->string, "levels"))
                perr(x, k, "topology", "unknown key \"%s\" (levels)", k->string);
            const cJSON *lv = cJSON_GetObjectItemCaseSensitive(sec, "levels");
            if (lv)
                parse_levels(x, lv);
            continue;
        }
        int is_section = 0, matched = 0;
        size_t sl = strlen(sec->string);
        for (size_t i = 0; i < NOPTS; i++) {
            const char *dot = strchr(opts[i].path, '.');
            if (!dot && !strcmp(opts[i].path, sec->string)) {
                apply_opt(x, &opts[i], sec);
                matched = 1;
            } else if (dot && (size_t)(dot - opts[i].path) == sl &&
                       !strncmp(opts[i].path, sec->string, sl)) {
                is_section = 1;
            }
        }
        if (matched)
            continue;
        if (!is_section) {
            perr(x, sec, sec->string, "unknown key (schedulerName, topology, placement, scoring, "
                                      "gang, api, numa, preemption, priority)");
            continue;
        }
        if (!cJSON_IsObject(sec)) {
            perr(x, sec, sec->string, "must be a map");
            continue;
        }
        const cJSON *k;
        cJSON_ArrayForEach(k, sec)
        {
            char path[128];
            snprintf(path, sizeof path, "%s.%s", sec->string, k->string);
            const struct opt *o = NULL;
            for (size_t i = 0; i < NOPTS; i++)
                if (!strcmp(opts[i].path, path))
                    o = &opts[i];
            if (o)
                apply_opt(x, o, k);
            else
                perr(x, k, path, "unknown key");
        }
    }
    cJSON_Delete(root);
    return 0;
}

/* A Kubernetes object name (DNS-1123 subdomain), as Queues are named. */
static int is_object_name(const char *s)
{
    size_t n = strlen(s);
    if (!n || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
              s[i] == '.'))
            return 0;
    return 1;
}

int tg_policy_parse(const char *yaml, size_t n, const char *origin, struct tg_policy *out,
                    struct tg_sb *errs)
{
    struct tg_policy p;
    tg_policy_default(&p);
    struct pctx x = {.origin = origin, .errs = errs, .p = &p};
    struct tg_sb perrs = {0};
    int rc = tg_yaml_parse(yaml, n, origin, policy_doc, &x, &perrs);
    if (rc) {
        put_problem(errs, tg_sb_str(&perrs));
        tg_sb_free(&perrs);
        return TG_EPARSE;
    }
    tg_sb_reset(&perrs);
    if (p.default_preferred[0] && tg_policy_level(&p, p.default_preferred) < 0) {
        tg_sb_printf(&perrs, "%s: placement.defaultPreferred: \"%s\" is not a level (", origin,
                     p.default_preferred);
        for (uint32_t i = 0; i < p.nlevels; i++)
            tg_sb_printf(&perrs, "%s%s", i ? ", " : "", p.levels[i].name);
        tg_sb_puts(&perrs, ")");
        put_problem(errs, tg_sb_str(&perrs));
        x.nerr++;
    }
    if (!is_object_name(p.default_queue)) {
        tg_sb_printf(errs, "%s: queues.defaultQueue: \"%s\" is not a Queue name (lower-case "
                     "letters, digits, '-' and '.', starting and ending with a letter or digit)\n",
                     origin, p.default_queue);
        x.nerr++;
    }
    if (p.api_burst < p.api_qps) {
        tg_sb_printf(errs, "%s: api.burst: must be at least api.qps (%lld)\n", origin,
                     (long long)p.api_qps);
        x.nerr++;
    }
    tg_sb_free(&perrs);
    if (x.nerr)
        return TG_EPARSE;
    finish(&p);
    *out = p;
    return 0;
}

int tg_policy_load_file(const char *path, struct tg_policy *out, struct tg_sb *errs)
{
    char *buf;
    size_t len;
    int rc = tg_read_file(path, &buf, &len, errs);
    if (rc)
        return rc;
    rc = tg_policy_parse(buf, len, path, out, errs);
    free(buf);
    return rc;
}

int tg_policy_level(const struct tg_policy *p, const char *name)
{
    for (uint32_t i = 0; i < p->nlevels; i++)
        if (!strcmp(p->levels[i].name, name))
            return (int)i + 1;
    return -1;
}

int tg_policy_level_any(const struct tg_policy *p, uint32_t id)
{
    if (!p || !id)
        return -1;
    int l = tg_policy_level(p, tg_str(id));
    for (uint32_t i = 0; l < 0 && i < p->nlevels; i++)
        if (p->levels[i].label_id == id)
            l = (int)i + 1;
    return l;
}

void tg_policy_level_labels(const struct tg_policy *p, uint32_t *out)
{
    for (uint32_t i = 0; i < p->nlevels; i++)
        out[i] = p->levels[i].label_id;
}

/* A string as a YAML scalar that reads back as the same string: plain when
 * it is a word of letters, digits and ._/- starting with a letter (and not
 * true/false/null), else double-quoted with escapes. */
static void put_scalar(struct tg_sb *out, const char *s)
{
    static const char *const words[] = {"true", "false", "null", "True", "False", "Null",
                                        "TRUE", "FALSE", "NULL"};
    int plain = isalpha((unsigned char)s[0]);
    for (const char *c = s; plain && *c; c++)
        plain = isalnum((unsigned char)*c) || strchr("._/-", *c);
    for (size_t i = 0; plain && i < sizeof words / sizeof words[0]; i++)
        plain = strcmp(s, words[i]) != 0;
    if (plain)
        tg_sb_puts(out, s);
    else
        tg_sb_json_str(out, s);
}

void tg_policy_dump(const struct tg_policy *p, struct tg_sb *out)
{
    tg_sb_puts(out, "schedulerName: ");
    put_scalar(out, p->scheduler_name);
    tg_sb_puts(out, "\ntopology:\n  levels:\n");
    for (uint32_t i = 0; i < p->nlevels; i++) {
        tg_sb_puts(out, "    - {name: ");
        put_scalar(out, p->levels[i].name);
        tg_sb_puts(out, ", nodeLabel: ");
        put_scalar(out, p->levels[i].label);
        tg_sb_puts(out, "}\n");
    }
    const char *section = "";
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];
        const char *dot = strchr(o->path, '.');
        if (!dot)
            continue;
        if (strncmp(section, o->path, (size_t)(dot - o->path)) || section[dot - o->path]) {
            tg_sb_printf(out, "%.*s:\n", (int)(dot - o->path), o->path);
            static char sec[32];
            snprintf(sec, sizeof sec, "%.*s", (int)(dot - o->path), o->path);
            section = sec;
        }
        const char *base = (const char *)p + o->off;
        switch (o->type) {
        case T_STR:
            tg_sb_printf(out, "  %s: ", dot + 1);
            tg_sb_json_str(out, base);
            tg_sb_putc(out, '\n');
            break;
        case T_INT: tg_sb_printf(out, "  %s: %lld\n", dot + 1, (long long)*(const int64_t *)base); break;
        case T_BOOL: tg_sb_printf(out, "  %s: %s\n", dot + 1, *(const int *)base ? "true" : "false"); break;
        case T_ENUM:
            for (int k = 0; o->names[k]; k++)
                if (o->values[k] == *(const int *)base)
                    tg_sb_printf(out, "  %s: %s\n", dot + 1, o->names[k]);
            break;
        }
    }
}
