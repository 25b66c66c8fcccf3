package controllers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	ccmnames "k8s.io/cloud-provider/names"
	ccmoptions "k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
	cmapp "k8s.io/controller-manager/app"
	cmconfig "k8s.io/controller-manager/config"

	"github.com/ccmlab/ccmlab/lab/profile"
)

// A cloud-controller-manager's command line, as k8s.io/cloud-provider
// reads it: the lab's CCM Pod runs the embedded controllers with what its
// container's arguments say, parsed by upstream's own options.

// upstreamNames are the canonical names (k8s.io/cloud-provider/names) of
// the lab's controllers.
var upstreamNames = map[string]string{
	profile.Node:          ccmnames.CloudNodeController,
	profile.NodeLifecycle: ccmnames.CloudNodeLifecycleController,
	profile.Route:         ccmnames.NodeRouteController,
	profile.Service:       ccmnames.ServiceLBController,
}

// aliasOf is the short alias (names.CCMControllerAliases) of each lab
// controller, the notation upstream manifests write --controllers in.
func aliasOf(name string) string {
	for alias, canonical := range ccmnames.CCMControllerAliases() {
		if canonical == upstreamNames[name] {
			return alias
		}
	}
	return upstreamNames[name]
}

// allUpstream are the controllers a cloud-controller-manager has
// (app.DefaultInitFuncConstructors' keys); none is off by default.
func allUpstream() []string {
	out := make([]string, 0, len(upstreamNames))
	for _, n := range profile.AllControllers() {
		out = append(out, upstreamNames[n])
	}
	return out
}

// Args is what the lab's CCM takes from its command line.
type Args struct {
	CloudProvider string
	// Controllers maps each controller of the profile to whether this CCM
	// runs it: enabled by --controllers and, for route,
	// --configure-cloud-routes too (upstream starts no Route controller
	// without it).
	Controllers                  map[string]bool
	ClusterCIDR                  string
	ClusterName                  string
	ConcurrentServiceSyncs       int
	ConcurrentNodeSyncs          int
	UseServiceAccountCredentials bool
	LeaderElect                  bool
	LeaseName, LeaseNamespace    string
	LeaseDuration, RenewDeadline time.Duration
	RetryPeriod                  time.Duration
	Verbosity                    int
}

