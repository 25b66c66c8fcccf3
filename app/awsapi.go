package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// AWS providers of the CCM (--aws-provider); sim holds the default.
const (
	AWSProviderLab      = sim.AWSProviderLab      // the lab's own provider (controllers/provider)
	AWSProviderUpstream = sim.AWSProviderUpstream // k8s.io/cloud-provider-aws over the lab's AWS API
)

// startAWSAPI serves the simulated cloud in AWS's wire protocol on a
// loopback port, so the stock AWS CLI (and the upstream AWS provider) can
// read it, and writes <data-dir>/aws.env with the endpoint and the lab's
// credentials. With the upstream provider it also fills up, which the
// controllers read when they start (after this).
func (a *App) startAWSAPI(gctx context.Context, g *errgroup.Group, c *cloud.Cloud, up *upstreamaws.Config) (*awsapi.Server, error) {
	env := filepath.Join(a.dataDir, "aws.env")
	srv, err := awsapi.Listen(awsapi.ServerConfig{
		Handler: awsapi.Config{Cloud: c, Logger: a.cfg.Logger.With("component", "awsapi")},
		Listen:  a.cfg.AWSListen,
		EnvPath: env,
	})
	if err != nil {
		return nil, err
	}
	sim.Go(gctx, g, "aws api", srv.Serve)
	a.cfg.Say(fmt.Sprintf("  AWS API on %s (. %s, then: aws ec2 describe-instances)", srv.URL(), env))
	if up != nil {
		n := c.AWSNetworkInfo()
		cc := c.Config()
		*up = upstreamaws.Config{
			Endpoint: srv.URL(), Region: cc.Region, VPCID: n.VPCID, SubnetID: n.Subnets[0].ID,
			RouteTableID: n.RouteTableID, ClusterID: cc.ClusterID, Dir: a.dataDir, Methods: c.Methods(),
		}
	}
	return srv, nil
}

// upstreamFactory is controllers.Config.Upstream for --aws-provider
// upstream: it arms the tripwire and the SDK's environment once, and
// builds each controller's provider from up, which startAWSAPI fills
// before any controller starts.
func (a *App) upstreamFactory(up *upstreamaws.Config) (func(string, kubernetes.Interface, informers.SharedInformerFactory, <-chan struct{}) (cloudprovider.Interface, error), error) {
	tw, err := upstreamaws.StartTripwire()
	if err != nil {
		return nil, err
	}
	if err := upstreamaws.SetProcessEnv(tw.URL(), awsapi.DefaultAccessKeyID, awsapi.DefaultSecretAccessKey); err != nil {
		tw.Close()
		return nil, err
	}
	a.tripwire = tw
	return func(caller string, client kubernetes.Interface, factory informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
		if up.Endpoint == "" {
			return nil, errors.New("the lab's AWS API is not serving yet")
		}
		return upstreamaws.New(*up, caller, client, factory, stop)
	}, nil
}

// TripwireHits lists AWS requests that missed the lab's endpoint (nil
// without the upstream provider): any at all is a bug.
func (a *App) TripwireHits() []string {
	if a.tripwire == nil {
		return nil
	}
	return a.tripwire.Hits()
}
