package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/lab/profile"
)

// The CCM Pod's arguments are read by k8s.io/cloud-provider's options, so
// what upstream refuses the lab's CCM refuses, and --controllers means
// what it means upstream (aliases, "*", "-name").
func TestParseArgs(t *testing.T) {
	aws, _ := profile.Get("aws")
	base := []string{"--cloud-provider=aws", "--cluster-cidr=10.244.0.0/16"}
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // controllers on
		wantErr string
	}{
		{"defaults: all", base, []string{"node", "nodelifecycle", "route", "service"}, ""},
		{"alias off", append(base, "--controllers=*,-service"), []string{"node", "nodelifecycle", "route"}, ""},
		{"canonical names", append(base, "--controllers=cloud-node-controller,service-lb-controller"), []string{"node", "service"}, ""},
		{"routes not configured", append(base, "--configure-cloud-routes=false"), []string{"node", "nodelifecycle", "service"}, ""},
		{"unknown flag", append(base, "--no-such-flag"), nil, "unknown flag: --no-such-flag"},
		{"unknown controller", append(base, "--controllers=*,-nope"), nil, "nope"},
		{"no provider", []string{"--v=2"}, nil, "--cloud-provider cannot be empty"},
		{"stray argument", append(base, "extra"), nil, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseArgs(tc.args, aws)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Enabled(aws); !slices.Equal(got, tc.want) {
				t.Errorf("on %v, want %v", got, tc.want)
			}
		})
	}
	a, err := ParseArgs(append(base, "--v=2", "--leader-elect=true", "--use-service-account-credentials", "--concurrent-service-syncs=3"), aws)
	if err != nil {
		t.Fatal(err)
	}
	if a.Verbosity != 2 || !a.LeaderElect || !a.UseServiceAccountCredentials || a.ConcurrentServiceSyncs != 3 ||
		a.LeaseName != "cloud-controller-manager" || a.LeaseNamespace != "kube-system" || a.LeaseDuration == 0 {
		t.Errorf("parsed %+v", a)
	}
}

