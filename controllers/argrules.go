package controllers

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"
	netutils "k8s.io/utils/net"
)

// The lab's rules for the CCM's command line. Upstream's CCM is a process
// of its own: its workers, loops and clients cost its own memory and CPU,
// so upstream bounds little (k8s.io/cloud-provider v0.37.2 refuses a
// non-positive --concurrent-node-lifecycle-syncs and little else). Here
// the CCM's controllers are goroutines of the lab's process, beside the
// lab's control plane and, in a class, beside every other student's lab:
// every flag the lab honours has a range at least as tight as upstream's
// and small enough for a shared machine, and every flag it cannot honour
// is refused, never ignored. docs/security.md lists each rule with its
// reason; TestEveryFlagHasARule keeps the list complete.

// Bounds of the flags the lab honours.
const (
	// MaxConcurrentSyncs bounds every --concurrent-*-syncs: each worker is
	// a goroutine of the lab's process (1,000,000 took a lab from 390 MB
	// to 5 GB in 11 s). 50 is 12 times the lab's own 4 Service workers;
	// more only queue on the same cloud and API server.
	MaxConcurrentSyncs = 50
	// MinControllerPeriod and MaxControllerPeriod bound the controllers'
	// loop periods (node status, node monitor, route reconciliation): at
	// 0 upstream's loops run without pause; a period past an hour shows
	// nothing within a lesson.
	MinControllerPeriod = time.Second
	MaxControllerPeriod = time.Hour
	// MinResyncFloor and MaxResync bound --min-resync-period: every
	// resync hands every cached object to the controllers' handlers; the
	// floor is the lab's own default resync.
	MinResyncFloor = 10 * time.Second
	MaxResync      = 24 * time.Hour
	// MinLeaderElectionPeriod is the floor of the leader election's
	// durations: each retry is a request to the API server, and
	// --leader-elect-retry-period=1ns burnt 54% of a core.
	MinLeaderElectionPeriod = time.Second
	// MaxLeaseDuration: a CCM that stopped without releasing its Lease
	// keeps the next one waiting this long, and the page's switches wait
	// 2 minutes (Tuning.SwitchTimeout) for a CCM to lead.
	MaxLeaseDuration = 2 * time.Minute
	// MaxKubeAPIQPS and MaxKubeAPIBurst bound each controller's client to
	// the lab's API server, which serves the whole lab (a negative QPS
	// would turn client-go's limit off).
	MaxKubeAPIQPS   = 500
	MaxKubeAPIBurst = 1000
	// LabVerbosity is the one --v the lab can honour: klog is one per
	// process, shared with the lab's control plane, and the CCM Pod's log
	// keeps its lines up to level 2 (controlplane.CaptureLevel).
	LabVerbosity = 2
)

// The flag sets (cliflag.NamedFlagSets names) whose flags share a rule.
const (
	groupServing        = "secure serving"
	groupAuthentication = "authentication"
	groupAuthorization  = "authorization"
	groupDebugging      = "debugging"
	groupMigration      = "leader-migration"
)

const (
	whyWorkers  = "each worker is a goroutine of the lab's process, which the lab's control plane and other labs share"
	whyPeriod   = "a shorter period runs the controller's loop nearly without pause on a machine other labs share; a longer one shows nothing within a lesson"
	whyResync   = "every resync hands every cached object to the controllers again; the lab's own default is 10s"
	whyLeader   = "each try is a request to the lab's API server; shorter periods spin the leader election"
	whyLease    = "a CCM that stopped without releasing its Lease keeps the next one waiting that long, and the page's switches wait 2 minutes"
	whyQPS      = "the controllers' clients share the lab's one API server (client-go turns its limit off for a negative QPS)"
	whyServing  = "the lab's CCM runs inside the lab's process and serves no port (no healthz, metrics or profiling endpoint), as upstream's with --secure-port=0"
	whyNoFiles  = "the CCM Pod has no files: the lab mounts no volume into it"
	whyInClustr = "the CCM talks to the lab's API server with its Pod's ServiceAccount token, as in-cluster config"
)

// rule checks one flag that was set; nil accepts any value the flag's
// type parses.
type rule func(f *pflag.Flag) error

