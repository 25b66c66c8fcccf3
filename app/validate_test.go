package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// validConfig is the lab `ccmlab serve` starts without flags.
func validConfig(t *testing.T) Config {
	t.Helper()
	p, err := profile.Get("aws")
	if err != nil {
		t.Fatal(err)
	}
	on, _ := p.ParseControllers("")
	return Config{DataDir: t.TempDir(), Profile: p, Controllers: on, Nodes: 3, Listen: "127.0.0.1:8080", AWSListen: "127.0.0.1:0"}
}

// Each rule of Validate, and the field its error names: cmd/ccmlab turns
// that field into a flag name, so the field matters as much as the text.
func TestValidate(t *testing.T) {
	kubevirt, err := profile.Get("kubevirt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string // "" when the config is valid
		want   string
	}{
		{"the default lab", func(*Config) {}, "", ""},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir", "Required value"},
		{"no profile", func(c *Config) { c.Profile = profile.Profile{}; c.Controllers = nil }, "Profile", "Required value"},
		{"controller the profile lacks", func(c *Config) { c.Profile = kubevirt; c.Controllers = []string{profile.Service} }, "Controllers[0]", "the kubevirt profile has no service controller"},
		{"unknown add-on", func(c *Config) { c.Addons = []string{"lbc", "istio"} }, "Addons[1]", "unknown add-on"},
		{"lbc", func(c *Config) { c.Addons = []string{"lbc"} }, "", ""},
		{"lbc on an attached cluster", func(c *Config) { c.Addons = []string{"lbc"}; c.Kubeconfig = "/k" }, "Addons[0]", "needs the embedded control plane"},
		{"negative nodes", func(c *Config) { c.Nodes = -1 }, "Nodes", "must be between 0 and 1000"},
		{"no nodes", func(c *Config) { c.Nodes = 0 }, "", ""},
		{"most nodes", func(c *Config) { c.Nodes = MaxNodes }, "", ""},
		{"too many nodes", func(c *Config) { c.Nodes = MaxNodes + 1 }, "Nodes", "must be between 0 and 1000"},
		{"negative latency", func(c *Config) { c.CloudLatency = -time.Second }, "CloudLatency", "must be between 0 and 1m0s"},
		{"the cloud's longest latency", func(c *Config) { c.CloudLatency = cloud.MaxLatency }, "", ""},
		{"latency beyond the cloud's", func(c *Config) { c.CloudLatency = cloud.MaxLatency + time.Millisecond }, "CloudLatency", "must be between 0 and " + cloud.MaxLatency.String()},
		{"negative verbosity", func(c *Config) { c.Verbosity = -1 }, "Verbosity", "must not be negative"},
		{"the default memory limit", func(c *Config) { c.MemoryLimit = DefaultMemoryLimit }, "", ""},
		{"the least memory limit", func(c *Config) { c.MemoryLimit = MinMemoryLimit }, "", ""},
		{"memory limit below an idle lab", func(c *Config) { c.MemoryLimit = MinMemoryLimit - 1 }, "MemoryLimit", "must be 0 (none) or at least 256 MiB"},
		{"negative memory limit", func(c *Config) { c.MemoryLimit = -1 }, "MemoryLimit", "at least 256 MiB"},
		{"open files", func(c *Config) { c.MaxOpenFiles = 4096 }, "", ""},
		{"too few open files", func(c *Config) { c.MaxOpenFiles = MinOpenFiles - 1 }, "MaxOpenFiles", "must be 0 (as inherited) or between 1024 and 1048576"},
		{"too many open files", func(c *Config) { c.MaxOpenFiles = MaxOpenFiles + 1 }, "MaxOpenFiles", "between 1024 and 1048576"},
		{"short token", func(c *Config) { c.Token = "short" }, "Token", "use at least 16 characters"},
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, "Listen", "missing port"},
		{"exposed without token", func(c *Config) { c.Listen = "0.0.0.0:8080" }, "Listen", "reachable from other machines: set Token"},
		{"exposed with token", func(c *Config) { c.Listen = "0.0.0.0:8080"; c.Token = strings.Repeat("x", MinTokenLen) }, "", ""},
		{"bad allowed host", func(c *Config) { c.AllowedHosts = []string{"lab.example", "*.example"} }, "AllowedHosts[1]", "without a port or a wildcard"},
		{"AWS API beyond loopback", func(c *Config) { c.AWSListen = "0.0.0.0:4566" }, "AWSListen", "loopback"},
		{"unknown AWS provider", func(c *Config) { c.AWSProvider = "boto" }, "AWSProvider", `supported values: "lab", "upstream"`},
		{"upstream AWS provider off AWS", func(c *Config) { c.Profile = kubevirt; c.Controllers = nil; c.AWSProvider = AWSProviderUpstream }, "AWSProvider", "needs Profile aws or vpc-cni"},
		{"cluster CIDR without kubeconfig", func(c *Config) { c.ClusterCIDR = "10.244.0.0/16" }, "ClusterCIDR", "only applies with Kubeconfig"},
		{"bare apiserver attached", func(c *Config) { c.Kubeconfig = "kubeconfig"; c.BareAPIServer = true }, "BareAPIServer", "excludes Kubeconfig"},
		{"bare control plane attached", func(c *Config) { c.Kubeconfig = "kubeconfig"; c.BareControlPlane = true }, "BareControlPlane", "excludes Kubeconfig"},
		{"two baselines", func(c *Config) { c.BareAPIServer = true; c.BareControlPlane = true }, "BareControlPlane", "excludes BareAPIServer"},
		{"attached: kind's CIDR by default", func(c *Config) { c.Kubeconfig = "kubeconfig" }, "", ""},
		{"attached: not a CIDR", func(c *Config) { c.Kubeconfig = "kubeconfig"; c.ClusterCIDR = "10.244.0.0/33" }, "ClusterCIDR", "not an IPv4 CIDR"},
		{"attached: IPv6", func(c *Config) { c.Kubeconfig = "kubeconfig"; c.ClusterCIDR = "fd00::/48" }, "ClusterCIDR", "only IPv4"},
		{"attached: too small", func(c *Config) { c.Kubeconfig = "kubeconfig"; c.ClusterCIDR = "10.244.0.0/28" }, "ClusterCIDR", "too small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.mutate(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var agg utilerrors.Aggregate
			if !errors.As(err, &agg) || len(agg.Errors()) != 1 {
				t.Fatalf("Validate() = %v, want one field error", err)
			}
			var fe *field.Error
			if !errors.As(agg.Errors()[0], &fe) {
				t.Fatalf("Validate() = %T %v, want a *field.Error", agg.Errors()[0], err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Error(), tc.want) {
				t.Errorf("Validate() = %q on %s, want %q on %s", fe.Error(), fe.Field, tc.want, tc.field)
			}
		})
	}
}

// Validate applies the defaults to a copy: a caller's Config is left as
// it was, and New refuses what Validate refuses.
func TestValidateLeavesConfigAndAgreesWithNew(t *testing.T) {
	c := validConfig(t)
	c.Kubeconfig = "kubeconfig"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ClusterCIDR != "" || c.Logger != nil {
		t.Errorf("Validate changed the config: ClusterCIDR %q, Logger %v", c.ClusterCIDR, c.Logger)
	}
	c = validConfig(t)
	c.Nodes = -1
	_, err := New(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "Nodes: Invalid value: -1") {
		t.Errorf("New = %v, want the Nodes error", err)
	}
}

// Several mistakes are reported together, not one per run.
func TestValidateReportsEveryError(t *testing.T) {
	c := validConfig(t)
	c.Nodes, c.Verbosity, c.CloudLatency = -1, -1, time.Hour
	var agg utilerrors.Aggregate
	if err := c.Validate(); !errors.As(err, &agg) || len(agg.Errors()) != 3 {
		t.Fatalf("Validate() = %v, want three errors", err)
	}
}
