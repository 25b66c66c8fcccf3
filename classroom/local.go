package classroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/classroom/labclient"
)

// Lab states as the dashboard shows them.
const (
	stateStopped  = "stopped"
	stateStarting = "starting"
	stateReady    = "ready"
	stateStopping = "stopping"
)

// readyFunc is told when a lab is ready; done closes when that run of the
// lab ends (stopped or died).
type readyFunc func(name, addr string, done <-chan struct{})

// localBackend runs each lab as a "ccmlab serve" child process.
type localBackend struct {
	cfg     *Config
	tokens  *tokens
	log     *slog.Logger
	clock   clock.WithTicker
	onReady readyFunc

	mu      sync.Mutex
	labs    map[string]*localLab
	order   []string
	closed  bool
	closing chan struct{} // closed with closed
	wg      sync.WaitGroup
}

type localLab struct {
	name, dir, token string

	// Guarded by localBackend.mu.
	state     string
	addr      string
	cmd       *exec.Cmd
	ready     chan struct{} // closed when this start succeeded or failed
	startErr  error
	done      chan struct{} // closed when this run's process has exited
	wanted    bool          // restart it if it dies
	visited   bool
	lastVisit time.Time
	active    int // requests (and websockets) in flight
	failures  int // consecutive deaths, for the restart backoff
}

func newLocalBackend(cfg *Config, t *tokens, onReady readyFunc) *localBackend {
	b := &localBackend{cfg: cfg, tokens: t, log: cfg.Logger.With("backend", "local"), clock: cfg.Clock,
		onReady: onReady, labs: map[string]*localLab{}, order: cfg.Students, closing: make(chan struct{})}
	for _, s := range cfg.Students {
		b.labs[s] = &localLab{name: s, dir: filepath.Join(cfg.DataDir, "students", s), token: t.students[s], state: stateStopped}
	}
	return b
}

// Run supervises the labs until ctx ends, then stops them all.
func (b *localBackend) Run(ctx context.Context) error {
	b.mu.Lock()
	if b.cfg.Prestart {
		for _, s := range b.order {
			b.startLocked(b.labs[s])
		}
	}
	b.warmLocked()
	b.mu.Unlock()

	tick := b.clock.NewTicker(idleTick(b.cfg.IdleStop))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			b.stopAll()
			return nil
		case <-tick.C():
			b.sweepIdle()
		}
	}
}

// idleTick checks often enough that a lab stops within a tenth of
// --idle-stop (and at least once a minute) after it became idle.
func idleTick(idle time.Duration) time.Duration {
	d := idle / 10
	if d <= 0 || d > time.Minute {
		d = time.Minute
	}
	return max(d, time.Second)
}

// sweepIdle stops visited labs nobody used for --idle-stop. Labs never
// visited (prestarted or warm) wait for their student.
func (b *localBackend) sweepIdle() {
	if b.cfg.IdleStop <= 0 {
		return
	}
	for _, l := range b.idle() {
		b.log.Info("stopping an idle lab", "student", l.name, "idle", b.cfg.IdleStop)
		b.stop(l)
	}
}

// idle lists the labs to stop for idleness.
func (b *localBackend) idle() []*localLab {
	now := b.clock.Now()
	var idle []*localLab
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.order {
		l := b.labs[s]
		if l.visited && l.active == 0 && (l.state == stateReady || l.state == stateStarting) && now.Sub(l.lastVisit) >= b.cfg.IdleStop {
			idle = append(idle, l)
		}
	}
	return idle
}

// Visit records a request to a student's lab; call the returned func when
// it is over (for a websocket: when it closes).
func (b *localBackend) Visit(name string) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.labs[name]
	l.active++
	l.lastVisit = b.clock.Now()
	if !l.visited {
		l.visited = true
		b.warmLocked()
	}
	return func() {
		b.mu.Lock()
		l.active--
		l.lastVisit = b.clock.Now()
		b.mu.Unlock()
	}
}

