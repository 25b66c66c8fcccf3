package app

import (
	"github.com/ccmlab/ccmlab/app/sim"
)

// AWS providers of the CCM (--aws-provider); sim holds the default.
const (
	AWSProviderLab      = sim.AWSProviderLab      // the lab's own provider (controllers/provider)
	AWSProviderUpstream = sim.AWSProviderUpstream // k8s.io/cloud-provider-aws over the lab's AWS API
)

// TripwireHits lists AWS requests that missed the lab's endpoint (nil
// without the upstream provider): any at all is a bug.
func (a *App) TripwireHits() []string {
	if a.tripwire == nil {
		return nil
	}
	return a.tripwire.Hits()
}
