#!/usr/bin/env bash
# e2e: the Helm chart (charts/topogang) installed with `helm template |
# kubectl apply -f -` and put through every check of the kustomize install
# (test_manifests.sh with TG_INSTALL=helm; see there).
TG_INSTALL=helm exec bash "$(dirname "$0")/test_manifests.sh" "$@"