func TestSwitchArgs(t *testing.T) {
	aws, _ := profile.Get("aws")
	// The Route controller is on in these: upstream's CCM exits without a
	// cluster CIDR (app/core.go startRouteController), so ParseArgs wants
	// one.
	const cidr = "--cloud-provider=aws --cluster-cidr=10.244.0.0/16"
	for _, tc := range []struct {
		name string
		args []string
		ctl  string
		on   bool
		want []string
	}{
		{"off", []string{cidr, "--controllers=*"}, profile.Service, false, []string{cidr, "--controllers=*,-service"}},
		{"on again", []string{cidr, "--controllers=*,-service"}, profile.Service, true, []string{cidr, "--controllers=*"}},
		{"no flag yet", []string{cidr}, profile.Node, false, []string{cidr, "--controllers=*,-cloud-node"}},
		{"separate value", []string{"--controllers", "*", cidr}, profile.Route, false, []string{"--controllers=*,-route", cidr}},
		{"route on configures routes", []string{"--cloud-provider=aws", "--configure-cloud-routes=false", "--controllers=*,-route"}, profile.Route, true,
			[]string{"--cloud-provider=aws", "--configure-cloud-routes=true", "--controllers=*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			split := func(args []string) []string { return strings.Fields(strings.Join(args, " ")) }
			got, err := SwitchArgs(split(tc.args), aws, tc.ctl, tc.on)
			if err != nil {
				t.Fatal(err)
			}
			if want := split(tc.want); !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// The lab's bounds (argrules.go): a flag outside its range, or one the lab
// cannot honour, is refused with upstream's kind of sentence; one inside
// is honoured.
func TestParseArgsBounds(t *testing.T) {
	aws, _ := profile.Get("aws")
	base := []string{"--cloud-provider=aws", "--cluster-cidr=10.244.0.0/16"}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" accepted
	}{
		// Workers.
		{"service syncs a million", []string{"--concurrent-service-syncs=1000000"}, "concurrent-service-syncs must be between 1 and 50, but got 1000000"},
		{"service syncs int32 max", []string{"--concurrent-service-syncs=2147483647"}, "between 1 and 50"},
		{"service syncs zero", []string{"--concurrent-service-syncs=0"}, "between 1 and 50, but got 0"},
		{"service syncs at the bound", []string{"--concurrent-service-syncs=50"}, ""},
		{"node syncs negative", []string{"--concurrent-node-syncs=-5"}, "concurrent-node-syncs must be between 1 and 50, but got -5"},
		{"node syncs 51", []string{"--concurrent-node-syncs=51"}, "between 1 and 50"},
		{"node status updates negative", []string{"--concurrent-node-status-updates=-1"}, "concurrent-node-status-updates must be between 0 and 50"},
		{"node status updates zero", []string{"--concurrent-node-status-updates=0"}, ""},
		{"lifecycle syncs zero", []string{"--concurrent-node-lifecycle-syncs=0"}, "concurrent-node-lifecycle-syncs must be between 1 and 50, but got 0"},
		{"lifecycle syncs huge", []string{"--concurrent-node-lifecycle-syncs=100000"}, "between 1 and 50"},
		// Periods.
		{"node monitor 0", []string{"--node-monitor-period=0s"}, "node-monitor-period must be between 1s and 1h0m0s, but got 0s"},
		{"node monitor 1ns", []string{"--node-monitor-period=1ns"}, "node-monitor-period must be between"},
		{"node monitor 2s", []string{"--node-monitor-period=2s"}, ""},
		{"node status frequency 1ms", []string{"--node-status-update-frequency=1ms"}, "node-status-update-frequency must be between"},
		{"route period 0", []string{"--route-reconciliation-period=0s"}, "route-reconciliation-period must be between"},
		{"route period a day", []string{"--route-reconciliation-period=24h"}, "route-reconciliation-period must be between"},
		{"min resync 1s", []string{"--min-resync-period=1s"}, "min-resync-period must be between 10s and 24h0m0s"},
		{"min resync 12h", []string{"--min-resync-period=12h"}, ""},
		{"controller start interval", []string{"--controller-start-interval=10s"}, `controller-start-interval must be "0s"`},
		// Clients.
		{"qps negative", []string{"--kube-api-qps=-1"}, "kube-api-qps must be greater than 0 and at most 500, but got -1"},
		{"qps zero", []string{"--kube-api-qps=0"}, "kube-api-qps must be greater than 0"},
		{"qps huge", []string{"--kube-api-qps=100000"}, "at most 500"},
		{"qps half", []string{"--kube-api-qps=0.5"}, ""},
		{"burst zero", []string{"--kube-api-burst=0"}, "kube-api-burst must be between 1 and 1000"},
		{"burst negative", []string{"--kube-api-burst=-3"}, "kube-api-burst must be between 1 and 1000"},
		{"content type", []string{"--kube-api-content-type=text/plain"}, `kube-api-content-type must be "application/json" or "application/vnd.kubernetes.protobuf"`},
		{"content type json", []string{"--kube-api-content-type=application/json"}, ""},
		// Leader election: upstream's order and the lab's floor.
		{"retry 1ns", []string{"--leader-elect-retry-period=1ns"}, "leader-elect-retry-period must be between 1s and 2m0s, but got 1ns"},
		{"all in ns", []string{"--leader-elect-lease-duration=3ns", "--leader-elect-renew-deadline=2ns", "--leader-elect-retry-period=1ns"}, "leader-elect-lease-duration must be between 1s and 2m0s, but got 3ns"},
		{"lease not above renew", []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"}, "leader-elect-lease-duration must be greater than leader-elect-renew-deadline (10s), but got 10s"},
		{"renew not above jittered retry", []string{"--leader-elect-retry-period=9s"}, "leader-elect-renew-deadline must be greater than leader-elect-retry-period*1.2 (10.8s), but got 10s"},
		{"lease an hour", []string{"--leader-elect-lease-duration=1h"}, "leader-elect-lease-duration must be between 1s and 2m0s"},
		{"lease zero", []string{"--leader-elect-lease-duration=0s"}, "leader-elect-lease-duration must be between"},
		{"timings upstream's defaults", []string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}, ""},
		{"timings tight", []string{"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=1s"}, ""},
		{"lock endpoints", []string{"--leader-elect-resource-lock=endpoints"}, `resourceLock value must be "leases"`},
		{"lease name invalid", []string{"--leader-elect-resource-name=Bad_Name"}, `leader-elect-resource-name "Bad_Name" is invalid`},
		{"lease namespace invalid", []string{"--leader-elect-resource-namespace=a.b"}, `leader-elect-resource-namespace "a.b" is invalid`},
		{"lease name other", []string{"--leader-elect-resource-name=my-ccm", "--leader-elect-resource-namespace=default"}, ""},
		// What the lab cannot honour.
		{"kubeconfig", []string{"--kubeconfig=/etc/kubernetes/ccm.conf"}, "--kubeconfig=/etc/kubernetes/ccm.conf is not supported by ccmlab's cloud-controller-manager"},
		{"master", []string{"--master=https://10.0.0.1:6443"}, "--master=https://10.0.0.1:6443 is not supported"},
		{"cloud config", []string{"--cloud-config=/etc/aws.conf"}, "--cloud-config=/etc/aws.conf is not supported"},
		{"secure port", []string{"--secure-port=10258"}, `secure-port must be "0" in ccmlab, but got "10258"`},
		{"secure port off", []string{"--secure-port=0"}, ""},
		{"bind address", []string{"--bind-address=0.0.0.0"}, "--bind-address=0.0.0.0 is not supported"},
		{"tls cert", []string{"--tls-cert-file=/etc/ssl/x.pem"}, "--tls-cert-file=/etc/ssl/x.pem is not supported"},
		{"client ca", []string{"--client-ca-file=/etc/ca.pem"}, "--client-ca-file=/etc/ca.pem is not supported"},
		{"authorization kubeconfig", []string{"--authorization-kubeconfig=/x"}, "--authorization-kubeconfig=/x is not supported"},
		{"authn skip lookup", []string{"--authentication-skip-lookup"}, "--authentication-skip-lookup=true is not supported"},
		{"profiling", []string{"--profiling"}, `profiling must be "false" in ccmlab, but got "true"`},
		{"profiling off", []string{"--profiling=false"}, ""},
		{"leader migration", []string{"--enable-leader-migration"}, `enable-leader-migration must be "false"`},
		{"leader migration config", []string{"--enable-leader-migration", "--leader-migration-config=/etc/shadow"}, "leader-migration-config"},
		{"verbosity 4", []string{"--v=4"}, `v must be "2" in ccmlab, but got "4"`},
		{"verbosity 2", []string{"--v=2"}, ""},
		// The rest, accepted as upstream accepts them.
		{"cluster name", []string{"--cluster-name=my.cluster_1-a"}, ""},
		{"cluster name empty", []string{"--cluster-name="}, "cluster-name must be 1 to 100"},
		{"cluster name NUL", []string{"--cluster-name=a\x00b"}, "cluster-name must be 1 to 100"},
		{"cluster name long", []string{"--cluster-name=" + strings.Repeat("a", 101)}, "cluster-name must be 1 to 100"},
		{"no-op flags", []string{"--allocate-node-cidrs=true", "--cidr-allocator-type=RangeAllocator", "--allow-untagged-cloud", "--node-sync-period=1s", "--external-cloud-volume-plugin=aws"}, ""},
		{"cluster cidr bad", []string{"--cluster-cidr=10.0.0.0/33"}, `cluster-cidr "10.0.0.0/33" is invalid`},
		{"cluster cidr bad, routes off", []string{"--cluster-cidr=nonsense", "--configure-cloud-routes=false"}, ""},
		{"cluster cidrs one family", []string{"--cluster-cidr=10.0.0.0/16,10.1.0.0/16"}, "not configured as dual stack"},
		{"cluster cidrs three", []string{"--cluster-cidr=10.0.0.0/16,fd00::/64,10.1.0.0/16"}, "more than max allowed of 2"},
		{"two errors, both said", []string{"--concurrent-service-syncs=0", "--kube-api-qps=-1"}, "[concurrent-service-syncs must be between 1 and 50, but got 0 (ccmlab: each worker is a goroutine of the lab's process, which the lab's control plane and other labs share), kube-api-qps must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseArgs(append(slices.Clone(base), tc.args...), aws)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("err %q, want it to say %q", err, tc.wantErr)
			}
		})
	}
}

// Every flag upstream's options register has a rule: a flag a Kubernetes
// upgrade adds is refused until someone decides what the lab does with it
// (and says so in docs/security.md).
func TestEveryFlagHasARule(t *testing.T) {
	_, fs, groups, err := newFlagSet()
	if err != nil {
		t.Fatal(err)
	}
	fs.IntP("v", "v", 0, "")
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if _, ok := ruleOf(f.Name, groups); !ok {
			t.Errorf("--%s has no rule", f.Name)
		}
	})
	if n < 60 {
		t.Errorf("only %d flags", n)
	}
	for name := range flagRules {
		if fs.Lookup(name) == nil {
			t.Errorf("a rule for --%s, which the command line does not have", name)
		}
	}
}

