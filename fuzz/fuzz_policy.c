/* The policy parser (config/policy.h) on any bytes as config.yaml. A policy
 * that parses must survive its own dump: tg_policy_dump's YAML parses back to
 * a policy whose dump is the same text. A refused one must say why, each line
 * naming the origin. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "config/policy.h"
#include "util/err.h"
#include "util/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_log_set_level(TG_LOG_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tg_policy p, q;
    struct tg_sb errs = {0}, d1 = {0}, d2 = {0};
    int rc = tg_policy_parse((const char *)data, size, "fuzz.yaml", &p, &errs);
    fz_check(rc == 0 || rc == TG_EPARSE, "tg_policy_parse returned %d", rc);
    if (rc == 0) {
        tg_policy_dump(&p, &d1);
        rc = tg_policy_parse(d1.s, d1.len, "dump", &q, &errs);
        fz_check(rc == 0, "the dump of a good policy is refused:\n%s\n%s", tg_sb_str(&d1),
                 tg_sb_str(&errs));
        tg_policy_dump(&q, &d2);
        fz_check(d1.len == d2.len && !memcmp(d1.s, d2.s, d1.len), "dump changes on a round trip:\n"
                 "%s\n---\n%s", tg_sb_str(&d1), tg_sb_str(&d2));
    } else {
        const char *e = tg_sb_str(&errs);
        fz_check(*e, "refused without a reason");
        for (const char *l = e; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
            fz_check(*l == '\n' || strncmp(l, "fuzz.yaml:", 10) == 0, "error line without origin: %s", e);
    }
    tg_sb_free(&errs);
    tg_sb_free(&d1);
    tg_sb_free(&d2);
    return 0;
}
