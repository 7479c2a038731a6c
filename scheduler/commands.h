/* The subcommands of the topogang binary; main.c dispatches argv to them.
 * Each returns the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef TG_SCHEDULER_COMMANDS_H
#define TG_SCHEDULER_COMMANDS_H

int tg_cmd_simulate(int argc, char **argv);   /* scheduler/simulate.c */
int tg_cmd_scheduler(int argc, char **argv);  /* scheduler/daemon.c */
int tg_cmd_agent(int argc, char **argv);      /* agent/agent.c */
int tg_cmd_watch(int argc, char **argv);      /* informer/watch_cmd.c */

#endif
