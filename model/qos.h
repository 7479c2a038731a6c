/* What the kubelet's static CPU and memory managers see in a pod: whether it
 * is of QoS class Guaranteed (they pin only those), and how many whole CPUs
 * the static CPU manager gives it exclusively. Read from the pod spec the way
 * the kubelet reads it (k8s.io/kubernetes pkg/apis/core/v1/helper/qos):
 * Guaranteed when every container and init container has cpu and memory
 * limits and any request given equals its limit (a missing request defaults
 * to the limit). Exclusive CPUs: the containers whose cpu is a whole number,
 * counted per pod like requests: the larger of the largest regular init
 * container and the app containers plus sidecars (init containers' CPUs are
 * reused by later containers; sidecars keep theirs). A pod with pod-level
 * resources (spec.resources) is treated as not pinned. */
#ifndef TG_MODEL_QOS_H
#define TG_MODEL_QOS_H

#include <stdint.h>

struct cJSON;

/* spec: the pod's spec object (NULL: BestEffort). Anything malformed makes
 * the pod not Guaranteed (the decoder reports the bad field itself). */
void tg_pod_qos(const struct cJSON *spec, uint8_t *guaranteed, uint16_t *excl_cpus);

#endif
