package app

import (
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Limits of the lab's configuration.
const (
	// MaxNodes bounds Nodes: more simulated kubelets than a laptop runs.
	MaxNodes = 1000
	// MinTokenLen keeps a lab's token out of reach of guessing: the lab
	// answers as fast as it can, with no lockout.
	MinTokenLen = 16
	// DefaultMemoryLimit is a lab's Go soft memory limit: an idle lab's
	// runtime holds about 150 MB (docs/footprint.md), a busy 3-node lab a
	// few hundred; past the limit the collector runs more often, so a
	// runaway lab spends its own CPU before the machine's memory.
	DefaultMemoryLimit = 1 << 30
	// MinMemoryLimit is the least limit that leaves an idle lab room: below
	// it the collector would run all the time.
	MinMemoryLimit = 256 << 20
	// MinOpenFiles is the least RLIMIT_NOFILE a lab starts with: its own
	// listeners, etcd's files and the control plane's loopback
	// connections take several hundred (docs/security.md).
	MinOpenFiles = 1024
	// MaxOpenFiles bounds the limit a lab may ask for.
	MaxOpenFiles = 1 << 20
)

// Validate checks c with its defaults applied, as New does: it is the one
// place the lab's configuration rules live. The error, when there is one,
// is a field.ErrorList's aggregate (k8s.io/apimachinery/pkg/util/errors)
// whose errors are *field.Error, each naming the Config field it is about
// (Nodes, CloudLatency, ...) and, in its detail, any other field by its
// name too, so that cmd/ccmlab can say the same with flag names.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate().ToAggregate()
}

