package kubevirt

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// GVR is the VMI resource.
var GVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}

// InstanceTypeAnnotation names a VMI's instancetype; the provider reports
// it as the Node's instance type.
const InstanceTypeAnnotation = "kubevirt.io/instancetype-name"

// DefaultInstanceType is the instancetype the lab's VMIs name (one of
// KubeVirt's common-instancetypes, U series).
const DefaultInstanceType = "u1.medium"

// Phases of a VMI the lab uses (kubevirt.io/api core/v1 VirtualMachineInstancePhase).
const (
	PhaseScheduling = "Scheduling"
	PhaseRunning    = "Running"
	PhaseSucceeded  = "Succeeded"
	PhaseFailed     = "Failed"
)

// DefaultInterface is the name of the pod-network interface whose
// addresses are the VM's InternalIP.
const DefaultInterface = "default"

// VMI is the part of a VirtualMachineInstance the lab writes and reads.
type VMI struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VMISpec   `json:"spec"`
	Status            VMIStatus `json:"status,omitempty"`
}

// VMISpec: the guest's hostname, which the provider falls back to.
type VMISpec struct {
	Hostname string `json:"hostname,omitempty"`
	// Domain is required by KubeVirt; the lab keeps it empty.
	Domain map[string]any `json:"domain"`
}

// VMIStatus is what KubeVirt reports of a running VM.
type VMIStatus struct {
	Phase      string         `json:"phase,omitempty"`
	NodeName   string         `json:"nodeName,omitempty"`
	Interfaces []VMIInterface `json:"interfaces,omitempty"`
	Conditions []VMICondition `json:"conditions,omitempty"`
}

// VMIInterface is one network interface of the guest.
type VMIInterface struct {
	Name        string   `json:"name,omitempty"`
	IPAddress   string   `json:"ipAddress,omitempty"`
	IPAddresses []string `json:"ipAddresses,omitempty"`
}

// VMICondition is one condition (Ready).
type VMICondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// FromUnstructured reads a VMI from the dynamic client's object.
func FromUnstructured(obj map[string]any) (*VMI, error) {
	v := &VMI{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ToUnstructured is the VMI as the dynamic client sends it.
func (v *VMI) ToUnstructured() (map[string]any, error) {
	v.APIVersion, v.Kind = "kubevirt.io/v1", "VirtualMachineInstance"
	return runtime.DefaultUnstructuredConverter.ToUnstructured(v)
}

// InternalIPs are the addresses of the "default" interface, as the
// provider reports them.
func (v *VMI) InternalIPs() []string {
	for _, i := range v.Status.Interfaces {
		if i.Name == DefaultInterface {
			return i.IPAddresses
		}
	}
	return nil
}

// CRD is the VMI CustomResourceDefinition as KubeVirt installs it (names,
// scope, printer columns; no status subresource), with a schema that
// keeps every field rather than KubeVirt's full one.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	col := func(name, typ, path string, prio int32) apiextensionsv1.CustomResourceColumnDefinition {
		return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: path, Priority: prio}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: GVR.Resource + "." + GVR.Group, Labels: map[string]string{"kubevirt.io": ""}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: GVR.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "virtualmachineinstances", Singular: "virtualmachineinstance", Kind: "VirtualMachineInstance",
				ShortNames: []string{"vmi", "vmis"}, Categories: []string{"all"},
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: GVR.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					col("Age", "date", ".metadata.creationTimestamp", 0),
					col("Phase", "string", ".status.phase", 0),
					col("IP", "string", ".status.interfaces[0].ipAddress", 0),
					col("NodeName", "string", ".status.nodeName", 0),
					col("Ready", "string", ".status.conditions[?(@.type=='Ready')].status", 0),
					col("Live-Migratable", "string", ".status.conditions[?(@.type=='LiveMigratable')].status", 1),
					col("Paused", "string", ".status.conditions[?(@.type=='Paused')].status", 1),
				},
			}},
		},
	}
}
