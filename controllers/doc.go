// Package controllers is ccmlab's embedded cloud-controller-manager (CCM).
//
// It has two halves:
//
//   - package provider: a cloudprovider.Interface over the simulated cloud,
//     what a real cloud's CCM plugs into the shared controllers.
//
//   - Manager, which runs the real controllers of k8s.io/cloud-provider
//     v0.37.2 (node, nodelifecycle, route, service). Each controller gets its own client, informer factory and context, so
//     switching one off stops it completely (no watch, no API request, no
//     cloud call afterwards) and switching it on starts a fresh instance,
//     exactly as if a CCM process had been restarted with that controller.
//
// The upstream controllers are used unmodified. Where their timing is fixed
// by constants (the Service controller's 5 s minimum retry delay and its 30 s
// / 100 s resyncs) the lab lives with it; what the upstream code exposes
// (node status frequency, node monitor period, route reconcile period,
// worker counts) is set short in Tuning so flows are visible in seconds.
//
// The lbc add-on is the real AWS Load Balancer Controller (package awslbc),
// which the lab runs in the cluster as its Deployment; the manager only
// switches it (addons.go), one controller per job.
package controllers
