/* topogang: one binary, several subcommands (see --help). */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "informer/informer.h"
#include "scheduler/daemon/daemon.h"
#include "scheduler/sim/simulate.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"simulate",  tg_cmd_simulate,  "place pending pods from Kubernetes YAML files, offline"},
    {"scheduler", tg_cmd_scheduler, "run the gang scheduler against an API server"},
    {"agent",     tg_cmd_agent,     "discover this node's NUMA/GPU/NIC topology and publish it"},
    {"watch",     tg_cmd_watch,     "sync caches from an API server and print what changes (debug)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: topogang <command> [options]\n\n"
               "A gang scheduler with topology-aware placement for Kubernetes GPU clusters.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'topogang <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("topogang 0.1.0\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "topogang: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
