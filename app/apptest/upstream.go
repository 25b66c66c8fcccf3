package apptest

import (
	"errors"
	"os"
	"time"

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
	// The AWS API serves the simulation's cloud, and the controllers need
	// the API: their factory waits until it is up, as app's does.
	var up upstreamaws.Config
	ready := make(chan struct{})
	// The provider's cloud config files go where the binary writes them,
	// the data dir.
	dir, err := os.MkdirTemp(env.DataDir, "aws-")
	if err != nil {
		tw.Close()
		return nil, nil, err
	}
	cfg := sim.Served(l, sim.Embedded{StaticPods: env.CP.StaticPods(), CACertPEM: caCert, CAKeyPEM: caKey})
	cfg.ClusterCIDR = env.CP.ClusterCIDR()
	cfg.Upstream = func(caller string, client kubernetes.Interface, f informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
		select {
		case <-ready:
		case <-time.After(time.Minute):
			return nil, errors.New("apptest: the AWS API did not start")
		}
		return upstreamaws.New(up, caller, client, f, stop)
	}
	lab, err := Start(env, cfg)
	if err != nil {
		tw.Close()
		return nil, nil, err
	}
	srv, err := awsapi.Listen(awsapi.ServerConfig{Handler: awsapi.Config{Cloud: lab.Cloud}})
	if err != nil {
		tw.Close()
		return nil, nil, err
	}
	go func() { _ = srv.Serve(env.Ctx) }()
	go func() { <-env.Ctx.Done(); tw.Close() }()
	n := lab.Cloud.AWSNetworkInfo()
	cc := lab.Cloud.Config()
	up = upstreamaws.Config{Endpoint: srv.URL(), Region: cc.Region, VPCID: n.VPCID, SubnetID: n.Subnets[0].ID,
		RouteTableID: n.RouteTableID, ClusterID: cc.ClusterID, Dir: dir}
	close(ready)
	lab.Upstream = &Upstream{API: srv, Tripwire: tw}
	return lab, lab.Upstream, nil
}
