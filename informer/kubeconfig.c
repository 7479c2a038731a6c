/* Kubeconfig and in-cluster configuration (see kubeconfig.h).
 *
 * The file is loaded with libyaml's document API and walked directly: the
 * handful of fields we need does not justify a generic YAML->JSON pass. */
#include "informer/kubeconfig.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "util/err.h"
#include "util/log.h"

#define SA_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"

static void seterr(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t len, const char *fmt, ...)
{
    if (!err || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

static yaml_node_t *ymap_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strlen(key) == k->data.scalar.length &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* Scalar text of map[key], or NULL. */
static const char *ystr(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    yaml_node_t *n = ymap_get(doc, map, key);
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    return (const char *)n->data.scalar.value;
}

/* In a list of {name: X, <field>: {...}}, the <field> map of the entry named name. */
static yaml_node_t *named(yaml_document_t *doc, yaml_node_t *root, const char *list,
                          const char *field, const char *name)
{
    yaml_node_t *seq = ymap_get(doc, root, list);
    if (!seq || seq->type != YAML_SEQUENCE_NODE || !name)
        return NULL;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(doc, *it);
        const char *n = ystr(doc, e, "name");
        if (n && strcmp(n, name) == 0)
            return ymap_get(doc, e, field);
    }
    return NULL;
}

static const unsigned char b64[256] = {
#define R(c, v) [c] = v + 1
    R('A', 0), R('B', 1), R('C', 2), R('D', 3), R('E', 4), R('F', 5), R('G', 6), R('H', 7),
    R('I', 8), R('J', 9), R('K', 10), R('L', 11), R('M', 12), R('N', 13), R('O', 14),
    R('P', 15), R('Q', 16), R('R', 17), R('S', 18), R('T', 19), R('U', 20), R('V', 21),
    R('W', 22), R('X', 23), R('Y', 24), R('Z', 25), R('a', 26), R('b', 27), R('c', 28),
    R('d', 29), R('e', 30), R('f', 31), R('g', 32), R('h', 33), R('i', 34), R('j', 35),
    R('k', 36), R('l', 37), R('m', 38), R('n', 39), R('o', 40), R('p', 41), R('q', 42),
    R('r', 43), R('s', 44), R('t', 45), R('u', 46), R('v', 47), R('w', 48), R('x', 49),
    R('y', 50), R('z', 51), R('0', 52), R('1', 53), R('2', 54), R('3', 55), R('4', 56),
    R('5', 57), R('6', 58), R('7', 59), R('8', 60), R('9', 61), R('+', 62), R('/', 63),
#undef R
};

int tg_base64_decode(const char *s, char **out, size_t *n)
{
    size_t len = strlen(s);
    char *buf = malloc(len / 4 * 3 + 4);
    if (!buf)
        return TG_ENOMEM;
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            continue;
        if (*p == '=') {
            pad++;
            continue;
        }
        if (!b64[*p] || pad)
            goto fail;
        acc = (acc << 6) | (uint32_t)(b64[*p] - 1);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || bits >= 6)
        goto fail;
    buf[o] = 0;
    *out = buf;
    *n = o;
    return 0;
fail:
    free(buf);
    return TG_EPARSE;
}

/* A path from the file, made absolute against dir (the kubeconfig's folder). */
static char *resolve(const char *dir, const char *p)
{
    if (!p || !*p)
        return NULL;
    char *r = NULL;
    if (p[0] == '/' || !dir) {
        r = strdup(p);
    } else if (asprintf(&r, "%s/%s", dir, p) < 0) {
        r = NULL;
    }
    return r;
}

static int dup_opt(const char *s, char **out)
{
    *out = NULL;
    if (!s)
        return 0;
    *out = strdup(s);
    return *out ? 0 : TG_ENOMEM;
}

static int is_true(const char *s)
{
    return s && (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "yes") == 0);
}

static int load_doc(yaml_document_t *doc, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        seterr(err, err_len, "kubeconfig %s: %s", path, strerror(errno));
        return TG_EIO;
    }
    yaml_parser_t ps;
    int rc = 0;
    if (!yaml_parser_initialize(&ps)) {
        fclose(f);
        return TG_ENOMEM;
    }
    yaml_parser_set_input_file(&ps, f);
    if (!yaml_parser_load(&ps, doc)) {
        seterr(err, err_len, "kubeconfig %s: line %zu: %s", path, ps.problem_mark.line + 1,
               ps.problem ? ps.problem : "YAML error");
        rc = TG_EPARSE;
    } else if (!yaml_document_get_root_node(doc)) {
        seterr(err, err_len, "kubeconfig %s: empty file", path);
        yaml_document_delete(doc);
        rc = TG_EPARSE;
    }
    yaml_parser_delete(&ps);
    fclose(f);
    return rc;
}

