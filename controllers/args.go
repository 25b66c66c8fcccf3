package controllers

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
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

// Args is what the lab's CCM takes from its command line. A zero
// duration, count or rate was not given: the lab's own default
// (Tuning) applies.
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
	ConcurrentNodeStatusUpdates  int
	ConcurrentNodeLifecycleSyncs int
	NodeStatusUpdateFrequency    time.Duration
	NodeMonitorPeriod            time.Duration
	RouteReconciliationPeriod    time.Duration
	MinResyncPeriod              time.Duration
	KubeAPIQPS                   float32
	KubeAPIBurst                 int
	KubeAPIContentType           string
	UseServiceAccountCredentials bool
	LeaderElect                  bool
	LeaseName, LeaseNamespace    string
	LeaseDuration, RenewDeadline time.Duration
	RetryPeriod                  time.Duration
	Verbosity                    int
}

// ParseArgs reads a cloud-controller-manager's arguments (without the
// program name) with k8s.io/cloud-provider's options, validates them as
// upstream does, then holds every flag to the lab's rules (flagRules): a
// range for each flag the lab honours, a refusal for each it cannot. An
// error is what the CCM would print before exiting, worded as upstream's
// validation words its own.
func ParseArgs(args []string, p profile.Profile) (Args, error) {
	o, fs, groups, err := newFlagSet()
	if err != nil {
		return Args{}, err
	}
	aliases := ccmnames.CCMControllerAliases()
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
	// NodeController's and NodeLifecycleController's Validate are the lower
	// bounds of the rules of their flags (flagRules), in the same words.
	errs = append(errs, o.ServiceController.Validate()...)
	if o.KubeCloudShared.CloudProvider.Name == "" {
		errs = append(errs, errors.New("--cloud-provider cannot be empty"))
	}
	// The lab's rules, flag by flag, in the order the flags were given:
	// before anything is applied (ApplyTo would read the file of
	// --leader-migration-config, on the lab's host).
	fs.Visit(func(f *pflag.Flag) {
		rule, ok := ruleOf(f.Name, groups)
		if !ok {
			errs = append(errs, fmt.Errorf("--%s is not supported by ccmlab's cloud-controller-manager", f.Name))
			return
		}
		if rule != nil {
			if err := rule(f); err != nil {
				errs = append(errs, err)
			}
		}
	})
	le := o.Generic.LeaderElection
	errs = append(errs, leaderElectionOrder(le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration)...)
	on := map[string]bool{}
	if len(errs) == 0 {
		var generic cmconfig.GenericControllerManagerConfiguration
		if err := o.Generic.ApplyTo(&generic, allUpstream(), nil, aliases); err != nil {
			return Args{}, err
		}
		for _, n := range p.Controllers {
			enabled := cmapp.IsControllerEnabled(upstreamNames[n], sets.NewString(), generic.Controllers)
			if n == profile.Route {
				enabled = enabled && o.KubeCloudShared.ConfigureCloudRoutes
			}
			on[n] = enabled
		}
		if on[profile.Route] {
			errs = append(errs, clusterCIDRs(o.KubeCloudShared.ClusterCIDR)...)
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return Args{}, err
	}
	changed := func(name string) bool { return fs.Changed(name) }
	a := Args{
		CloudProvider:                o.KubeCloudShared.CloudProvider.Name,
		Controllers:                  on,
		ClusterCIDR:                  o.KubeCloudShared.ClusterCIDR,
		ClusterName:                  o.KubeCloudShared.ClusterName,
		ConcurrentServiceSyncs:       int(o.ServiceController.ConcurrentServiceSyncs),
		ConcurrentNodeSyncs:          int(o.NodeController.ConcurrentNodeSyncs),
		ConcurrentNodeStatusUpdates:  int(o.NodeController.ConcurrentNodeStatusUpdates),
		ConcurrentNodeLifecycleSyncs: int(o.NodeLifecycleController.ConcurrentNodeLifecycleSyncs),
		UseServiceAccountCredentials: o.KubeCloudShared.UseServiceAccountCredentials,
		LeaderElect:                  le.LeaderElect,
		LeaseName:                    le.ResourceName,
		LeaseNamespace:               le.ResourceNamespace,
		LeaseDuration:                le.LeaseDuration.Duration,
		RenewDeadline:                le.RenewDeadline.Duration,
		RetryPeriod:                  le.RetryPeriod.Duration,
		Verbosity:                    v,
	}
	// Upstream's defaults of these differ from the lab's (Tuning): only a
	// value given on the command line replaces the lab's.
	if !changed("concurrent-service-syncs") {
		a.ConcurrentServiceSyncs = 0
	}
	if !changed("concurrent-node-syncs") {
		a.ConcurrentNodeSyncs = 0
	}
	if !changed("concurrent-node-lifecycle-syncs") {
		a.ConcurrentNodeLifecycleSyncs = 0
	}
	if changed("node-status-update-frequency") {
		a.NodeStatusUpdateFrequency = o.NodeStatusUpdateFrequency.Duration
	}
	if changed("node-monitor-period") {
		a.NodeMonitorPeriod = o.NodeLifecycleController.NodeMonitorPeriod.Duration
	}
	if changed("route-reconciliation-period") {
		a.RouteReconciliationPeriod = o.KubeCloudShared.RouteReconciliationPeriod.Duration
	}
	if changed("min-resync-period") {
		a.MinResyncPeriod = o.Generic.MinResyncPeriod.Duration
	}
	if changed("kube-api-qps") {
		a.KubeAPIQPS = o.Generic.ClientConnection.QPS
	}
	if changed("kube-api-burst") {
		a.KubeAPIBurst = int(o.Generic.ClientConnection.Burst)
	}
	if changed("kube-api-content-type") {
		a.KubeAPIContentType = o.Generic.ClientConnection.ContentType
	}
	return a, nil
}

// newFlagSet is upstream's command line (o.Flags) minus --feature-gates,
// whose registration would close the process's global gate (a Pod must
// not change the lab's gates), and minus the webhook flags and the log
// flags, which the lab's CCM does not have (they are unknown flags). groups
// names the flag set of each flag whose rule is its group's (groupRules).
func newFlagSet() (*ccmoptions.CloudControllerManagerOptions, *pflag.FlagSet, map[string]string, error) {
	o, err := ccmoptions.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, nil, nil, err
	}
	var fss cliflag.NamedFlagSets
	o.Generic.AddFlags(&fss, allUpstream(), nil, ccmnames.CCMControllerAliases())
	o.KubeCloudShared.AddFlags(fss.FlagSet("generic"))
	o.NodeController.AddFlags(fss.FlagSet(ccmnames.CloudNodeController))
	o.NodeLifecycleController.AddFlags(fss.FlagSet(ccmnames.CloudNodeLifecycleController))
	o.ServiceController.AddFlags(fss.FlagSet(ccmnames.ServiceLBController))
	o.SecureServing.AddFlags(fss.FlagSet(groupServing))
	o.Authentication.AddFlags(fss.FlagSet(groupAuthentication))
	o.Authorization.AddFlags(fss.FlagSet(groupAuthorization))
	misc := fss.FlagSet("misc")
	misc.StringVar(&o.Master, "master", o.Master, "")
	misc.StringVar(&o.Generic.ClientConnection.Kubeconfig, "kubeconfig", o.Generic.ClientConnection.Kubeconfig, "")
	misc.DurationVar(&o.NodeStatusUpdateFrequency.Duration, "node-status-update-frequency", o.NodeStatusUpdateFrequency.Duration, "")
	fs := pflag.NewFlagSet("cloud-controller-manager", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	groups := map[string]string{}
	for _, name := range fss.Order {
		set := fss.FlagSets[name]
		fs.AddFlagSet(set)
		if _, ok := groupRules[name]; ok {
			set.VisitAll(func(f *pflag.Flag) { groups[f.Name] = name })
		}
	}
	return o, fs, groups, nil
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

// tuning is base with what a's command line gave: a flag not given keeps
// the lab's value. ParseArgs has held every value to its range.
func (a Args) tuning(base Tuning) Tuning {
	t := base
	t.ServiceWorkers = cmp.Or(a.ConcurrentServiceSyncs, t.ServiceWorkers)
	t.NodeWorkers = cmp.Or(a.ConcurrentNodeSyncs, t.NodeWorkers)
	// Upstream: node status updates take --concurrent-node-status-updates,
	// or when it is 0 or not given, --concurrent-node-syncs
	// (options/nodecontroller.go ApplyTo).
	t.NodeStatusWorkers = cmp.Or(a.ConcurrentNodeStatusUpdates, a.ConcurrentNodeSyncs, t.NodeStatusWorkers)
	t.NodeLifecycleWorkers = cmp.Or(a.ConcurrentNodeLifecycleSyncs, t.NodeLifecycleWorkers)
	t.NodeStatusUpdateFrequency = cmp.Or(a.NodeStatusUpdateFrequency, t.NodeStatusUpdateFrequency)
	t.NodeMonitorPeriod = cmp.Or(a.NodeMonitorPeriod, t.NodeMonitorPeriod)
	t.RouteReconcilePeriod = cmp.Or(a.RouteReconciliationPeriod, t.RouteReconcilePeriod)
	if a.MinResyncPeriod > 0 {
		// Upstream's informers resync after a random time between the
		// period and twice it (options.go resyncPeriod).
		t.InformerResync = time.Duration(float64(a.MinResyncPeriod) * (rand.Float64() + 1))
	}
	return t
}
