/* Unit tests for kubeconfig and in-cluster loading (informer/kubeconfig.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "informer/kubeconfig.h"
#include "util/err.h"

static char path[4096], dir[4096];

static const char *data(const char *f)
{
    snprintf(path, sizeof path, "%s/tests/informer/data/%s", getenv("TOPOGANG_SRC"), f);
    snprintf(dir, sizeof dir, "%s/tests/informer/data", getenv("TOPOGANG_SRC"));
    return path;
}

static void current_context_inline_data(void **s)
{
    (void)s;
    struct tg_kconf k;
    char err[256];
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-data.yaml"), NULL, &k, err, sizeof err), 0);
    assert_string_equal(k.server, "https://10.0.0.1:6443");   /* trailing slash dropped */
    assert_non_null(k.ca_data);
    assert_string_equal(k.ca_data, "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n");
    assert_int_equal(k.cert_len, 4);
    assert_memory_equal(k.cert_data, "cert", 4);
    assert_memory_equal(k.key_data, "key", 3);
    assert_null(k.token);
    assert_string_equal(k.ns, "ml");
    assert_int_equal(k.insecure, 0);
    tg_kconf_free(&k);
}

static void explicit_context_token_file(void **s)
{
    (void)s;
    struct tg_kconf k;
    char want[8192];
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-data.yaml"), "lab", &k, NULL, 0), 0);
    assert_string_equal(k.server, "https://lab.example:443");
    assert_int_equal(k.insecure, 1);
    snprintf(want, sizeof want, "%s/secrets/token", dir);   /* relative to the file */
    assert_string_equal(k.token_file, want);
    assert_string_equal(k.ns, "default");
    assert_string_equal(k.context, "lab");
    tg_kconf_free(&k);
}

static void errors_are_named(void **s)
{
    (void)s;
    struct tg_kconf k;
    char err[512];
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-data.yaml"), "nope", &k, err, sizeof err),
                     TG_ENOENT);
    assert_non_null(strstr(err, "context \"nope\" not found"));
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-data.yaml"), "broken", &k, err, sizeof err),
                     TG_ENOENT);
    assert_non_null(strstr(err, "cluster \"nowhere\""));
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-data.yaml"), "cloud", &k, err, sizeof err),
                     TG_ENOTSUP);
    assert_non_null(strstr(err, "exec"));
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-bad-yaml.yaml"), NULL, &k, err, sizeof err),
                     TG_EPARSE);
    assert_non_null(strstr(err, "line"));
    assert_int_equal(tg_kubeconfig_load(data("does-not-exist"), NULL, &k, err, sizeof err), TG_EIO);
    assert_null(k.server);
}

static void base64(void **s)
{
    (void)s;
    char *o;
    size_t n;
    assert_int_equal(tg_base64_decode("aGVsbG8gd29ybGQ=", &o, &n), 0);
    assert_int_equal(n, 11);
    assert_string_equal(o, "hello world");
    free(o);
    assert_int_equal(tg_base64_decode("aGVs\nbG8=", &o, &n), 0);
    assert_string_equal(o, "hello");
    free(o);
    assert_int_equal(tg_base64_decode("a$b=", &o, &n), TG_EPARSE);
    assert_int_equal(tg_base64_decode("ab=c", &o, &n), TG_EPARSE);
}

