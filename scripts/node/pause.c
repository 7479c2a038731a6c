/* The pod sandbox's process for the node tier (scripts/node-up): holds the
 * pod's namespaces, reaps orphans, exits on SIGINT/SIGTERM. Built static by
 * node-up and packed as the image topogang.local/pause:1, so no registry is
 * needed. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int main(void)
{
    struct sigaction term = {.sa_handler = on_term}, child = {.sa_handler = on_child};
    sigaction(SIGINT, &term, NULL);
    sigaction(SIGTERM, &term, NULL);
    sigaction(SIGCHLD, &child, NULL);
    for (;;)
        pause();
}