// Ensure returns the address of the student's lab, starting it and waiting
// for its /healthz if it is not running.
func (b *localBackend) Ensure(ctx context.Context, name string) (string, error) {
	b.mu.Lock()
	l := b.labs[name]
	if b.closed {
		b.mu.Unlock()
		return "", errors.New("the classroom is shutting down")
	}
	if l.state == stateStopped || l.state == stateStopping && !l.wanted {
		if l.state == stateStopping {
			// Let the stop finish; the data dir is locked until then.
			done := l.done
			b.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			b.mu.Lock()
		}
		if l.state == stateStopped {
			b.startLocked(l)
		}
	}
	l.wanted = true
	ready := l.ready
	b.mu.Unlock()
	if ready == nil {
		return "", fmt.Errorf("lab of %s is not running", name)
	}
	timeout := b.clock.NewTimer(b.cfg.StartTimeout)
	defer timeout.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timeout.C():
		return "", fmt.Errorf("the lab of %s did not become ready within %s", name, b.cfg.StartTimeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if l.state != stateReady {
		if l.startErr != nil {
			return "", l.startErr
		}
		return "", fmt.Errorf("the lab of %s is %s", name, l.state)
	}
	return l.addr, nil
}

// Status is the lab's state and, when ready, its address.
func (b *localBackend) Status(name string) (state, addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.labs[name]
	return l.state, l.addr
}

// warmLocked starts labs for the next students in roster order who have
// not visited yet, until Warm of them run. A warm lab is simply that
// student's own lab started early: data dirs are per student, so a spare
// lab could not be handed to whoever comes first without moving a locked,
// running data dir.
func (b *localBackend) warmLocked() {
	if b.cfg.Warm == 0 || b.closed {
		return
	}
	warm := 0
	for _, s := range b.order {
		if l := b.labs[s]; !l.visited && (l.state == stateStarting || l.state == stateReady) {
			warm++
		}
	}
	for _, s := range b.order {
		if warm >= b.cfg.Warm {
			return
		}
		if l := b.labs[s]; !l.visited && l.state == stateStopped {
			b.startLocked(l)
			warm++
		}
	}
}

// startLocked starts the lab's process; the rest happens in a goroutine.
func (b *localBackend) startLocked(l *localLab) {
	if b.closed {
		return
	}
	l.state, l.wanted, l.startErr, l.addr = stateStarting, true, nil, ""
	l.ready, l.done = make(chan struct{}), make(chan struct{})
	ready, done := l.ready, l.done
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runOnce(l, ready, done)
	}()
}

// runOnce runs one process of the lab until it exits.
func (b *localBackend) runOnce(l *localLab, ready, done chan struct{}) {
	fail := func(err error) {
		b.mu.Lock()
		l.startErr = err
		l.state = stateStopped
		b.mu.Unlock()
		close(ready)
		close(done)
		b.log.Error("starting a lab", "student", l.name, "err", err)
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		fail(err)
		return
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		fail(err)
		return
	}
	logf, err := os.OpenFile(filepath.Join(b.cfg.DataDir, "students", l.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fail(err)
		return
	}
	defer logf.Close()
	cmd := b.command(l, addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and on Linux a parent-death signal
	// (local_linux.go, local_other.go).
	cmd.SysProcAttr = labProcAttr()
	if err := cmd.Start(); err != nil {
		fail(fmt.Errorf("running %s: %w", b.cfg.Binary, err))
		return
	}
	b.mu.Lock()
	l.cmd = cmd
	b.mu.Unlock()
	b.log.Info("lab starting", "student", l.name, "addr", addr, "pid", cmd.Process.Pid)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	if err := b.waitHealthy(addr, exited, &waitErr); err != nil {
		b.mu.Lock()
		l.startErr = fmt.Errorf("the lab of %s: %w (see %s.log)", l.name, err, filepath.Join(b.cfg.DataDir, "students", l.name))
		b.mu.Unlock()
		close(ready)
		if waitErr == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			waitErr = <-exited
		}
	} else {
		b.mu.Lock()
		l.state, l.addr, l.failures = stateReady, addr, 0
		b.mu.Unlock()
		close(ready)
		b.log.Info("lab ready", "student", l.name, "addr", addr)
		if b.onReady != nil {
			b.onReady(l.name, addr, done)
		}
		waitErr = <-exited
	}

	// The state is settled before done closes, so whoever waits on done
	// (a visitor waiting for a stop to finish) sees the lab stopped.
	b.mu.Lock()
	defer b.mu.Unlock()
	defer close(done)
	expected := l.state == stateStopping
	l.state, l.addr, l.cmd = stateStopped, "", nil
	if expected || !l.wanted || b.closed {
		return
	}
	l.failures++
	backoff := min(time.Duration(1<<min(l.failures-1, 5))*time.Second, 30*time.Second)
	b.log.Warn("a lab died; restarting it with its data", "student", l.name, "err", waitErr, "in", backoff)
	l.state = stateStarting
	l.ready = make(chan struct{})
	readyAgain := l.ready
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := b.clock.NewTimer(backoff)
		defer t.Stop()
		select {
		case <-t.C():
		case <-b.closing:
		}
		b.mu.Lock()
		if b.closed || !l.wanted {
			l.state, l.startErr = stateStopped, fmt.Errorf("the lab of %s was stopped", l.name)
			b.mu.Unlock()
			close(readyAgain)
			return
		}
		l.state = stateStopped
		b.startLocked(l)
		// Whoever waits on the old ready channel waits for this start.
		newReady := l.ready
		b.mu.Unlock()
		<-newReady
		close(readyAgain)
	}()
}

