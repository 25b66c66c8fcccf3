package profile

import (
	"fmt"
	"strings"
)

// Machine is what a providerID names: the VM a Node runs on.
type Machine struct {
	Zone       string // e.g. ap-northeast-1a
	InstanceID string // e.g. i-0123456789abcdef0
	NodeName   string // the Node's name (the VM's private DNS name)
}

// kubevirt names VMs after their nodes; every other profile is AWS-shaped.
func (p Profile) namesByNode() bool { return p.ProviderName == "kubevirt" }

// ProviderID is the spec.providerID a Node on m gets:
// "aws:///<zone>/<instance-id>" or, in the kubevirt profile,
// "kubevirt://<node-name>". The CCM writes it and the exercises check it,
// so both ask this one function.
func (p Profile) ProviderID(m Machine) string {
	if p.namesByNode() {
		return p.ProviderName + "://" + m.NodeName
	}
	return fmt.Sprintf("%s:///%s/%s", p.ProviderName, m.Zone, m.InstanceID)
}

// ParseProviderID reads back what ProviderID writes, plus the short
// "aws://i-..." form some tools write. It fills InstanceID (aws) or
// NodeName (kubevirt); Zone is left empty, as the short form has none.
func (p Profile) ParseProviderID(providerID string) (Machine, error) {
	rest, ok := strings.CutPrefix(providerID, p.ProviderName+"://")
	if !ok || rest == "" {
		return Machine{}, fmt.Errorf("providerID %q: want %q", providerID, p.ProviderIDPattern())
	}
	if p.namesByNode() {
		return Machine{NodeName: rest}, nil
	}
	id := rest[strings.LastIndexByte(rest, '/')+1:]
	if !strings.HasPrefix(id, "i-") {
		return Machine{}, fmt.Errorf("providerID %q: want %q", providerID, p.ProviderIDPattern())
	}
	return Machine{InstanceID: id}, nil
}

// ProviderIDPattern describes the profile's providerIDs, for messages.
func (p Profile) ProviderIDPattern() string {
	if p.namesByNode() {
		return p.ProviderName + "://<node-name>"
	}
	return p.ProviderName + ":///<zone>/<instance-id>"
}
