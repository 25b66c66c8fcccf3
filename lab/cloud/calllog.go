package cloud

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call states. A call is logged when it starts so the page can show it in
// flight (sleeping for latency, or held in step mode), and rewritten in
// place, under the same Seq, when it ends.
const (
	CallWaiting = "waiting" // held in step mode until Release
	CallRunning = "running" // in flight: latency, checks, execution
	CallDone    = "done"    // finished; Result or Error is set
)

// Call is one entry of the call log: the lab's CloudTrail.
type Call struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"` // when the call started
	// Service is the AWS API the call came through (ServiceEC2,
	// ServiceELB, ServiceELBv2), or "" for the lab's own Go API.
	Service string `json:"service,omitempty"`
	Action  string `json:"action"`
	// Caller is the identity from WithCaller, or "unknown".
	Caller string `json:"caller"`
	// Method is the cloudprovider.Interface method whose work this call
	// is (WithMethod), e.g. "LoadBalancer.EnsureLoadBalancer"; empty for
	// calls no CCM controller made.
	Method string `json:"method,omitempty"`
	// Request is a short human summary of the arguments, e.g.
	// "name=a1b2c3 listeners=80->31234/TCP".
	Request string `json:"request"`
	// Resources names what the call addressed (LB names, instance IDs or
	// private DNS names, route CIDRs), so a watcher can tie a call to the
	// object it is about without parsing Request.
	Resources []string `json:"resources,omitempty"`
	Result    string   `json:"result,omitempty"`
	Error     string   `json:"error,omitempty"`
	ErrorCode string   `json:"errorCode,omitempty"`
	// Duration is measured on the cloud's clock, so it includes injected
	// latency and time spent held in step mode.
	Duration time.Duration `json:"durationNs"`
	State    string        `json:"state"`
}

// callLog is a ring buffer indexed by Seq. Sequence numbers are handed out
// with no gaps, so the slot of a call is Seq mod size and both appending and
// rewriting a finished call are O(1).
type callLog struct {
	mu    sync.Mutex
	ring  []Call
	first uint64 // oldest Seq ever stored in this process (after a restart Seq continues)
	last  uint64 // newest Seq handed out
}

func newCallLog(size int, lastSeq uint64) *callLog {
	return &callLog{ring: make([]Call, size), first: lastSeq + 1, last: lastSeq}
}

func (l *callLog) append(c Call) Call {
	l.mu.Lock()
	l.last++
	c.Seq = l.last
	l.ring[c.Seq%uint64(len(l.ring))] = c
	l.mu.Unlock()
	return c
}

// put rewrites a call that is still in the ring. A call held longer than the
// ring takes to wrap has been evicted; it is then only seen through events.
func (l *callLog) put(c Call) {
	l.mu.Lock()
	if c.Seq >= l.lowest() {
		l.ring[c.Seq%uint64(len(l.ring))] = c
	}
	l.mu.Unlock()
}

func (l *callLog) lowest() uint64 {
	lo := l.first
	if size := uint64(len(l.ring)); l.last >= size && l.last-size+1 > lo {
		lo = l.last - size + 1
	}
	return lo
}

func (l *callLog) since(seq uint64) []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo := max(seq+1, l.lowest())
	if lo > l.last {
		return nil
	}
	out := make([]Call, 0, l.last-lo+1)
	for s := lo; s <= l.last; s++ {
		out = append(out, l.ring[s%uint64(len(l.ring))])
	}
	return out
}

func (l *callLog) lastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Calls returns the logged calls with Seq > sinceSeq, oldest first, as far
// back as the ring reaches. Calls still in flight are included with State
// "waiting" or "running" and are later rewritten under the same Seq, so a
// poller that wants to see them finish should poll again from just below the
// oldest unfinished Seq it holds (or use Subscribe).
func (c *Cloud) Calls(sinceSeq uint64) []Call {
	return c.log.since(sinceSeq)
}

// maxListed keeps request summaries to one readable line even when a
// controller registers a thousand targets at once.
const maxListed = 5

// summarize renders a list for a call summary: "a,b,c +7 more".
func summarize(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	if len(items) <= maxListed {
		return strings.Join(items, ",")
	}
	return strings.Join(items[:maxListed], ",") + " +" + strconv.Itoa(len(items)-maxListed) + " more"
}
