// Package profile describes the kinds of cloud a lab can imitate. A profile
// decides which CCM controllers exist, what the cloud hands back as a load
// balancer's address, how providerIDs look and where Pod IPs come from. The
// table is explained in docs/architecture.md ("Profiles"); every component
// reads it from here so they cannot disagree.
package profile

import (
	"fmt"
	"sort"
	"strings"
)

// Controller names as used by --controllers, the API and the web view.
const (
	Node          = "node"
	NodeLifecycle = "nodelifecycle"
	Route         = "route"
	Service       = "service"
)

// AllControllers in the order the page shows them.
var allControllers = []string{Node, NodeLifecycle, Route, Service}

// AllControllers returns every CCM controller name ccmlab knows.
func AllControllers() []string { return append([]string(nil), allControllers...) }

// Profile is one row of the profile table.
type Profile struct {
	Name string
	// Controllers are the CCM controllers this cloud's CCM has at all. A
	// controller that is absent cannot be switched on (kubevirt has no
	// Service controller, like the chapter's hands-on cluster).
	Controllers []string
	// DefaultOn are the controllers enabled at start when --controllers is
	// not given.
	DefaultOn []string
	// IngressIP: load balancers get an IP rather than a DNS name.
	IngressIP bool
	// PodIPsFromVPC: Pods get addresses from the VPC (Amazon VPC CNI), so
	// no routes are needed.
	PodIPsFromVPC bool
	// ProviderName is what cloudprovider.Interface.ProviderName returns and
	// the scheme of providerIDs ("aws:///zone/i-..." or "kubevirt://name").
	ProviderName string
	// Description is shown in --help and the web view.
	Description string
}

// Has reports whether the profile's CCM has the named controller.
func (p Profile) Has(controller string) bool {
	for _, c := range p.Controllers {
		if c == controller {
			return true
		}
	}
	return false
}

var profiles = map[string]Profile{
	"aws": {
		Name: "aws", ProviderName: "aws",
		Controllers: []string{Node, NodeLifecycle, Route, Service},
		DefaultOn:   []string{Node, NodeLifecycle, Route, Service},
		Description: "AWS-shaped cloud: instance-mode load balancers with DNS names, aws:///zone/i-... providerIDs",
	},
	"kubevirt": {
		Name: "kubevirt", ProviderName: "kubevirt",
		Controllers: []string{Node, NodeLifecycle},
		DefaultOn:   []string{Node, NodeLifecycle},
		Description: "the chapter's hands-on cluster: a Node controller but no Service controller, so EXTERNAL-IP stays <pending>",
	},
	"vpc-cni": {
		Name: "vpc-cni", ProviderName: "aws", PodIPsFromVPC: true,
		Controllers: []string{Node, NodeLifecycle, Route, Service},
		DefaultOn:   []string{Node, NodeLifecycle, Service},
		Description: "Pods get VPC addresses (Amazon VPC CNI), so the Route controller is not used",
	},
	"ip": {
		Name: "ip", ProviderName: "aws", IngressIP: true,
		Controllers: []string{Node, NodeLifecycle, Route, Service},
		DefaultOn:   []string{Node, NodeLifecycle, Route, Service},
		Description: "load balancers answer with an IP address (GCP or MetalLB style)",
	},
}

// Names lists the profiles, sorted.
func Names() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns the named profile or an error listing the valid names.
func Get(name string) (Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	p.Controllers = append([]string(nil), p.Controllers...)
	p.DefaultOn = append([]string(nil), p.DefaultOn...)
	return p, nil
}

// ParseControllers turns a --controllers value into the set to enable:
// "" means the profile's default, "none" means nothing, otherwise a comma
// list of names the profile has.
func (p Profile) ParseControllers(value string) ([]string, error) {
	value = strings.TrimSpace(value)
	switch value {
	case "":
		return append([]string(nil), p.DefaultOn...), nil
	case "none":
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, part := range strings.Split(value, ",") {
		name := strings.TrimSpace(part)
		switch {
		case name == "":
			return nil, fmt.Errorf("--controllers %q: empty name", value)
		case name == "none":
			return nil, fmt.Errorf("--controllers %q: \"none\" cannot be combined with other names", value)
		case !contains(allControllers, name):
			return nil, fmt.Errorf("--controllers %q: unknown controller %q (valid: %s, or none)", value, name, strings.Join(allControllers, ","))
		case !p.Has(name):
			return nil, fmt.Errorf("--controllers %q: the %s profile has no %s controller", value, p.Name, name)
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