static int b64_field(yaml_document_t *doc, yaml_node_t *m, const char *key, char **out,
                     size_t *n, char *err, size_t err_len)
{
    const char *s = ystr(doc, m, key);
    if (!s)
        return 0;
    int rc = tg_base64_decode(s, out, n);
    if (rc == TG_EPARSE)
        seterr(err, err_len, "kubeconfig: %s is not valid base64", key);
    return rc;
}

int tg_kubeconfig_load(const char *path, const char *context, struct tg_kconf *out,
                       char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    char defpath[4096];
    if (!path || !*path) {
        const char *env = getenv("KUBECONFIG");
        if (env && *env) {
            /* Only the first file of a list is read. */
            snprintf(defpath, sizeof defpath, "%.*s", (int)strcspn(env, ":"), env);
        } else {
            const char *home = getenv("HOME");
            snprintf(defpath, sizeof defpath, "%s/.kube/config", home ? home : "");
        }
        path = defpath;
    }
    yaml_document_t doc;
    int rc = load_doc(&doc, path, err, err_len);
    if (rc)
        return rc;
    char *dir = strdup(path);
    if (!dir) {
        rc = TG_ENOMEM;
        goto fail;
    }
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");

    yaml_node_t *root = yaml_document_get_root_node(&doc);
    const char *ctxname = context && *context ? context : ystr(&doc, root, "current-context");
    yaml_node_t *ctx = named(&doc, root, "contexts", "context", ctxname);
    if (!ctx) {
        seterr(err, err_len, "kubeconfig %s: context \"%s\" not found", path,
               ctxname ? ctxname : "(no current-context)");
        rc = TG_ENOENT;
        goto fail;
    }
    const char *cname = ystr(&doc, ctx, "cluster"), *uname = ystr(&doc, ctx, "user");
    yaml_node_t *cl = named(&doc, root, "clusters", "cluster", cname);
    if (!cl || !ystr(&doc, cl, "server")) {
        seterr(err, err_len, "kubeconfig %s: cluster \"%s\" not found or has no server", path,
               cname ? cname : "");
        rc = TG_ENOENT;
        goto fail;
    }
    yaml_node_t *us = named(&doc, root, "users", "user", uname);
    if (uname && *uname && !us) {
        /* An empty user entry ("user: {}") is a valid anonymous user. */
        yaml_node_t *seq = ymap_get(&doc, root, "users");
        int found = 0;
        if (seq && seq->type == YAML_SEQUENCE_NODE)
            for (yaml_node_item_t *it = seq->data.sequence.items.start;
                 it < seq->data.sequence.items.top; it++) {
                const char *n = ystr(&doc, yaml_document_get_node(&doc, *it), "name");
                found |= n && strcmp(n, uname) == 0;
            }
        if (!found) {
            seterr(err, err_len, "kubeconfig %s: user \"%s\" not found", path, uname);
            rc = TG_ENOENT;
            goto fail;
        }
    }
    if (us && (ymap_get(&doc, us, "exec") || ymap_get(&doc, us, "auth-provider"))) {
        seterr(err, err_len, "kubeconfig %s: user \"%s\": exec/auth-provider credentials are "
               "not supported; use a token, tokenFile or client certificate", path, uname);
        rc = TG_ENOTSUP;
        goto fail;
    }

    char *server = NULL;
    if ((rc = dup_opt(ystr(&doc, cl, "server"), &server)))
        goto fail;
    size_t sl = strlen(server);
    while (sl && server[sl - 1] == '/')
        server[--sl] = 0;
    out->server = server;
    out->insecure = is_true(ystr(&doc, cl, "insecure-skip-tls-verify"));
    out->ca_file = resolve(dir, ystr(&doc, cl, "certificate-authority"));
    if ((rc = b64_field(&doc, cl, "certificate-authority-data", &out->ca_data, &out->ca_len,
                        err, err_len)))
        goto fail;
    if (us) {
        out->cert_file = resolve(dir, ystr(&doc, us, "client-certificate"));
        out->key_file = resolve(dir, ystr(&doc, us, "client-key"));
        out->token_file = resolve(dir, ystr(&doc, us, "tokenFile"));
        if ((rc = b64_field(&doc, us, "client-certificate-data", &out->cert_data,
                            &out->cert_len, err, err_len)) ||
            (rc = b64_field(&doc, us, "client-key-data", &out->key_data, &out->key_len, err,
                            err_len)) ||
            (rc = dup_opt(ystr(&doc, us, "token"), &out->token)))
            goto fail;
    }
    const char *ns = ystr(&doc, ctx, "namespace");
    if ((rc = dup_opt(ns && *ns ? ns : "default", &out->ns)) ||
        (rc = dup_opt(ctxname, &out->context)))
        goto fail;
    free(dir);
    yaml_document_delete(&doc);
    return 0;
fail:
    if (rc == TG_ENOMEM)
        seterr(err, err_len, "kubeconfig: out of memory");
    free(dir);
    yaml_document_delete(&doc);
    tg_kconf_free(out);
    return rc;
}

