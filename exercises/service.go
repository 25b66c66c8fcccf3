package exercises

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// Errors the server maps to HTTP statuses.
var (
	// ErrNotFound: no exercise or question with that id (404).
	ErrNotFound = errors.New("not found")
	// ErrBadInput: a malformed request, e.g. a choice out of range, an
	// unknown language or a console line that is not an allowed kubectl
	// command (400).
	ErrBadInput = errors.New("bad input")
	// ErrUnavailable: the exercise needs a profile, controller or add-on
	// this lab does not have (409).
	ErrUnavailable = errors.New("exercise not available in this lab")
	// ErrNotCurrent: an answer for a step that is not the current one
	// (locked behind an earlier step, or already passed) (409).
	ErrNotCurrent = errors.New("not the current step")
)

// Config wires a Service to the lab.
type Config struct {
	Env   check.Env
	Store *progress.Store
	// Nodes is how many nodes the lab runs (--nodes); Reset makes sure at
	// least this many instances run unless an exercise asks for another
	// number. Default 3.
	Nodes int
	// SettleTimeout bounds how long Reset waits for the lab to settle
	// (objects gone, nodes Ready and initialized). Default 60s.
	SettleTimeout time.Duration
	Logger        *slog.Logger
	// Now is the clock progress is stamped with. Default time.Now.
	Now func() time.Time
	// OnProgress is told the id of an exercise whose progress changed
	// without an API call: a step passed by the automatic check (Run).
	// Optional; it must not block.
	OnProgress func(id string)
	// AutoCheckDelay is how long Run waits after the lab changed before
	// checking (changes in that time are checked together). Default 300ms.
	AutoCheckDelay time.Duration
	// Addr is the host:port the lab's API answers on, as a student types
	// it (`curl -s <Addr>/api/...`). The exercises are written for the
	// default, localhost:8080; commands shown are rewritten to Addr.
	// Default "localhost:8080".
	Addr string
	// DataDir is the lab's data dir (--data-dir). Commands shown name it
	// where the exercises write the default .ccmlab (`. .ccmlab/aws.env`),
	// made absolute so they run from any directory; Detail.Shell is the
	// line that sources its lab.env. Empty: commands as written, no Shell.
	DataDir string
	// RestoreSystem puts kube-system's add-ons (CoreDNS, kube-dns,
	// kube-proxy, aws-node) back where a student took them away, so the
	// next exercise's names resolve (sim.Sim.RestoreKubeSystem); nil: a
	// lab without them.
	RestoreSystem func(context.Context) error
	// LBCServiceWebhook switches the lbc add-on's Service webhook (the
	// AWS Load Balancer Controller's mutator that gives every new
	// LoadBalancer Service its class) on or off, as the chart's
	// enableServiceMutatorWebhook does, and reports whether it changed
	// (sim.Sim.SetLBCServiceWebhook); nil: a lab without it.
	LBCServiceWebhook func(ctx context.Context, on bool) (bool, error)
	// Restartable: the lab can restart itself into another profile or
	// with other add-ons (ccmlab serve on its own, not a classroom's lab),
	// so an unavailable exercise's summary says how (Summary.Restart).
	Restartable bool
}

// Service is the exercises as the server sees them. All methods are safe
// for concurrent use; Check, Answer and Reset are applied one at a time.
type Service struct {
	cfg       Config
	exercises []*format.Exercise
	byID      map[string]*format.Exercise
	created   time.Time
	console   func(string) bool // accepted by the console's policy
	mu        sync.Mutex
	// runs is, per exercise reset since the process started, where its
	// history starts and where the current step's evidence starts. After
	// a restart (the history starts empty) an exercise has none and every
	// entry counts.
	runs map[string]*run
	// pace is the latency the last reset set for its classroom pace (nil
	// when the last reset set none).
	pace *pace
	// paceLoaded: pace holds what the store recorded (pace.go).
	paceLoaded bool
	// active is the exercise the student is on: the last one reset,
	// checked or answered through the API. Only it is checked
	// automatically, so that an action meant for one exercise does not
	// pass another's step behind the student's back.
	active string
	// removed collects, during a reset (with mu), what it takes away
	// beyond the exercise's own objects, for its note (removedNote).
	removed []i18n.Text
	// seedMu guards the lab's seed, read from the store once.
	seedMu  sync.Mutex
	seedVal uint64
	seedOK  bool
}

// New loads the embedded exercises and checks cfg.
func New(cfg Config) (*Service, error) {
	if err := cfg.Env.Validate(); err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		return nil, errors.New("exercises: Config.Store is required")
	}
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AutoCheckDelay <= 0 {
		cfg.AutoCheckDelay = 300 * time.Millisecond
	}
	if cfg.Addr == "" {
		cfg.Addr = defaultAddr
	}
	if cfg.DataDir != "" {
		abs, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("exercises: data dir: %w", err)
		}
		cfg.DataDir = abs
	}
	all, err := format.LoadAll()
	if err != nil {
		return nil, err
	}
	// format knows the files' structure, not the check kinds: a spec the
	// checker cannot run stops the service here rather than at Check.
	if err := check.ValidateAll(all); err != nil {
		return nil, fmt.Errorf("exercises: %w", err)
	}
	s := &Service{cfg: cfg, exercises: all, byID: map[string]*format.Exercise{}, created: cfg.Now(), runs: map[string]*run{},
		console: func(line string) bool { _, err := console.Parse(line); return err == nil }}
	for _, ex := range all {
		s.byID[ex.ID] = ex
	}
	s.cfg.Env.Causes = s // mystery.go
	return s, nil
}

func (s *Service) get(id string) (*format.Exercise, error) {
	ex, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: no exercise %q", ErrNotFound, id)
	}
	return ex, nil
}
