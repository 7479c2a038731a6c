/* kubeconfig loading (informer/kubeconfig.h) on any bytes: the input is
 * written to a temporary file (the API reads files only) and loaded with the
 * current context and with a named one. Loaded settings must be complete
 * (server and namespace set, data lengths matching); a refusal must be one of
 * the documented errors with a message, and leave the struct empty. */
#include "fuzz/fuzz.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "informer/kubeconfig.h"
#include "util/err.h"

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "/tmp/topogang-fuzz-kubeconfig-%ld", (long)getpid());
    return 0;
}

static void load(const char *context)
{
    static const struct tg_kconf empty;
    struct tg_kconf k;
    char err[512] = "";
    int rc = tg_kubeconfig_load(path, context, &k, err, sizeof err);
    if (rc) {
        fz_check(rc == TG_EIO || rc == TG_EPARSE || rc == TG_ENOENT || rc == TG_ENOTSUP ||
                 rc == TG_ENOMEM, "tg_kubeconfig_load returned %d", rc);
        fz_check(err[0], "refused (%d) without a message", rc);
        fz_check(!memcmp(&k, &empty, sizeof k), "refused but not left empty");
        return;
    }
    fz_check(k.server && k.ns && *k.ns, "loaded without server or namespace");
    fz_check(!k.ca_data || strlen(k.ca_data) <= k.ca_len, "ca_len");
    fz_check(!k.cert_data || strlen(k.cert_data) <= k.cert_len, "cert_len");
    fz_check(!k.key_data || strlen(k.key_data) <= k.key_len, "key_len");
    tg_kconf_free(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0])
        LLVMFuzzerInitialize(NULL, NULL);
    FILE *f = fopen(path, "wb");
    fz_check(f != NULL, "cannot write %s", path);
    fz_check(fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
    load(NULL);
    load("lab");
    unlink(path);
    return 0;
}
