package labapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Faults is what an instructor injects to show how controllers cope with an
// unhelpful cloud. It is the JSON body of GET/PUT /api/cloud/faults.
type Faults struct {
	// Deny lists actions the CCM's IAM role may not perform (AccessDenied).
	Deny []string `json:"deny"`
	// Latency is added to every call, slept on the cloud's clock; at most
	// MaxLatency.
	Latency Duration `json:"latency"`
	// QPS and Burst form one token bucket shared by all actions; QPS 0 means
	// unlimited. With QPS > 0 and Burst 0, Burst becomes ceil(QPS). QPS is
	// at most MaxQPS, Burst at most MaxBurst.
	QPS   float64 `json:"qps"`
	Burst int     `json:"burst"`
	// FailNext maps an action to how many of its next calls fail with
	// InternalFailure; counts go down as calls consume them.
	FailNext map[string]int `json:"failNext,omitempty"`
}

// Bounds of Faults. Every call sleeps the latency while holding a
// controller's worker, so a latency of hours freezes the lab rather than
// slowing it down; a minute is already longer than any demonstration needs.
// Above 1,000 calls per second the lab's controllers are never throttled, so
// a larger QPS or Burst only hides a typo. A tiny QPS stays allowed: a
// throttled call fails at once, it does not wait for a token.
const (
	MaxLatency = time.Minute
	MaxQPS     = 1000
	MaxBurst   = 1000
)

// Duration is a time.Duration that reads and writes JSON as "2s", the form
// instructors type.
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s: want a string like \"2s\" or \"500ms\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a string like \"2s\" or \"500ms\"", s)
	}
	d.Duration = v
	return nil
}

// A lab's defaults that the classroom shows an instructor (LabOptions'
// Describe): lab/cloud's listener-socket quota and lab/controlplane's etcd
// backend quota take their values from here.
const (
	// DefaultListenerSockets is the cloud's quota of load balancer
	// listener sockets (lab/cloud Quotas.ListenerSockets).
	DefaultListenerSockets = 100
	// DefaultEtcdQuotaBytes is a lab's etcd backend quota
	// (lab/controlplane Config.EtcdQuotaBytes).
	DefaultEtcdQuotaBytes = 256 << 20
)
