package stream

import (
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
)

// Message is the data of one stream message; Type is the envelope's
// "type" it travels under.
type Message interface {
	Type() string
}

// The envelope types. Every change carries whole objects, never deltas, so
// applying a message twice, or after a snapshot that already holds it, is
// harmless.
const (
	TypeSnapshot = labapi.TypeSnapshot
	TypeBye      = labapi.TypeBye
	// The flow observer's kinds travel under the names lab/flow gives them
	// (the flows' are labapi's too: TestFlowTypesAreLabAPIs).
	TypeNode        = string(flow.KindNode)
	TypePod         = string(flow.KindPod)
	TypeService     = string(flow.KindService)
	TypeEvent       = string(flow.KindEvent)
	TypeServiceFlow = string(flow.KindServiceFlow)
	TypeNodeFlow    = string(flow.KindNodeFlow)
	TypeCall        = "call"
	TypeCloud       = "cloud"
	TypeFaults      = "faults"
	TypeStepMode    = "stepmode"
	TypeControllers = "controllers"
	TypeListeners   = "listeners"
	TypeTrace       = "trace"
	TypeExercise    = labapi.TypeExercise
	TypeManagement  = "management"
)

// Types lists every envelope type, in the order docs/protocol.md gives
// them.
func Types() []string {
	return []string{
		TypeSnapshot, TypeBye, TypeNode, TypePod, TypeService, TypeEvent, TypeServiceFlow, TypeNodeFlow,
		TypeCall, TypeCloud, TypeFaults, TypeStepMode, TypeControllers, TypeListeners, TypeTrace,
		TypeExercise, TypeManagement,
	}
}

// Snapshot is the whole state: the first message of a fresh connection,
// and what GET /api/state answers.
type Snapshot struct {
	// Epoch names the lab's run; a resuming client sends it back.
	Epoch string `json:"epoch"`
	// Seq is the last message published before the snapshot was taken.
	Seq         uint64      `json:"seq"`
	Profile     Profile     `json:"profile"`
	Controllers Controllers `json:"controllers"`
	Cloud       CloudState  `json:"cloud"`
	// Traces are the most recent requests through the data plane, oldest
	// first (at most RecentTraces), so a page opened after a request sent
	// with curl still shows its path.
	Traces []Trace `json:"traces"`
	// Management is the kubevirt profile's management cluster; nil (left
	// out) in a lab without one.
	Management *Management `json:"management,omitempty"`
	flow.Snapshot
}

// RecentTraces is how many traces a snapshot carries.
const RecentTraces = 20

func (Snapshot) Type() string { return TypeSnapshot }

// Profile is the cloud profile the lab runs.
type Profile struct {
	Name        string   `json:"name"`
	Controllers []string `json:"controllers"`
	IngressIP   bool     `json:"ingressIP"`
	Description string   `json:"description"`
}

// CloudState is the cloud's part of the snapshot.
type CloudState struct {
	cloud.State
	Faults    Faults       `json:"faults"`
	StepMode  bool         `json:"stepMode"`
	Waiting   []cloud.Call `json:"waiting"`
	Calls     []cloud.Call `json:"calls"` // the most recent ones; the rest is at /api/cloud/calls
	Listeners Listeners    `json:"listeners"`
	Region    string       `json:"region"`
	// HealthCheckTimeScale is how many times faster than AWS's the data
	// plane runs health checks (dataplane.Config.HealthCheckTimeScale);
	// 0 without a data plane.
	HealthCheckTimeScale int `json:"healthCheckTimeScale,omitempty"`
}

// Bye is the hub's last message before it shuts down.
type Bye struct {
	Reason string `json:"reason"`
}

func (Bye) Type() string { return TypeBye }

// Op is what a change did to the object under its key: the flow
// observer's ops, reused by every change message (the cloud's too).
const (
	OpUpsert = string(flow.OpUpsert)
	OpDelete = string(flow.OpDelete)
)

// Change is a Kubernetes-side object (or a flow derived from them) that
// appeared, changed or went away: one type per kind, so each message says
// what its data is.
type Change[T any] = labapi.Change[T]

