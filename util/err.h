/* Error codes for every fallible topogang function.
 *
 * A function that can fail returns int: 0 on success or a negative TG_E* code.
 * TG_ERRNO_MAP is the single table: the enum, tg_strerror() and tg_err_name()
 * are generated from it so they never drift (the libuv UV_ERRNO_MAP pattern).
 * A scheduling verdict ("does not fit") is not an error: see plugins/plugin.h. */
#ifndef TG_UTIL_ERR_H
#define TG_UTIL_ERR_H

#define TG_ERRNO_MAP(X)                                          \
    X(NOMEM,    "out of memory")                                 \
    X(INVAL,    "invalid argument")                              \
    X(PARSE,    "malformed input")                               \
    X(RANGE,    "value out of range")                            \
    X(NOENT,    "not found")                                     \
    X(EXIST,    "already exists")                                \
    X(IO,       "input/output error")                            \
    X(HTTP,     "HTTP error")                                    \
    X(TLS,      "TLS verification failed")                       \
    X(GONE,     "resource version too old (410 Gone)")          \
    X(CONFLICT, "conflict (409)")                                \
    X(TIMEOUT,  "timed out")                                     \
    X(AGAIN,    "temporarily unavailable, try again")            \
    X(CANCELED, "canceled")                                      \
    X(NOTSUP,   "not supported")                                 \
    X(FENCED,   "not sent: this replica does not hold the lease")

enum tg_err {
    TG__EBASE = -1000,
#define TG__ERR_ENUM(name, msg) TG_E##name,
    TG_ERRNO_MAP(TG__ERR_ENUM)
#undef TG__ERR_ENUM
    TG__ELAST
};

/* Human text for an error code (0 gives "success"); never NULL. */
const char *tg_strerror(int err);
/* Symbolic name ("TG_ENOMEM"); never NULL. */
const char *tg_err_name(int err);

#endif
