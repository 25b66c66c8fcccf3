package history

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// DefaultSize is how many entries a Recorder keeps unless told otherwise:
// a classroom exercise of a few minutes on a 3-node lab records a few
// hundred.
const DefaultSize = 4096

// Entry kinds.
const (
	KindMark   = "mark"   // a reader's starting point, e.g. an exercise reset
	KindObject = "object" // a Kubernetes object was created, changed or deleted
	KindCall   = "call"   // a cloud API call finished
	KindSwitch = "switch" // a controller or add-on was switched on or off
	KindFaults = "faults" // the injected cloud faults changed
	KindTrace  = "trace"  // a data-plane request
	KindAnswer = "answer" // a student typed an answer
)

// Object verbs.
const (
	VerbCreated = "created"
	VerbUpdated = "updated"
	VerbDeleted = "deleted"
)

// Entry is one thing that happened. Exactly one of the pointers matching
// Kind is set.
type Entry struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Off lists the controllers and add-ons that were switched off when
	// the entry was recorded, sorted (shared: do not modify).
	Off []string `json:"off,omitempty"`

	Mark   string           `json:"mark,omitempty"`
	Object *ObjectChange    `json:"object,omitempty"`
	Call   *cloud.Call      `json:"call,omitempty"`
	Switch *Switch          `json:"switch,omitempty"`
	Faults *cloud.Faults    `json:"faults,omitempty"`
	Trace  *dataplane.Trace `json:"trace,omitempty"`
	Answer *Answer          `json:"answer,omitempty"`
}

// WasOff says whether the controller was switched off when e was recorded.
func (e Entry) WasOff(controller string) bool {
	_, ok := slices.BinarySearch(e.Off, controller)
	return ok
}

// ObjectChange is a Kubernetes object's change. Old and New are the
// informer's objects (shared: do not modify); Old is nil for a creation,
// New is nil for a deletion.
type ObjectChange struct {
	// Resource is "nodes", "services", "pods" or "events".
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Verb      string `json:"verb"`
	// Managers are the field managers that wrote this change (see the
	// package doc), sorted; empty when no manager can be named.
	Managers []string       `json:"managers,omitempty"`
	Old      runtime.Object `json:"-"`
	New      runtime.Object `json:"-"`
}

// By says whether manager is one of the writers.
func (o *ObjectChange) By(manager string) bool { return slices.Contains(o.Managers, manager) }

// Switch is a controller switched on or off.
type Switch struct {
	Controller string `json:"controller"`
	On         bool   `json:"on"`
}

// Answer is an answer a student typed for an exercise step.
type Answer struct {
	Exercise string `json:"exercise"`
	Step     string `json:"step"`
	Value    string `json:"value"`
	Correct  bool   `json:"correct"`
}

// Config configures a Recorder.
type Config struct {
	// Size is how many entries are kept. Default DefaultSize.
	Size int
	// Clock stamps entries. Default the real clock.
	Clock clock.PassiveClock
}

func (c *Config) setDefaults() {
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

func (c *Config) validate() error {
	if c.Size < 16 || c.Size > 1<<20 {
		return fmt.Errorf("history: size %d must be between 16 and %d", c.Size, 1<<20)
	}
	return nil
}

// Recorder is the bounded, numbered record. All methods are safe for
// concurrent use.
type Recorder struct {
	cfg  Config
	mu   sync.Mutex
	ring []Entry
	last uint64 // newest Seq handed out
	off  []string
	subs map[chan struct{}]struct{}
}

// New builds an empty Recorder.
func New(cfg Config) (*Recorder, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Recorder{cfg: cfg, ring: make([]Entry, cfg.Size), subs: map[chan struct{}]struct{}{}}, nil
}

// Size is how many entries the ring keeps.
func (r *Recorder) Size() int { return r.cfg.Size }

// SetSwitches tells the Recorder which controllers are on, without
// recording a switch: the state it stamps entries with (Entry.Off) until
// the next Record of a KindSwitch.
func (r *Recorder) SetSwitches(status map[string]bool) {
	var off []string
	for name, on := range status {
		if !on {
			off = append(off, name)
		}
	}
	sort.Strings(off)
	r.mu.Lock()
	r.off = off
	r.mu.Unlock()
}

// Record numbers e, stamps its time (unless set) and the switches, keeps
// it and wakes the subscribers. It returns the stored entry.
func (r *Recorder) Record(e Entry) Entry {
	r.mu.Lock()
	if e.Kind == KindSwitch && e.Switch != nil {
		off := slices.DeleteFunc(slices.Clone(r.off), func(s string) bool { return s == e.Switch.Controller })
		if !e.Switch.On {
			off = append(off, e.Switch.Controller)
			sort.Strings(off)
		}
		r.off = off
	}
	r.last++
	e.Seq = r.last
	if e.Time.IsZero() {
		e.Time = r.cfg.Clock.Now()
	}
	e.Off = r.off
	r.ring[e.Seq%uint64(len(r.ring))] = e
	for ch := range r.subs {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	r.mu.Unlock()
	return e
}

// Mark records a mark named name and returns its Seq: entries after it
// are what happened since.
func (r *Recorder) Mark(name string) uint64 {
	return r.Record(Entry{Kind: KindMark, Mark: name}).Seq
}

// Last is the newest Seq (0 before the first entry).
func (r *Recorder) Last() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// ErrTruncated says that entries after the asked Seq were dropped from the
// ring: what remains is not the whole story.
var ErrTruncated = errors.New("history: older entries were dropped (the ring is full)")

// Since returns the entries with Seq > seq, oldest first, and
// ErrTruncated (with what is left) when some of them were dropped.
func (r *Recorder) Since(seq uint64) ([]Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := uint64(len(r.ring))
	lo := seq + 1
	var err error
	if r.last >= size && r.last-size+1 > lo {
		lo, err = r.last-size+1, ErrTruncated
	}
	if lo > r.last {
		return nil, err
	}
	out := make([]Entry, 0, r.last-lo+1)
	for s := lo; s <= r.last; s++ {
		out = append(out, r.ring[s%size])
	}
	return out, err
}

// Subscribe returns a channel that receives a value after new entries
// were recorded (wake-ups coalesce: one value may stand for many entries)
// and a cancel func.
func (r *Recorder) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	r.subs[ch] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.subs, ch)
			r.mu.Unlock()
		})
	}
}

// runtimeObject is what informers hand out.
type runtimeObject = runtime.Object
