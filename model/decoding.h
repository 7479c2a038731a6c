/* What model/'s object decoders share (internal: only model/'s .c files include it;
 * the public decoders are in objects.h, workload.h, queues.h). A decoding
 * pass names its object once (`what`), keeps the first spec problem as
 * "field: why" for the object's owner, and reports each one through the
 * caller's struct tg_diag with the object and the field. */
#ifndef TG_MODEL_DECODING_H
#define TG_MODEL_DECODING_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "model/objects.h"

struct tg__dec {
    struct tg_diag *d;
    char what[400];                     /* the object, as messages name it */
    char problem[512];                  /* the first spec problem ("field: why"); "" none */
    const char *note;                   /* added to each warning (NULL: none) */
};

/* Child k of o when o is a map, else NULL. */
const cJSON *tg__get(const cJSON *o, const char *k);
/* Child k of o when it is a string, else NULL. */
const char *tg__str(const cJSON *o, const char *k);
/* metadata.generation of metadata md (the API server moves it on every spec
 * change, never on a status write through the status subresource): 0 when
 * absent or not a number within int64. */
int64_t tg__generation(const cJSON *md);
/* A problem with the spec at `at`, field `field`: kept (the first) in
 * x->problem and reported as a warning (the object stays). */
void tg__problem(struct tg__dec *x, const cJSON *at, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Every key of map o must be one of known (NULL-terminated): each other is
 * a problem "path.key: unknown field". */
void tg__known_fields(struct tg__dec *x, const cJSON *o, const char *path, const char *const *known);

/* A metav1.LabelSelector o at `field` into sel (model/decode.c's decoder):
 * 0, -1 after a problem (sel may hold part: free it either way), or
 * TG_ENOMEM. */
int tg__labelsel_decode(struct tg__dec *x, const cJSON *o, const char *field,
                        struct tg_labelsel *sel);

#endif
