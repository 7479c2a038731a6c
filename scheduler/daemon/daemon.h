/* `topogang scheduler`: the daemon. It feeds the informer's view of the
 * cluster (Nodes, Pods, PodGroups, PriorityClasses, PodDisruptionBudgets,
 * the policy ConfigMap) to the scheduling engine (scheduler/engine.h, the
 * same flow `simulate` runs), and carries out what the engine decides:
 * binds every member of a placed gang concurrently and rolls back what
 * cannot be completed, evicts the victims of a preemption as kube-scheduler
 * does, and reports through PodGroup status, Events, logs and metrics.
 *
 * Pieces, one job per file (scheduler/daemon/internal.h shows the flow):
 * main.c (options, wiring, the tick, shutdown), handlers.c (informer ->
 * engine), binder.c (Binding requests, retries, rollback, assumptions),
 * evict.c (preemption: DisruptionTarget, delete, Events, nominatedNodeName),
 * report.c (PodGroup status, Events), leader.c (Lease election), metrics.c
 * (/metrics, /healthz, /readyz). */
#ifndef TG_DAEMON_DAEMON_H
#define TG_DAEMON_DAEMON_H

/* `topogang scheduler ...`: returns the exit code (0 ok, 1 failure, 2 usage). */
int tg_cmd_scheduler(int argc, char **argv);

#endif
