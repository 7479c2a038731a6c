/* The text of TG_ERRNO_MAP; see err.h. */
#include "util/err.h"

const char *tg_strerror(int err)
{
    switch (err) {
    case 0: return "success";
#define TG__ERR_MSG(name, msg) case TG_E##name: return msg;
    TG_ERRNO_MAP(TG__ERR_MSG)
#undef TG__ERR_MSG
    default: return "unknown error";
    }
}

const char *tg_err_name(int err)
{
    switch (err) {
    case 0: return "OK";
#define TG__ERR_NAME(name, msg) case TG_E##name: return "TG_E" #name;
    TG_ERRNO_MAP(TG__ERR_NAME)
#undef TG__ERR_NAME
    default: return "TG_EUNKNOWN";
    }
}
