package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers"
)

// The exercises are tested on apptest.Serve(sim.DefaultLab() + flags): the
// lab ccmlab serve builds from its flags must be that one, flag for flag.
func TestServeBuildsTheTestedLab(t *testing.T) {
	withLBC := sim.DefaultLab()
	withLBC.Addons = []string{controllers.AddonLBC}
	for _, tc := range []struct {
		name string
		args []string
		want sim.Lab
	}{
		{"no flags", nil, sim.DefaultLab()},
		{"--addons lbc (the exercises' test world)", []string{"--addons", "lbc"}, withLBC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultServeOptions()
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config()
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Lab()
			if got.Profile.Name != tc.want.Profile.Name || !reflect.DeepEqual(got.Controllers, tc.want.Controllers) ||
				!reflect.DeepEqual(got.Addons, tc.want.Addons) || got.Nodes != tc.want.Nodes || got.CloudLatency != tc.want.CloudLatency {
				t.Errorf("serve %v builds %+v, the tests build %+v", tc.args, got, tc.want)
			}
		})
	}
}

// The lab's rules are app.Config.Validate's; the CLI only says them with
// the flags a student typed: the field an error is about, and every field
// its detail mentions, by flag name.
func TestServeSaysValidateWithFlagNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // "" when the flags make a lab
	}{
		{"no flags", nil, ""},
		{"negative nodes", []string{"--nodes", "-1"}, "--nodes -1: must be between 0 and 1000"},
		{"too many nodes", []string{"--nodes", "1001"}, "--nodes 1001: must be between 0 and 1000"},
		{"latency beyond the cloud's", []string{"--cloud-latency", "61s"}, "--cloud-latency 1m1s: must be between 0 and 1m0s"},
		{"negative verbosity", []string{"-v", "-1"}, "-v -1: must not be negative"},
		{"unknown add-on", []string{"--addons", "istio"}, `--addons "istio": unknown add-on (valid: lbc)`},
		{"short token", []string{"--token", "short"}, "--token: use at least 16 characters"},
		{"exposed without token", []string{"--listen", "0.0.0.0:8080", "--token", ""}, `--listen "0.0.0.0:8080": reachable from other machines: set --token (or CCMLAB_TOKEN) so only your class can switch the lab`},
		{"bad allowed host", []string{"--allow-host", "*.example"}, `--allow-host "*.example": host "*.example"`},
		{"AWS API beyond loopback", []string{"--aws-listen", "0.0.0.0:4566"}, `--aws-listen "0.0.0.0:4566"`},
		{"unknown AWS provider", []string{"--aws-provider", "boto"}, `--aws-provider "boto": supported values: "lab", "upstream"`},
		{"upstream AWS provider off AWS", []string{"--profile", "kubevirt", "--aws-provider", "upstream"}, `--aws-provider "upstream": the upstream AWS provider needs --profile aws or vpc-cni, not "kubevirt"`},
		{"cluster CIDR without kubeconfig", []string{"--cluster-cidr", "10.244.0.0/16"}, "--cluster-cidr: only applies with --kubeconfig"},
		{"bare apiserver attached", []string{"--kubeconfig", "k", "--bare-apiserver"}, "--bare-apiserver: excludes --kubeconfig"},
		{"two baselines", []string{"--bare-apiserver", "--bare-control-plane"}, "--bare-control-plane: excludes --bare-apiserver"},
		{"attached: bad CIDR", []string{"--kubeconfig", "k", "--cluster-cidr", "10.244.0.0/33"}, `--cluster-cidr "10.244.0.0/33": not an IPv4 CIDR`},
		{"two mistakes, one line", []string{"--nodes", "-1", "-v", "-1"}, "--nodes -1: must be between 0 and 1000; -v -1: must not be negative"},
		// Parsing a flag stays the CLI's.
		{"unknown profile", []string{"--profile", "gcp"}, `--profile: unknown profile "gcp"`},
		{"unknown controller", []string{"--controllers", "node,bogus"}, `unknown controller "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CCMLAB_TOKEN", "")
			o := defaultServeOptions()
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			_, err := o.config()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("config() = %v, want nil", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Errorf("config() = %v, want %q", err, tc.want)
			case strings.Contains(err.Error(), "\n"):
				t.Errorf("config() = %q, want one line", err)
			}
		})
	}
}
