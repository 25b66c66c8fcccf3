package apptest

import (
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// Upstream is the AWS side of a lab whose CCM runs the upstream provider
// (k8s.io/cloud-provider-aws), as `ccmlab serve --aws-provider=upstream`
// builds it: the lab's AWS API on loopback and the tripwire that
// AWS_ENDPOINT_URL points at.
type Upstream struct {
	API      *awsapi.Server
	Tripwire *upstreamaws.Tripwire
}

// ServeUpstream is Serve with the CCM on the upstream AWS provider (l's
// profile must be aws or vpc-cni, whatever l.AWSProvider says). It sets
// the process's AWS environment (upstreamaws.SetProcessEnv, through
// sim.Start as in the binary), so a test package uses it for one lab.
func ServeUpstream(env *cptest.Env, l sim.Lab) (*Lab, *Upstream, error) {
	cfg, err := served(env, l)
	if err != nil {
		return nil, nil, err
	}
	lab, err := start(env, cfg, sim.AWSProviderUpstream)
	if err != nil {
		return nil, nil, err
	}
	return lab, lab.Upstream, nil
}
