/* libyaml events -> cJSON trees with a line map; see yamljson.h. */
#include "util/yamljson.h"
#include "util/err.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Per document: all nodes, and nodes created by expanding aliases. */
enum { MAX_DEPTH = 128, MAX_NODES = 16 * 1000 * 1000, MAX_ALIAS_NODES = 200 * 1000, MAX_ANCHORS = 4096 };

struct anchor {
    char *name;
    cJSON *node;                        /* owned copy */
};

struct parser {
    yaml_parser_t yp;
    const char *origin;
    struct tg_sb *err;
    struct tg_yaml_lines lines;
    struct anchor *anchors;
    size_t nanchors;
    long budget;                        /* nodes left in this document */
    long alias_budget;                  /* alias-expanded nodes left */
};

static int is_int(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (!*s)
        return 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o'))
        return 0; /* kept as strings: unusual in manifests */
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static int is_float(const char *s)
{
    char *end;
    if (!*s || strchr(s, 'x') || strchr(s, 'X') || strchr(s, 'n') || strchr(s, 'N') ||
        strchr(s, 'i') || strchr(s, 'I'))
        return 0;
    errno = 0;
    strtod(s, &end);
    return *end == 0 && errno == 0;
}

/* Resolves a scalar to a cJSON item; numbers keep their text. */
static cJSON *scalar_item(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;
    int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (tag && strcmp(tag, YAML_STR_TAG) == 0)
        plain = 0;
    if (plain) {
        if (!*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"))
            return cJSON_CreateNull();
        if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
            return cJSON_CreateTrue();
        if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
            return cJSON_CreateFalse();
        if (is_int(v) || is_float(v)) {
            cJSON *num = cJSON_CreateNumber(strtod(v, NULL));
            if (num) {
                num->valuestring = strdup(v);
                if (!num->valuestring) {
                    cJSON_Delete(num);
                    return NULL;
                }
            }
            return num;
        }
    }
    return cJSON_CreateString(v);
}

static int fail(struct parser *p, const yaml_mark_t *m, const char *msg)
{
    if (p->err->len == 0)
        tg_sb_printf(p->err, "%s:%zu:%zu: %s", p->origin, m->line + 1, m->column + 1, msg);
    return TG_EPARSE;
}

static int next_event(struct parser *p, yaml_event_t *ev)
{
    if (yaml_parser_parse(&p->yp, ev))
        return 0;
    if (p->err->len == 0)
        tg_sb_printf(p->err, "%s:%zu:%zu: %s%s%s", p->origin, p->yp.problem_mark.line + 1,
                     p->yp.problem_mark.column + 1, p->yp.problem ? p->yp.problem : "malformed YAML",
                     p->yp.context ? " " : "", p->yp.context ? p->yp.context : "");
    return TG_EPARSE;
}

static void set_line(struct parser *p, cJSON *node, const yaml_mark_t *m)
{
    tg_imap_put(&p->lines.map, (uint64_t)(uintptr_t)node, m->line + 1);
}

static int add_anchor(struct parser *p, const char *name, const cJSON *node)
{
    if (p->nanchors >= MAX_ANCHORS)
        return TG_ERANGE;
    if (p->nanchors % 64 == 0) {
        struct anchor *na = realloc(p->anchors, (p->nanchors + 64) * sizeof *na);
        if (!na)
            return TG_ENOMEM;
        p->anchors = na;
    }
    cJSON *copy = cJSON_Duplicate(node, 1);
    char *nm = strdup(name);
    if (!copy || !nm) {
        cJSON_Delete(copy);
        free(nm);
        return TG_ENOMEM;
    }
    p->anchors[p->nanchors++] = (struct anchor){nm, copy};
    return 0;
}

static long count_nodes(const cJSON *n)
{
    long c = 1;
    for (const cJSON *ch = n->child; ch; ch = ch->next)
        c += count_nodes(ch);
    return c;
}

static int parse_node(struct parser *p, yaml_event_t *ev, int depth, cJSON **out);

static int parse_children(struct parser *p, cJSON *coll, int is_map, int depth)
{
    for (;;) {
        yaml_event_t ev;
        int rc = next_event(p, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        char *key = NULL;
        if (is_map) {
            if (ev.type != YAML_SCALAR_EVENT) {
                rc = fail(p, &ev.start_mark, "mapping keys must be scalars");
                yaml_event_delete(&ev);
                return rc;
            }
            key = strdup((const char *)ev.data.scalar.value);
            yaml_event_delete(&ev);
            if (!key)
                return TG_ENOMEM;
            rc = next_event(p, &ev);
            if (rc) {
                free(key);
                return rc;
            }
        }
        cJSON *child = NULL;
        rc = parse_node(p, &ev, depth + 1, &child);
        yaml_event_delete(&ev);
        if (rc) {
            free(key);
            return rc;
        }
        if (is_map) {
            if (cJSON_GetObjectItemCaseSensitive(coll, key))
                cJSON_DeleteItemFromObjectCaseSensitive(coll, key); /* last one wins */
            cJSON_AddItemToObject(coll, key, child);
            free(key);
        } else {
            cJSON_AddItemToArray(coll, child);
        }
    }
}

/* Builds the node that starts with *ev. */
static int parse_node(struct parser *p, yaml_event_t *ev, int depth, cJSON **out)
{
    if (depth > MAX_DEPTH)
        return fail(p, &ev->start_mark, "nesting deeper than 128 levels");
    if (--p->budget < 0)
        return fail(p, &ev->start_mark, "document too large (node budget exceeded)");
    const char *anchor = NULL;
    cJSON *node = NULL;
    int rc = 0;
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        for (size_t i = p->nanchors; i-- > 0;)
            if (!strcmp(p->anchors[i].name, name)) {
                long sz = count_nodes(p->anchors[i].node);
                p->budget -= sz;
                p->alias_budget -= sz;
                if (p->budget < 0 || p->alias_budget < 0)
                    return fail(p, &ev->start_mark, "alias expansion too large");
                node = cJSON_Duplicate(p->anchors[i].node, 1);
                if (!node)
                    return TG_ENOMEM;
                break;
            }
        if (!node)
            return fail(p, &ev->start_mark, "unknown alias");
        break;
    }
    case YAML_SCALAR_EVENT:
        anchor = (const char *)ev->data.scalar.anchor;
        node = scalar_item(ev);
        if (!node)
            return TG_ENOMEM;
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int is_map = ev->type == YAML_MAPPING_START_EVENT;
        anchor = (const char *)(is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
        node = is_map ? cJSON_CreateObject() : cJSON_CreateArray();
        if (!node)
            return TG_ENOMEM;
        rc = parse_children(p, node, is_map, depth);
        break;
    }
    default:
        return fail(p, &ev->start_mark, "unexpected YAML event");
    }
    if (rc) {
        cJSON_Delete(node);
        return rc;
    }
    set_line(p, node, &ev->start_mark);
    if (anchor && (rc = add_anchor(p, anchor, node))) {
        cJSON_Delete(node);
        return rc == TG_ERANGE ? fail(p, &ev->start_mark, "too many anchors") : rc;
    }
    *out = node;
    return 0;
}

static void clear_doc(struct parser *p)
{
    for (size_t i = 0; i < p->nanchors; i++) {
        free(p->anchors[i].name);
        cJSON_Delete(p->anchors[i].node);
    }
    free(p->anchors);
    p->anchors = NULL;
    p->nanchors = 0;
    tg_imap_free(&p->lines.map);
}

int tg_yaml_parse(const char *buf, size_t n, const char *origin, tg_yaml_doc_cb cb, void *ud,
                  struct tg_sb *err)
{
    struct parser p = {.origin = origin, .err = err};
    if (!yaml_parser_initialize(&p.yp))
        return TG_ENOMEM;
    yaml_parser_set_input_string(&p.yp, (const unsigned char *)buf, n);
    int rc = 0, done = 0;
    while (!done && !rc) {
        yaml_event_t ev;
        if ((rc = next_event(&p, &ev)))
            break;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT: {
            p.lines.doc_line = (int)ev.start_mark.line + 1;
            p.budget = MAX_NODES;
            p.alias_budget = MAX_ALIAS_NODES;
            yaml_event_t root_ev;
            if ((rc = next_event(&p, &root_ev)))
                break;
            cJSON *root = NULL;
            rc = parse_node(&p, &root_ev, 0, &root);
            yaml_event_delete(&root_ev);
            if (!rc && root && !(cJSON_IsNull(root))) {
                if (cb(ud, root, &p.lines))
                    done = 1;
            } else {
                cJSON_Delete(root);
            }
            clear_doc(&p);
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    clear_doc(&p);
    yaml_parser_delete(&p.yp);
    return rc;
}

int tg_yaml_line(const struct tg_yaml_lines *l, const cJSON *node)
{
    uint64_t v;
    if (l && node && tg_imap_get(&l->map, (uint64_t)(uintptr_t)node, &v))
        return (int)v;
    return l ? l->doc_line : 0;
}

int tg_read_file(const char *path, char **buf, size_t *len, struct tg_sb *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        tg_sb_printf(err, "%s: %s", path, strerror(errno));
        return TG_EIO;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!b)
        return TG_ENOMEM;
    if (bad) {
        free(b);
        tg_sb_printf(err, "%s: read error", path);
        return TG_EIO;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}