// command is the lab's "ccmlab serve". The student's token goes in its
// environment (CCMLAB_TOKEN), not its arguments: anyone on the machine can
// read a process's command line (ps), only its user its environment. The
// portal's own CCMLAB_TOKEN (the instructor's) is not passed on.
func (b *localBackend) command(l *localLab, addr string) *exec.Cmd {
	// The lab applies its limits to its own process at start (ccmlab
	// serve's --memory-limit and --max-open-files): Go's os/exec sets no
	// rlimit per child, and a flag is the same on every platform.
	args := append([]string{"serve", "--listen", addr, "--data-dir", l.dir}, b.cfg.Lab.args(b.cfg.Lab.Memory)...)
	cmd := exec.Command(b.cfg.Binary, args...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, tokenEnv+"=") })
	cmd.Env = append(env, tokenEnv+"="+l.token)
	return cmd
}

// tokenEnv is the variable "ccmlab serve" reads its token from.
const tokenEnv = "CCMLAB_TOKEN"

// waitHealthy polls the lab's /healthz until it answers 200, the process
// exits, or StartTimeout passes.
func (b *localBackend) waitHealthy(addr string, exited <-chan error, waitErr *error) error {
	lab, err := labclient.New(labclient.Config{Addr: addr, HTTP: &http.Client{Timeout: 2 * time.Second}})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(b.cfg.StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			*waitErr = err
			if err == nil {
				err = errors.New("exited")
			}
			return fmt.Errorf("exited before it was ready: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
		if lab.Healthy(context.Background()) == nil {
			return nil
		}
	}
	return fmt.Errorf("not ready within %s", b.cfg.StartTimeout)
}

// stop stops one lab gracefully: SIGTERM to its group, SIGKILL after
// StopTimeout.
func (b *localBackend) stop(l *localLab) {
	b.mu.Lock()
	l.wanted = false
	cmd, done := l.cmd, l.done
	if cmd == nil || l.state == stateStopped {
		b.mu.Unlock()
		return
	}
	l.state = stateStopping
	b.mu.Unlock()
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(b.cfg.StopTimeout):
		b.log.Warn("a lab did not stop in time; killing it", "student", l.name, "after", b.cfg.StopTimeout)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}

// stopAll stops every lab, in parallel, and waits for the supervisors.
func (b *localBackend) stopAll() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	labs := make([]*localLab, 0, len(b.labs))
	for _, l := range b.labs {
		labs = append(labs, l)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range labs {
		wg.Go(func() { b.stop(l) })
	}
	wg.Wait()
	b.wg.Wait()
}

// pid is the lab's process id, 0 when none runs (for tests).
func (b *localBackend) pid(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.labs[name].cmd; c != nil {
		return c.Process.Pid
	}
	return 0
}

// freeLoopbackAddr asks the kernel for a free port. Another process could
// take it before the lab binds it; the lab then exits, and the supervisor
// starts it again on another port.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
