package apptest

import (
	"os"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

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
// profile must be aws or vpc-cni, whatever l.AWSProvider says). It sets the process's AWS environment
// (upstreamaws.SetProcessEnv), so a test package uses it for one lab.
func ServeUpstream(env *cptest.Env, l sim.Lab) (*Lab, *Upstream, error) {
	caCert, caKey, err := env.CP.CA()
	if err != nil {
		return nil, nil, err
	}
	tw, err := upstreamaws.StartTripwire()
	if err != nil {
		return nil, nil, err
	}
	if err := upstreamaws.SetProcessEnv(tw.URL(), awsapi.DefaultAccessKeyID, awsapi.DefaultSecretAccessKey); err != nil {
		tw.Close()
		return nil, nil, err
	}
	// The provider's cloud config files go where the binary writes them,
	// the data dir.
	dir, err := os.MkdirTemp(env.DataDir, "aws-")
	if err != nil {
		tw.Close()
		return nil, nil, err
	}
	cfg := sim.Served(l, sim.Embedded{StaticPods: env.CP.StaticPods(), CACertPEM: caCert, CAKeyPEM: caKey})
	cfg.ClusterCIDR = env.CP.ClusterCIDR()
	// The AWS API serves the simulation's cloud and the CCM needs the API:
	// it is up before the simulation runs (start's hook).
	var (
		up  upstreamaws.Config
		srv *awsapi.Server
	)
	cfg.Upstream = func(caller string, client kubernetes.Interface, f informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
		return upstreamaws.New(up, caller, client, f, stop)
	}
	cfg.AWSAPI = func() string { return up.Endpoint }
	lab, err := start(env, cfg, func(s *sim.Sim) error {
		var err error
		if srv, err = awsapi.Listen(awsapi.ServerConfig{Handler: awsapi.Config{Cloud: s.Cloud}}); err != nil {
			return err
		}
		go func() { _ = srv.Serve(env.Ctx) }()
		n := s.Cloud.AWSNetworkInfo()
		cc := s.Cloud.Config()
		up = upstreamaws.Config{Endpoint: srv.URL(), Region: cc.Region, VPCID: n.VPCID, SubnetID: n.Subnets[0].ID,
			RouteTableID: n.RouteTableID, ClusterID: cc.ClusterID, Dir: dir, Methods: s.Cloud.Methods()}
		return nil
	})
	if err != nil {
		tw.Close()
		return nil, nil, err
	}
	go func() { <-env.Ctx.Done(); tw.Close() }()
	lab.Upstream = &Upstream{API: srv, Tripwire: tw}
	return lab, lab.Upstream, nil
}
