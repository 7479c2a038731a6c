/* Running a helper program (nvidia-smi) with a deadline: its standard
 * output captured, its standard error discarded, and, when it has not
 * finished in time, it and every process it started killed. A hung driver
 * query must not hang the agent's publishing loop. */
#ifndef TG_AGENT_EXEC_H
#define TG_AGENT_EXEC_H

#include <stddef.h>

/* Runs argv (argv[0] looked up on PATH) with stdin from /dev/null and waits
 * at most timeout_ms for it to exit. Its stdout goes to buf (at most cap
 * bytes are kept, the rest read and dropped); *n gets the length kept.
 * Returns 0 when it exited with status 0; TG_ETIMEOUT when it was killed at
 * the deadline (SIGKILL to its process group); TG_EIO when it could not be
 * started, exited non-zero or died of a signal (err says which, when given);
 * TG_ENOMEM. */
int tg_exec_capture(char *const argv[], unsigned timeout_ms, char *buf, size_t cap, size_t *n,
                    char *err, size_t err_len);

#endif
