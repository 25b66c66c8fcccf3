// Package provider is ccmlab's cloud provider: a cloudprovider.Interface
// (k8s.io/cloud-provider) over the simulated cloud in lab/cloud. It is what
// a real cloud's CCM plugs into the shared controllers: InstancesV2 answers
// "which VM is this Node?", LoadBalancer builds an AWS-style load balancer
// for a Service, Routes keeps the route table in step with each Node's
// podCIDR.
//
// Every cloud call carries the calling controller's name (For, then
// cloud.WithCaller), so the call log shows who asked for what, and cloud
// errors (AccessDenied, Throttling, InternalFailure) come back as errors
// with their message intact, so the real controllers emit their real
// failure events. The on/off Manager in package controllers hands each
// controller instance a view bound to that instance's lifetime and Gate,
// so a switched-off controller makes no further cloud call.
//
// providerIDs are spelled by the profile (profile.Profile.ProviderID), so
// the provider and the exercises that check them cannot disagree.
package provider