static void in_cluster(void **s)
{
    (void)s;
    char root[] = "/tmp/tg-sa-XXXXXX";
    assert_non_null(mkdtemp(root));
    char f[512];
    snprintf(f, sizeof f, "%s/namespace", root);
    FILE *fp = fopen(f, "w");
    fputs("scheduling\n", fp);
    fclose(fp);
    struct tg_kconf k;
    char err[512];
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(tg_kubeconfig_incluster(root, &k, err, sizeof err), TG_ENOENT);
    assert_string_equal(err, "");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    /* in a cluster without the service account's files: named, not used */
    assert_int_equal(tg_kubeconfig_incluster(root, &k, err, sizeof err), TG_EIO);
    assert_non_null(strstr(err, "token"));
    assert_non_null(strstr(err, root));
    assert_non_null(strstr(err, "No such file"));
    assert_null(k.server);
    snprintf(f, sizeof f, "%s/token", root);
    fp = fopen(f, "w");
    fputs("t0ken\n", fp);
    fclose(fp);
    assert_int_equal(tg_kubeconfig_incluster(root, &k, err, sizeof err), TG_EIO);
    assert_non_null(strstr(err, "CA"));
    snprintf(f, sizeof f, "%s/ca.crt", root);
    fp = fopen(f, "w");
    fputs("not read here\n", fp);
    fclose(fp);
    assert_int_equal(tg_kubeconfig_incluster(root, &k, err, sizeof err), 0);
    assert_string_equal(k.server, "https://10.96.0.1:443");
    snprintf(f, sizeof f, "%s/token", root);
    assert_string_equal(k.token_file, f);
    snprintf(f, sizeof f, "%s/ca.crt", root);
    assert_string_equal(k.ca_file, f);
    assert_string_equal(k.ns, "scheduling");
    tg_kconf_free(&k);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(tg_kubeconfig_incluster(root, &k, err, sizeof err), 0);
    assert_string_equal(k.server, "https://[fd00::1]:443");
    tg_kconf_free(&k);
    const char *files[] = {"namespace", "token", "ca.crt"};
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s/%s", root, files[i]);
        unlink(f);
    }
    rmdir(root);
}

/* Runs tg_kconf_check with stderr (the log) captured into log[]. */
static int check_logged(const struct tg_kconf *k, int allow_http, char *err, size_t errlen,
                        char *log, size_t loglen)
{
    char tmp[] = "/tmp/tg-kconf-log-XXXXXX";
    int fd = mkstemp(tmp), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    int rc = tg_kconf_check(k, allow_http, err, errlen);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, log, loglen - 1, 0);
    log[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(tmp);
    return rc;
}

/* An http:// server is refused unless allowed; insecure-skip-tls-verify is
 * accepted with a warning in the log. */
static void insecure_servers(void **s)
{
    (void)s;
    char err[512] = "", log[2048];
    struct tg_kconf k = {.server = "http://127.0.0.1:8001", .context = "proxy"};
    assert_int_equal(check_logged(&k, 0, err, sizeof err, log, sizeof log), TG_EINVAL);
    assert_non_null(strstr(err, "http://127.0.0.1:8001"));
    assert_non_null(strstr(err, "--allow-insecure-http"));
    assert_int_equal(check_logged(&k, 1, err, sizeof err, log, sizeof log), 0);
    assert_non_null(strstr(log, "level=warn"));
    assert_non_null(strstr(log, "plain http://"));
    k.server = "ftp://example";
    assert_int_equal(check_logged(&k, 1, err, sizeof err, log, sizeof log), TG_EINVAL);
    k.server = "https://10.0.0.1:6443";
    assert_int_equal(check_logged(&k, 0, err, sizeof err, log, sizeof log), 0);
    assert_string_equal(log, "");                       /* nothing to say */
    k.insecure = 1;
    assert_int_equal(check_logged(&k, 0, err, sizeof err, log, sizeof log), 0);
    assert_non_null(strstr(log, "level=warn"));
    assert_non_null(strstr(log, "insecure-skip-tls-verify"));
    assert_non_null(strstr(log, "https://10.0.0.1:6443"));
    /* and from a file: the flag is read, then warned about */
    struct tg_kconf f;
    assert_int_equal(tg_kubeconfig_load(data("kubeconfig-data.yaml"), "lab", &f, err, sizeof err), 0);
    assert_int_equal(f.insecure, 1);
    assert_int_equal(check_logged(&f, 0, err, sizeof err, log, sizeof log), 0);
    assert_non_null(strstr(log, "context lab: insecure-skip-tls-verify"));
    tg_kconf_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(current_context_inline_data),
        cmocka_unit_test(explicit_context_token_file),
        cmocka_unit_test(errors_are_named),
        cmocka_unit_test(base64),
        cmocka_unit_test(in_cluster),
        cmocka_unit_test(insecure_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
