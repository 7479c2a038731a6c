/* Placeholder until the daemon lands (issue 5). */
#include <stdio.h>
#include "scheduler/commands.h"

int tg_cmd_scheduler(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "topogang scheduler: not built yet (see issue 5); use 'topogang simulate'\n");
    return 1;
}