// ParseArgs reads a cloud-controller-manager's arguments (without the
// program name) with k8s.io/cloud-provider's options and validates them as
// upstream does; an error is what the CCM would print before exiting.
func ParseArgs(args []string, p profile.Profile) (Args, error) {
	o, err := ccmoptions.NewCloudControllerManagerOptions()
	if err != nil {
		return Args{}, err
	}
	aliases := ccmnames.CCMControllerAliases()
	// o.Flags minus --feature-gates: registering that flag closes the
	// process's global gate, and a Pod must not change the lab's gates.
	var fss cliflag.NamedFlagSets
	o.Generic.AddFlags(&fss, allUpstream(), nil, aliases)
	o.KubeCloudShared.AddFlags(fss.FlagSet("generic"))
	o.NodeController.AddFlags(fss.FlagSet(ccmnames.CloudNodeController))
	o.NodeLifecycleController.AddFlags(fss.FlagSet(ccmnames.CloudNodeLifecycleController))
	o.ServiceController.AddFlags(fss.FlagSet(ccmnames.ServiceLBController))
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Authorization.AddFlags(fss.FlagSet("authorization"))
	misc := fss.FlagSet("misc")
	misc.StringVar(&o.Master, "master", o.Master, "")
	misc.StringVar(&o.Generic.ClientConnection.Kubeconfig, "kubeconfig", o.Generic.ClientConnection.Kubeconfig, "")
	misc.DurationVar(&o.NodeStatusUpdateFrequency.Duration, "node-status-update-frequency", o.NodeStatusUpdateFrequency.Duration, "")
	fs := pflag.NewFlagSet("cloud-controller-manager", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
	var v int
	fs.IntVarP(&v, "v", "v", 0, "number for the log level verbosity")
	if err := fs.Parse(args); err != nil {
		return Args{}, err
	}
	if fs.NArg() > 0 {
		return Args{}, fmt.Errorf("unknown command %q for \"cloud-controller-manager\"", fs.Arg(0))
	}
	var errs []error
	errs = append(errs, o.Generic.Validate(allUpstream(), nil, aliases)...)
	errs = append(errs, o.KubeCloudShared.Validate()...)
	errs = append(errs, o.ServiceController.Validate()...)
	if o.KubeCloudShared.CloudProvider.Name == "" {
		errs = append(errs, errors.New("--cloud-provider cannot be empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return Args{}, err
	}
	var generic cmconfig.GenericControllerManagerConfiguration
	if err := o.Generic.ApplyTo(&generic, allUpstream(), nil, aliases); err != nil {
		return Args{}, err
	}
	le := generic.LeaderElection
	a := Args{
		CloudProvider:                o.KubeCloudShared.CloudProvider.Name,
		Controllers:                  map[string]bool{},
		ClusterCIDR:                  o.KubeCloudShared.ClusterCIDR,
		ClusterName:                  o.KubeCloudShared.ClusterName,
		ConcurrentServiceSyncs:       int(o.ServiceController.ConcurrentServiceSyncs),
		ConcurrentNodeSyncs:          int(o.NodeController.ConcurrentNodeSyncs),
		UseServiceAccountCredentials: o.KubeCloudShared.UseServiceAccountCredentials,
		LeaderElect:                  le.LeaderElect,
		LeaseName:                    le.ResourceName,
		LeaseNamespace:               le.ResourceNamespace,
		LeaseDuration:                le.LeaseDuration.Duration,
		RenewDeadline:                le.RenewDeadline.Duration,
		RetryPeriod:                  le.RetryPeriod.Duration,
		Verbosity:                    v,
	}
	for _, n := range p.Controllers {
		on := cmapp.IsControllerEnabled(upstreamNames[n], sets.NewString(), generic.Controllers)
		if n == profile.Route {
			on = on && o.KubeCloudShared.ConfigureCloudRoutes
		}
		a.Controllers[n] = on
	}
	return a, nil
}

// ControllersFlag writes which of p's controllers are on in upstream
// notation: "*" for all, "-alias" for each one off ("*,-service").
func ControllersFlag(p profile.Profile, on map[string]bool) string {
	parts := []string{"*"}
	for _, c := range p.Controllers {
		if !on[c] {
			parts = append(parts, "-"+aliasOf(c))
		}
	}
	return strings.Join(parts, ",")
}

// SwitchArgs returns args with controller name switched on or off: the
// --controllers flag rewritten (added when missing), and for the Route
// controller switched on, --configure-cloud-routes=true as well.
func SwitchArgs(args []string, p profile.Profile, name string, on bool) ([]string, error) {
	cur, err := ParseArgs(args, p)
	if err != nil {
		return nil, fmt.Errorf("the CCM's current arguments: %w", err)
	}
	want := cur.Controllers
	want[name] = on
	flag := "--controllers=" + ControllersFlag(p, want)
	out := make([]string, 0, len(args)+1)
	replaced := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--controllers" && i+1 < len(args):
			i++ // its value
			fallthrough
		case strings.HasPrefix(a, "--controllers="):
			if !replaced {
				out = append(out, flag)
				replaced = true
			}
			continue
		case name == profile.Route && on && (a == "--configure-cloud-routes=false" || a == "--configure-cloud-routes=0"):
			a = "--configure-cloud-routes=true"
		}
		out = append(out, a)
	}
	if !replaced {
		out = append(out, flag)
	}
	return out, nil
}

// Enabled lists the controllers on in a, in profile order.
func (a Args) Enabled(p profile.Profile) []string {
	var out []string
	for _, c := range p.Controllers {
		if a.Controllers[c] {
			out = append(out, c)
		}
	}
	return slices.Clip(out)
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
