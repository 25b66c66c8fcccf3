package controllers

import (
	"slices"
	"strings"
	"testing"

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
	a, err := ParseArgs(append(base, "--v=4", "--leader-elect=true", "--use-service-account-credentials", "--concurrent-service-syncs=3"), aws)
	if err != nil {
		t.Fatal(err)
	}
	if a.Verbosity != 4 || !a.LeaderElect || !a.UseServiceAccountCredentials || a.ConcurrentServiceSyncs != 3 ||
		a.LeaseName != "cloud-controller-manager" || a.LeaseNamespace != "kube-system" || a.LeaseDuration == 0 {
		t.Errorf("parsed %+v", a)
	}
}

func TestSwitchArgs(t *testing.T) {
	aws, _ := profile.Get("aws")
	for _, tc := range []struct {
		name string
		args []string
		ctl  string
		on   bool
		want []string
	}{
		{"off", []string{"--cloud-provider=aws", "--controllers=*"}, profile.Service, false, []string{"--cloud-provider=aws", "--controllers=*,-service"}},
		{"on again", []string{"--cloud-provider=aws", "--controllers=*,-service"}, profile.Service, true, []string{"--cloud-provider=aws", "--controllers=*"}},
		{"no flag yet", []string{"--cloud-provider=aws"}, profile.Node, false, []string{"--cloud-provider=aws", "--controllers=*,-cloud-node"}},
		{"separate value", []string{"--controllers", "*", "--cloud-provider=aws"}, profile.Route, false, []string{"--controllers=*,-route", "--cloud-provider=aws"}},
		{"route on configures routes", []string{"--cloud-provider=aws", "--configure-cloud-routes=false", "--controllers=*,-route"}, profile.Route, true,
			[]string{"--cloud-provider=aws", "--configure-cloud-routes=true", "--controllers=*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SwitchArgs(tc.args, aws, tc.ctl, tc.on)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
