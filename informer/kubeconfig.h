/* Connection settings for the API server: read from a kubeconfig file (the
 * current context or a named one) or from the in-cluster service account.
 *
 * A kubeconfig is YAML; every field kubectl writes for a static cluster is
 * understood: server, certificate-authority(-data), client-certificate(-data),
 * client-key(-data), token, tokenFile, insecure-skip-tls-verify (honoured only
 * when the file says true), and the context's namespace. Exec/auth-provider
 * plugins are not supported and give TG_ENOTSUP. Relative file paths are
 * resolved against the kubeconfig's directory, as kubectl does. */
#ifndef TG_INFORMER_KUBECONFIG_H
#define TG_INFORMER_KUBECONFIG_H

#include <stddef.h>

struct tg_kconf {
    char *server;          /* "https://host:port", no trailing slash */
    char *ca_file;         /* PEM file, or NULL */
    char *ca_data;         /* PEM bytes (decoded from base64), or NULL */
    size_t ca_len;
    char *cert_file, *key_file;    /* client certificate and key, or NULL */
    char *cert_data, *key_data;    /* PEM bytes, or NULL */
    size_t cert_len, key_len;
    char *token;           /* static bearer token, or NULL */
    char *token_file;      /* re-read by the client as it rotates, or NULL */
    char *ns;              /* context namespace ("default" when unset) */
    char *context;         /* the context used, or NULL (in-cluster) */
    int insecure;          /* insecure-skip-tls-verify: true in the file */
};

/* Loads path (NULL: $KUBECONFIG, then ~/.kube/config) using context (NULL:
 * current-context) into *out, which the caller releases with tg_kconf_free.
 * On failure *out is left empty and err names the problem (when err_len > 0).
 * Errors: TG_EIO (unreadable), TG_EPARSE (bad YAML/base64), TG_ENOENT (context,
 * cluster or user missing), TG_ENOTSUP (exec plugins), TG_ENOMEM. */
int tg_kubeconfig_load(const char *path, const char *context, struct tg_kconf *out,
                       char *err, size_t err_len);

/* In-cluster settings: KUBERNETES_SERVICE_HOST/PORT, the service-account
 * token file (re-read on rotation) and CA under root (NULL:
 * /var/run/secrets/kubernetes.io/serviceaccount). Errors: TG_ENOENT when not
 * in a cluster (err left empty); TG_EIO when in one but the token or the CA
 * cannot be read (err names the file and why: e.g. a pod with
 * automountServiceAccountToken: false); TG_ENOMEM. */
int tg_kubeconfig_incluster(const char *root, struct tg_kconf *out, char *err, size_t err_len);

void tg_kconf_free(struct tg_kconf *c);

/* What a command checks before it talks to c->server, once at start:
 * refuses an http:// server (no TLS: the bearer token would travel in
 * clear) unless allow_http (--allow-insecure-http: tests, a local proxy),
 * with err naming the server and the flag: TG_EINVAL; refuses a scheme other
 * than https:// and http:// (TG_EINVAL). Logs a warning for
 * insecure-skip-tls-verify (the server's certificate is not checked) and for
 * an allowed http:// server. Returns 0 when the command may go on. */
int tg_kconf_check(const struct tg_kconf *c, int allow_http, char *err, size_t err_len);

/* Decodes standard base64 (whitespace ignored) into a new NUL-terminated
 * buffer the caller frees; *n gets its length. Returns 0, TG_EPARSE, TG_ENOMEM. */
int tg_base64_decode(const char *s, char **out, size_t *n);

#endif
