/* The Lease decoder (informer/api.h: tg_lease_decode) on any bytes as the
 * API server's reply to the leader elector's GET: errors are TG_EPARSE or
 * TG_ENOMEM with nothing left allocated; a decoded Lease has its
 * resourceVersion. Numbers out of int32 range must not be converted (UBSan). */
#include "fuzz/fuzz.h"

#include <string.h>

#include "informer/api.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tg_lease l;
    int rc = tg_lease_decode((const char *)data, size, &l);
    fz_check(rc == 0 || rc == TG_EPARSE || rc == TG_ENOMEM, "tg_lease_decode returned %d", rc);
    if (rc == 0) {
        fz_check(l.rv != NULL, "a Lease without resourceVersion");
        tg_lease_free(&l);
    } else {
        fz_check(!l.rv && !l.holder, "refused but allocated");
    }
    return 0;
}