// What the command line gives replaces the lab's tuning; what it does not
// give keeps it.
func TestArgsTuning(t *testing.T) {
	aws, _ := profile.Get("aws")
	base := Tuning{ServiceWorkers: 4, NodeWorkers: 8, NodeStatusWorkers: 4, NodeLifecycleWorkers: 4,
		NodeStatusUpdateFrequency: 5 * time.Second, NodeMonitorPeriod: 2 * time.Second, RouteReconcilePeriod: 5 * time.Second, InformerResync: 10 * time.Second}
	a, err := ParseArgs([]string{"--cloud-provider=aws", "--cluster-cidr=10.244.0.0/16"}, aws)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.tuning(base); got != base {
		t.Errorf("no flags changed the tuning:\n got %+v\nwant %+v", got, base)
	}
	a, err = ParseArgs([]string{"--cloud-provider=aws", "--cluster-cidr=10.244.0.0/16", "--concurrent-service-syncs=3", "--concurrent-node-syncs=6",
		"--concurrent-node-lifecycle-syncs=2", "--node-status-update-frequency=7s", "--node-monitor-period=3s", "--route-reconciliation-period=9s",
		"--min-resync-period=1m", "--kube-api-qps=7.5", "--kube-api-burst=9", "--kube-api-content-type=application/json"}, aws)
	if err != nil {
		t.Fatal(err)
	}
	got := a.tuning(base)
	want := Tuning{ServiceWorkers: 3, NodeWorkers: 6, NodeStatusWorkers: 6, NodeLifecycleWorkers: 2,
		NodeStatusUpdateFrequency: 7 * time.Second, NodeMonitorPeriod: 3 * time.Second, RouteReconcilePeriod: 9 * time.Second, InformerResync: got.InformerResync}
	if got != want || got.InformerResync < time.Minute || got.InformerResync > 2*time.Minute {
		t.Errorf("tuning\n got %+v\nwant %+v (resync between 1m and 2m)", got, want)
	}
	if a.KubeAPIQPS != 7.5 || a.KubeAPIBurst != 9 || a.KubeAPIContentType != "application/json" {
		t.Errorf("clients: %+v", a)
	}
}

// What the command line gives reaches the controllers' clients: a
// flag parsed and then ignored would be worse than one refused.
func TestArgsReachTheClients(t *testing.T) {
	aws, _ := profile.Get("aws")
	a, err := ParseArgs([]string{"--cloud-provider=aws", "--cluster-cidr=10.244.0.0/16", "--kube-api-qps=7.5", "--kube-api-burst=9", "--kube-api-content-type=application/json"}, aws)
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{cfg: Config{Tuning: Tuning{ClientQPS: 200, ClientBurst: 400}}}
	base := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 200, Burst: 400}
	for _, tc := range []struct {
		name string
		args Args
		qps  float32
	}{
		{"given", a, 7.5},
		{"not given", Args{}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Process{Args: tc.args, Config: func(string) (*rest.Config, error) { return base, nil }}
			c, err := m.clientFor(profile.Service, &gate{}, false, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CoreV1().RESTClient().GetRateLimiter().QPS(); got != tc.qps {
				t.Errorf("the client's QPS is %v, want %v", got, tc.qps)
			}
		})
	}
}