// flagRules is the rule of every flag of upstream's command line that is
// not in a group of groupRules. A flag with no rule at all is refused
// (ruleOf).
var flagRules = map[string]rule{
	// Honoured as upstream honours them.
	"cloud-provider":                  nil, // RunProcess refuses another provider, as upstream's cloud init does
	"controllers":                     nil, // Generic.Validate refuses an unknown name
	"configure-cloud-routes":          nil,
	"use-service-account-credentials": nil,
	"leader-elect":                    nil,
	"cluster-cidr":                    nil, // clusterCIDRs, when the Route controller runs (upstream reads it only then)
	"cluster-name":                    clusterName,
	// No effect in upstream's CCM either: k8s.io/cloud-provider v0.37.2
	// stores them and no controller of the CCM reads them (node IPAM is
	// not one of its controllers; allow-untagged-cloud is read only when
	// the cloud has no cluster ID, and the lab's always has one).
	"allocate-node-cidrs":          nil,
	"cidr-allocator-type":          nil,
	"external-cloud-volume-plugin": nil,
	"allow-untagged-cloud":         nil,
	"node-sync-period":             nil, // deprecated upstream: "currently no-op"

	// Workers.
	"concurrent-service-syncs":        intRange(1, MaxConcurrentSyncs, whyWorkers),
	"concurrent-node-syncs":           intRange(1, MaxConcurrentSyncs, whyWorkers),
	"concurrent-node-status-updates":  intRange(0, MaxConcurrentSyncs, whyWorkers+"; 0 means --concurrent-node-syncs, as upstream"),
	"concurrent-node-lifecycle-syncs": intRange(1, MaxConcurrentSyncs, whyWorkers),

	// Loop periods.
	"node-status-update-frequency": durRange(MinControllerPeriod, MaxControllerPeriod, whyPeriod),
	"node-monitor-period":          durRange(MinControllerPeriod, MaxControllerPeriod, whyPeriod),
	"route-reconciliation-period":  durRange(MinControllerPeriod, MaxControllerPeriod, whyPeriod),
	"min-resync-period":            durRange(MinResyncFloor, MaxResync, whyResync),
	"controller-start-interval":    only("the lab starts a CCM's controllers together", "0s"),

	// The clients to the API server.
	"kube-api-qps":          qpsRange,
	"kube-api-burst":        intRange(1, MaxKubeAPIBurst, whyQPS+"; a burst of 0 would let no request through"),
	"kube-api-content-type": only("the API server speaks these two", "application/json", "application/vnd.kubernetes.protobuf"),
	"kubeconfig":            only(whyNoFiles+"; "+whyInClustr, ""),
	"master":                only(whyInClustr, ""),

	// Leader election: each duration here, their order in
	// leaderElectionOrder.
	"leader-elect-lease-duration":     durRange(MinLeaderElectionPeriod, MaxLeaseDuration, whyLease),
	"leader-elect-renew-deadline":     durRange(MinLeaderElectionPeriod, MaxLeaseDuration, whyLeader),
	"leader-elect-retry-period":       durRange(MinLeaderElectionPeriod, MaxLeaseDuration, whyLeader),
	"leader-elect-resource-lock":      nil, // Generic.Validate: "leases" only, as upstream
	"leader-elect-resource-name":      dnsName(validation.IsDNS1123Subdomain),
	"leader-elect-resource-namespace": dnsName(validation.IsDNS1123Label),

	"cloud-config": only(whyNoFiles+"; the lab configures its cloud itself", ""),
	"v":            only("klog is one per process, shared with the lab's control plane, and the CCM Pod's log keeps its lines up to level 2", strconv.Itoa(LabVerbosity)),

	// Serving: only the value that says what the lab does.
	"secure-port": only(whyServing, "0"),
}

// groupRules is the rule of every flag of a flag set.
var groupRules = map[string]rule{
	groupServing:        only(whyServing),
	groupAuthentication: only(whyServing + "; nothing to authenticate"),
	groupAuthorization:  only(whyServing + "; nothing to authorize"),
	groupDebugging:      only(whyServing, "false"),
	groupMigration:      only("the lab runs one CCM and nothing to migrate from (the KCM runs no cloud controllers); and the file would be read on the lab's host", "false", ""),
}

// ruleOf is flag name's rule: its own, else its group's. ok is false for a
// flag with no rule, which is refused.
func ruleOf(name string, groups map[string]string) (r rule, ok bool) {
	if r, ok := flagRules[name]; ok {
		return r, true
	}
	if g, in := groups[name]; in {
		return groupRules[g], true
	}
	return nil, false
}

// intRange: an integer flag between lo and hi.
func intRange(lo, hi int64, why string) rule {
	return func(f *pflag.Flag) error {
		v, err := strconv.ParseInt(f.Value.String(), 10, 64)
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("%s must be between %d and %d, but got %s (ccmlab: %s)", f.Name, lo, hi, f.Value, why)
		}
		return nil
	}
}