// The changes the flow observer reports, one per envelope type.
type (
	NodeChange        = Change[flow.NodeView]
	PodChange         = Change[flow.PodView]
	ServiceChange     = Change[flow.ServiceView]
	EventChange       = Change[flow.EventView]
	ServiceFlowChange = Change[flow.ServiceFlow]
	NodeFlowChange    = Change[flow.NodeFlow]
)

// Call is one cloud API call, sent when it starts and again when it ends
// (same seq: the later one replaces the earlier).
type Call cloud.Call

func (Call) Type() string { return TypeCall }

// Cloud resources travel as type "cloud", told apart by Kind.
const (
	KindInstance     = "instance"
	KindLoadBalancer = "loadbalancer"
	KindRoutes       = "routes"
)

// InstanceChange is an instance launched, changed or gone.
type InstanceChange struct {
	Kind   string          `json:"kind"` // always "instance"
	Op     string          `json:"op"`
	ID     string          `json:"id"`
	Object *cloud.Instance `json:"object,omitempty"` // absent on delete
}

func (InstanceChange) Type() string { return TypeCloud }

// LoadBalancerChange is a load balancer created, changed or deleted.
type LoadBalancerChange struct {
	Kind   string              `json:"kind"` // always "loadbalancer"
	Op     string              `json:"op"`
	ID     string              `json:"id"` // the load balancer's name
	Object *cloud.LoadBalancer `json:"object,omitempty"`
}

func (LoadBalancerChange) Type() string { return TypeCloud }

// RoutesChange is the whole route table after any change to it.
type RoutesChange struct {
	Kind   string        `json:"kind"` // always "routes"
	Routes []cloud.Route `json:"routes"`
}

func (RoutesChange) Type() string { return TypeCloud }

// Faults is what the instructor injected into the cloud.
type Faults cloud.Faults

func (Faults) Type() string { return TypeFaults }

// StepMode says whether cloud calls are held, and which wait.
type StepMode struct {
	Enabled bool         `json:"enabled"`
	Waiting []cloud.Call `json:"waiting"`
}

func (StepMode) Type() string { return TypeStepMode }

// Controllers maps each CCM controller of the profile to whether it runs.
type Controllers map[string]bool

func (Controllers) Type() string { return TypeControllers }

// Listener is a load balancer's real listener on loopback.
type Listener struct {
	LB      string `json:"lb"`
	Port    int32  `json:"port"`
	Address string `json:"address"`
}

// Listeners is the whole set of listeners after it changed.
type Listeners []Listener

func (Listeners) Type() string { return TypeListeners }

// Trace is one request's path through the data plane.
type Trace dataplane.Trace

func (Trace) Type() string { return TypeTrace }

// Exercise says an exercise was checked, reset or answered: its progress
// may have changed. Followers (the classroom's dashboard) re-read
// GET /api/exercises rather than polling it.
type Exercise = labapi.Exercise

// Management is the kubevirt profile's management cluster as the map
// draws it (docs/architecture.md, "The management side"): the CCM's
// Deployment there, outside the tenant, and one VMI per VM. Sent whole
// whenever it changes.
type Management struct {
	// Namespace is the tenant's namespace in the management cluster.
	Namespace string          `json:"namespace"`
	CCM       ManagementCCM   `json:"ccm"`
	VMIs      []ManagementVMI `json:"vmis"`
}

func (Management) Type() string { return TypeManagement }

// ManagementCCM is the CCM's Deployment in the management cluster.
type ManagementCCM struct {
	Deployment string `json:"deployment"`
	// Ready is its ready replicas (0 or 1).
	Ready int32 `json:"ready"`
	// Pod and Node are its running Pod and the management node it is on
	// ("" while none runs).
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Controllers is the value of its --controllers flag.
	Controllers string `json:"controllers"`
}

// ManagementVMI is one VirtualMachineInstance: a tenant node's VM.
type ManagementVMI struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	IP    string `json:"ip"`
	// Node is the management node its VM runs on (status.nodeName).
	Node string `json:"node"`
}