func (c *Config) validate() field.ErrorList {
	var errs field.ErrorList
	if c.DataDir == "" {
		errs = append(errs, field.Required(field.NewPath("DataDir"), ""))
	}
	if c.Profile.Name == "" {
		errs = append(errs, field.Required(field.NewPath("Profile"), ""))
	}
	for i, name := range c.Controllers {
		if c.Profile.Name != "" && !c.Profile.Has(name) {
			errs = append(errs, field.Invalid(field.NewPath("Controllers").Index(i), name, fmt.Sprintf("the %s profile has no %s controller", c.Profile.Name, name)))
		}
	}
	for i, a := range c.Addons {
		if a != ccmnames.AddonLBC {
			errs = append(errs, field.Invalid(field.NewPath("Addons").Index(i), a, "unknown add-on (valid: "+ccmnames.AddonLBC+")"))
		} else if c.Kubeconfig != "" {
			// The controller's webhooks are called by the apiserver on
			// the lab's cluster network, which an attached cluster's
			// apiserver cannot reach.
			errs = append(errs, field.Invalid(field.NewPath("Addons").Index(i), a, "the lbc add-on needs the embedded control plane: an attached cluster's apiserver (Kubeconfig) cannot reach the AWS Load Balancer Controller's webhooks in the lab"))
		}
	}
	if c.Nodes < 0 || c.Nodes > MaxNodes {
		errs = append(errs, field.Invalid(field.NewPath("Nodes"), c.Nodes, fmt.Sprintf("must be between 0 and %d", MaxNodes)))
	}
	if c.CloudLatency < 0 || c.CloudLatency > cloud.MaxLatency {
		errs = append(errs, field.Invalid(field.NewPath("CloudLatency"), c.CloudLatency, fmt.Sprintf("must be between 0 and %s", cloud.MaxLatency)))
	}
	if c.Verbosity < 0 {
		errs = append(errs, field.Invalid(field.NewPath("Verbosity"), c.Verbosity, "must not be negative"))
	}
	if c.MemoryLimit != 0 && c.MemoryLimit < MinMemoryLimit {
		errs = append(errs, field.Invalid(field.NewPath("MemoryLimit"), resource.NewQuantity(c.MemoryLimit, resource.BinarySI).String(), fmt.Sprintf("must be 0 (none) or at least %d MiB: an idle lab's runtime holds about 150 MB", MinMemoryLimit>>20)))
	}
	if c.MaxOpenFiles != 0 && (c.MaxOpenFiles < MinOpenFiles || c.MaxOpenFiles > MaxOpenFiles) {
		errs = append(errs, field.Invalid(field.NewPath("MaxOpenFiles"), c.MaxOpenFiles, fmt.Sprintf("must be 0 (as inherited) or between %d and %d", MinOpenFiles, MaxOpenFiles)))
	}
	errs = append(errs, c.validateHTTP()...)
	if c.AWSListen != "" {
		if err := awsapi.ValidateListen(c.AWSListen); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("AWSListen"), c.AWSListen, err.Error()))
		}
	}
	errs = append(errs, validateAWSProvider(field.NewPath("AWSProvider"), c.AWSProvider, c.Profile)...)
	if c.BareAPIServer && c.BareControlPlane {
		errs = append(errs, field.Forbidden(field.NewPath("BareControlPlane"), "excludes BareAPIServer (one baseline at a time)"))
	}
	switch {
	case c.Kubeconfig == "" && c.ClusterCIDR != "":
		errs = append(errs, field.Forbidden(field.NewPath("ClusterCIDR"), "only applies with Kubeconfig (the embedded control plane chooses its own)"))
	case c.Kubeconfig != "":
		if c.BareAPIServer {
			errs = append(errs, field.Forbidden(field.NewPath("BareAPIServer"), "excludes Kubeconfig (an attached cluster has its own apiserver)"))
		}
		if c.BareControlPlane {
			errs = append(errs, field.Forbidden(field.NewPath("BareControlPlane"), "excludes Kubeconfig (an attached cluster has its own control plane)"))
		}
		if err := validateClusterCIDR(field.NewPath("ClusterCIDR"), c.ClusterCIDR); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// validateHTTP checks what the lab's HTTP side is reached by: a lab that
// listens beyond loopback takes a token nobody guesses.
func (c *Config) validateHTTP() field.ErrorList {
	var errs field.ErrorList
	if c.Token != "" && len(c.Token) < MinTokenLen {
		// TooShort does not print the value: a token stays out of logs.
		e := field.TooShort(field.NewPath("Token"), c.Token, MinTokenLen)
		e.Detail = fmt.Sprintf("use at least %d characters (a random one: openssl rand -hex 16)", MinTokenLen)
		errs = append(errs, e)
	}
	for i, h := range c.AllowedHosts {
		if err := httpguard.ValidateHost(h); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("AllowedHosts").Index(i), h, err.Error()))
		}
	}
	if c.Listen == "" {
		return errs
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return append(errs, field.Invalid(field.NewPath("Listen"), c.Listen, err.Error()))
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && c.Token == "" {
		errs = append(errs, field.Invalid(field.NewPath("Listen"), c.Listen, "reachable from other machines: set Token so only your class can switch the lab"))
	}
	return errs
}

func validateAWSProvider(p *field.Path, provider string, prof profile.Profile) field.ErrorList {
	switch provider {
	case "", AWSProviderLab:
		return nil
	case AWSProviderUpstream:
		if prof.Name != "" && !sim.UpstreamAWSProfile(prof) {
			return field.ErrorList{field.Invalid(p, provider, fmt.Sprintf("the upstream AWS provider needs Profile aws or vpc-cni, not %q", prof.Name))}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(p, provider, []string{AWSProviderLab, AWSProviderUpstream})}
}

// validateClusterCIDR checks the Pod network of an attached cluster: the
// lab cuts a /24 per node from it, on IPv4 only.
func validateClusterCIDR(p *field.Path, v string) *field.Error {
	ip, n, err := net.ParseCIDR(v)
	switch {
	case err != nil:
		return field.Invalid(p, v, "not an IPv4 CIDR such as "+DefaultAttachedClusterCIDR)
	case ip.To4() == nil:
		return field.Invalid(p, v, "only IPv4 Pod networks are simulated")
	}
	if ones, _ := n.Mask.Size(); ones > 24 {
		return field.Invalid(p, v, "too small to cut a /24 per node from")
	}
	return nil
}