// durRange: a duration flag between lo and hi.
func durRange(lo, hi time.Duration, why string) rule {
	return func(f *pflag.Flag) error {
		v, err := time.ParseDuration(f.Value.String())
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("%s must be between %s and %s, but got %s (ccmlab: %s)", f.Name, lo, hi, f.Value, why)
		}
		return nil
	}
}

// qpsRange: --kube-api-qps above 0 and at most MaxKubeAPIQPS.
func qpsRange(f *pflag.Flag) error {
	v, err := strconv.ParseFloat(f.Value.String(), 64)
	if err != nil || !(v > 0) || v > MaxKubeAPIQPS {
		return fmt.Errorf("%s must be greater than 0 and at most %d, but got %s (ccmlab: %s)", f.Name, MaxKubeAPIQPS, f.Value, whyQPS)
	}
	return nil
}

// only: the flag may be given only with one of allowed (none: never),
// the values that say what the lab does anyway.
func only(why string, allowed ...string) rule {
	return func(f *pflag.Flag) error {
		v := f.Value.String()
		if slices.Contains(allowed, v) {
			return nil
		}
		var quoted []string
		for _, a := range allowed {
			if a != "" {
				quoted = append(quoted, strconv.Quote(a))
			}
		}
		if len(quoted) == 0 {
			return fmt.Errorf("--%s=%s is not supported by ccmlab's cloud-controller-manager: %s", f.Name, v, why)
		}
		return fmt.Errorf("%s must be %s in ccmlab, but got %q (ccmlab: %s)", f.Name, strings.Join(quoted, " or "), v, why)
	}
}

// clusterNameRE: what the lab's cloud can put in a tag key after
// "kubernetes.io/cluster/" (AWS tag keys are at most 128 characters),
// in the characters EKS and kOps cluster names use.
var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

func clusterName(f *pflag.Flag) error {
	if !clusterNameRE.MatchString(f.Value.String()) {
		return fmt.Errorf("cluster-name must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit, but got %q (ccmlab: it names the cluster in the cloud's tag keys)", f.Value)
	}
	return nil
}

// dnsName: a Lease's name or namespace, as the API server would check it
// (an invalid one would only fail every request of the leader election).
func dnsName(check func(string) []string) rule {
	return func(f *pflag.Flag) error {
		if msgs := check(f.Value.String()); len(msgs) > 0 {
			return fmt.Errorf("%s %q is invalid: %s", f.Name, f.Value, strings.Join(msgs, "; "))
		}
		return nil
	}
}

// leaderElectionOrder is client-go's order of the leader election's
// durations (tools/leaderelection NewLeaderElector, v0.37.2
// leaderelection.go:77-91), checked before the CCM starts rather than
// when it would build its elector, and in the flags' names.
func leaderElectionOrder(lease, renew, retry time.Duration) []error {
	var errs []error
	if lease <= renew {
		errs = append(errs, fmt.Errorf("leader-elect-lease-duration must be greater than leader-elect-renew-deadline (%s), but got %s", renew, lease))
	}
	if jittered := time.Duration(leaderelection.JitterFactor * float64(retry)); renew <= jittered {
		errs = append(errs, fmt.Errorf("leader-elect-renew-deadline must be greater than leader-elect-retry-period*%.1f (%s), but got %s", leaderelection.JitterFactor, jittered, renew))
	}
	return errs
}

// clusterCIDRs is upstream's check of --cluster-cidr when the Route
// controller starts (k8s.io/cloud-provider v0.37.2 app/core.go
// startRouteController and processCIDRs): at most two CIDRs, and two only
// one of each IP family.
func clusterCIDRs(s string) []error {
	cidrs, err := netutils.ParseCIDRs(strings.Split(strings.TrimSpace(s), ","))
	if err != nil {
		return []error{fmt.Errorf("cluster-cidr %q is invalid: %v", s, err)}
	}
	if len(cidrs) > 2 {
		return []error{fmt.Errorf("length of clusterCIDRs is:%v more than max allowed of 2", len(cidrs))}
	}
	if dual, _ := netutils.IsDualStackCIDRs(cidrs); len(cidrs) > 1 && !dual {
		return []error{fmt.Errorf("len of ClusterCIDRs==%v and they are not configured as dual stack (at least one from each IPFamily", len(cidrs))}
	}
	return nil
}
