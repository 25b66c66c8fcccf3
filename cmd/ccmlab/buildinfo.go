package main

import "runtime/debug"

// kubernetesVersion is the k8s.io/kubernetes module this binary embeds, read
// from the build information so it can never disagree with go.mod.
var kubernetesVersion = func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "unknown"
}()