int tg_kubeconfig_incluster(const char *root, struct tg_kconf *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (err_len)
        err[0] = 0;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return TG_ENOENT;
    if (!root)
        root = SA_ROOT;
    int v6 = strchr(host, ':') != NULL;
    /* asprintf leaves its pointer undefined on failure: NULL it at once */
    if (asprintf(&out->server, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0)
        out->server = NULL;
    if (asprintf(&out->ca_file, "%s/ca.crt", root) < 0)
        out->ca_file = NULL;
    if (asprintf(&out->token_file, "%s/token", root) < 0)
        out->token_file = NULL;
    if (!out->server || !out->ca_file || !out->token_file)
        goto fail;
    /* the files are read later, at the first request: a pod without them
     * would otherwise fail on TLS or authentication with no word on why */
    const char *need[2] = {out->token_file, out->ca_file};
    for (int i = 0; i < 2; i++) {
        if (access(need[i], R_OK) != 0) {
            int e = errno;
            if (err_len)
                snprintf(err, err_len, "in a cluster (KUBERNETES_SERVICE_HOST=%s) but the service "
                         "account's %s %s cannot be read: %s (is automountServiceAccountToken false? "
                         "mount a token or give --kubeconfig)", host, i ? "CA" : "token", need[i],
                         strerror(e));
            tg_kconf_free(out);
            return TG_EIO;
        }
    }
    FILE *f;
    char nsbuf[256] = "default";
    char *nspath = NULL;
    if (asprintf(&nspath, "%s/namespace", root) >= 0) {
        if ((f = fopen(nspath, "r"))) {
            if (!fgets(nsbuf, sizeof nsbuf, f))
                strcpy(nsbuf, "default");
            nsbuf[strcspn(nsbuf, "\r\n")] = 0;
            fclose(f);
        }
        free(nspath);
    }
    if (!(out->ns = strdup(nsbuf)))
        goto fail;
    return 0;
fail:
    tg_kconf_free(out);
    return TG_ENOMEM;
}

int tg_kconf_check(const struct tg_kconf *c, int allow_http, char *err, size_t err_len)
{
    const char *where = c->context ? c->context : "in-cluster";
    if (!strncasecmp(c->server, "http://", 7)) {
        if (!allow_http) {
            seterr(err, err_len, "API server %s (context %s) is plain http://: no TLS, the "
                   "credentials would travel in clear; use https://, or --allow-insecure-http "
                   "for a test server", c->server, where);
            return TG_EINVAL;
        }
        tg_warn("kubeconfig", "API server %s is plain http:// (--allow-insecure-http): no TLS, "
                "credentials are sent in clear", c->server);
        return 0;
    }
    if (strncasecmp(c->server, "https://", 8)) {
        seterr(err, err_len, "API server %s (context %s): want an https:// URL", c->server, where);
        return TG_EINVAL;
    }
    if (c->insecure)
        tg_warn("kubeconfig", "context %s: insecure-skip-tls-verify is set: the certificate of "
                "%s is not verified, so anyone on the path can impersonate the API server",
                where, c->server);
    return 0;
}

void tg_kconf_free(struct tg_kconf *c)
{
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->cert_file);
    free(c->key_file);
    free(c->cert_data);
    free(c->key_data);
    free(c->token);
    free(c->token_file);
    free(c->ns);
    free(c->context);
    memset(c, 0, sizeof *c);
}
