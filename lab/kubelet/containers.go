package kubelet

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/podlog"
)

// PodRuntime runs the containers of every Pod that is neither a mirror
// Pod nor claimed by Config.Runtime: the lab's container runtime. The
// kubelet does what a kubelet does around it (init containers in order,
// restartPolicy, crash-loop back-off, statuses, logs, attach); the
// runtime only runs one process at a time and says how it ended.
type PodRuntime interface {
	// Run runs container c of pod (an init, regular or ephemeral one)
	// until it exits or ctx ends (the Pod is deleted, its node stops).
	Run(ctx context.Context, pod *v1.Pod, c *v1.Container, stdio Stdio) Exit
	// Exec runs cmd in the running container c of pod (kubectl exec).
	Exec(ctx context.Context, pod *v1.Pod, c *v1.Container, cmd []string, stdio Stdio) Exit
	// PortForward carries one forwarded connection to port of pod.
	PortForward(ctx context.Context, pod *v1.Pod, port int32, stream io.ReadWriteCloser) error
}

// Stdio is a process's standard streams. Stdin is nil when the process
// has none (it reads EOF).
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
}

// Exit is how a process ended.
type Exit struct {
	Code int32
	// Reason is the container's termination reason; empty means
	// "Completed" for code 0 and "Error" otherwise, as containerd reports.
	Reason  string
	Message string
}

func (e Exit) reason() string {
	switch {
	case e.Reason != "":
		return e.Reason
	case e.Code == 0:
		return "Completed"
	}
	return "Error"
}

// Kinds of containers, as the Pod spec groups them.
const (
	kindInit      = "init"
	kindRegular   = "regular"
	kindEphemeral = "ephemeral"
)

// ctr is one container of a Pod the PodRuntime runs.
type ctr struct {
	name string
	kind string
	spec v1.Container

	runs    int // runs started; restartCount is runs-1
	running bool
	started metav1.Time
	cancel  context.CancelFunc
	done    chan struct{}
	// last is the last run's end, once it ended; current is true while
	// that run is the container's state (not yet restarted).
	last    *ended
	backoff time.Duration
	retryAt time.Time

	out   *output
	stdin *stdin
}

type ended struct {
	exit              Exit
	started, finished metav1.Time
}

// podCtrs is the state of one Pod's containers.
type podCtrs struct {
	uid      types.UID
	init     []*ctr
	regular  []*ctr
	eph      []*ctr
	initDone bool
}

func (p *podCtrs) all() []*ctr {
	out := make([]*ctr, 0, len(p.init)+len(p.regular)+len(p.eph))
	out = append(out, p.init...)
	out = append(out, p.regular...)
	return append(out, p.eph...)
}

func (p *podCtrs) find(name string) *ctr {
	for _, c := range p.all() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// podRuntimes tracks the containers the PodRuntime runs, per Pod UID.
type podRuntimes struct {
	mu   sync.Mutex
	byID map[types.UID]*podCtrs
}

// runsContainers reports whether the PodRuntime runs pod's containers.
func (m *Manager) runsContainers(pod *v1.Pod) bool {
	return m.cfg.Containers != nil && !IsMirrorPod(pod) && !m.handled(pod)
}

// runLogKey is where run n (0 first) of a container keeps its log: the
// first run under LogKey, so that what reads a Pod's log by LogKey
// (exercise checks, the access log of a Pod whose container never
// restarted) finds it.
func runLogKey(pod *v1.Pod, container string, run int) string {
	if run <= 1 {
		return LogKey(pod, container)
	}
	return podlog.PodKey(string(pod.UID), container+"#"+strconv.Itoa(run-1))
}

// CurrentLogKey is where the current run of pod's container writes its
// log (the data plane's access log lines go there).
func (m *Manager) CurrentLogKey(pod *v1.Pod, container string) string {
	if !m.runsContainers(pod) {
		return m.logKey(pod, container)
	}
	m.prt.mu.Lock()
	defer m.prt.mu.Unlock()
	if p := m.prt.byID[pod.UID]; p != nil {
		if c := p.find(container); c != nil {
			return runLogKey(pod, container, c.runs)
		}
	}
	return LogKey(pod, container)
}

// containerLogKey is the log of the current (or, with previous, the
// run before) run of pod's container; ok is false when there is none.
func (m *Manager) containerLogKey(pod *v1.Pod, container string, previous bool) (string, bool) {
	m.prt.mu.Lock()
	defer m.prt.mu.Unlock()
	p := m.prt.byID[pod.UID]
	var c *ctr
	if p != nil {
		c = p.find(container)
	}
	if c == nil {
		return LogKey(pod, container), !previous
	}
	if previous {
		if c.runs < 2 {
			return "", false
		}
		return runLogKey(pod, container, c.runs-1), true
	}
	return runLogKey(pod, container, c.runs), true
}

// syncPodContainers starts what pod's spec and restartPolicy say should
// run now, and returns the Pod's status as a kubelet would report it.
func (m *Manager) syncPodContainers(ctx context.Context, pod *v1.Pod, key, hostIP, podIP string) *v1.Pod {
	now := m.cfg.Clock.Now()
	m.prt.mu.Lock()
	defer m.prt.mu.Unlock()
	p := m.prt.byID[pod.UID]
	if p == nil {
		p = &podCtrs{uid: pod.UID}
		for _, c := range pod.Spec.InitContainers {
			p.init = append(p.init, m.newCtr(pod, c, kindInit))
		}
		for _, c := range pod.Spec.Containers {
			p.regular = append(p.regular, m.newCtr(pod, c, kindRegular))
		}
		m.prt.byID[pod.UID] = p
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if p.find(ec.Name) == nil {
			c := v1.Container(ec.EphemeralContainerCommon)
			p.eph = append(p.eph, m.newCtr(pod, c, kindEphemeral))
		}
	}
	// The processes see the Pod with the addresses this sync gives it,
	// which its status gets only once this sync writes it.
	runPod := pod.DeepCopy()
	runPod.Status.HostIP, runPod.Status.HostIPs = hostIP, []v1.HostIP{{IP: hostIP}}
	runPod.Status.PodIP, runPod.Status.PodIPs = podIP, []v1.PodIP{{IP: podIP}}
	policy := pod.Spec.RestartPolicy
	failed := false
	if !p.initDone {
		p.initDone = true
		for _, c := range p.init {
			if c.running {
				p.initDone = false
				break
			}
			if c.runs > 0 && c.last != nil && c.last.exit.Code == 0 {
				continue
			}
			p.initDone = false
			switch {
			case c.runs == 0:
				m.startCtr(ctx, runPod, key, c, now)
			case policy == v1.RestartPolicyNever:
				failed = true
			default:
				m.restartAfterBackoff(ctx, runPod, key, c, now)
			}
			break
		}
	}
	if p.initDone && !failed {
		for _, c := range p.regular {
			switch {
			case c.running:
			case c.runs == 0:
				m.startCtr(ctx, runPod, key, c, now)
			case policy == v1.RestartPolicyAlways || (policy == v1.RestartPolicyOnFailure && c.last.exit.Code != 0):
				m.restartAfterBackoff(ctx, runPod, key, c, now)
			}
		}
	}
	for _, c := range p.eph {
		if c.runs == 0 {
			m.startCtr(ctx, runPod, key, c, now) // never restarted
		}
	}
	// Second precision, as the API keeps times: an unchanged state then
	// compares equal to what was written.
	return buildStatus(pod, p, hostIP, podIP, metav1.NewTime(now).Rfc3339Copy(), failed)
}

func (m *Manager) newCtr(pod *v1.Pod, c v1.Container, kind string) *ctr {
	return &ctr{name: c.Name, kind: kind, spec: c, out: newOutput(m.cfg.Logs, m.cfg.Clock), stdin: newStdin(c.Stdin, c.StdinOnce)}
}

// restartAfterBackoff restarts c once its back-off has passed, and arms
// the queue for then otherwise. Every sync in back-off arms it again: the
// delaying queue keeps one ready time per key, the earliest, so a rate
// limited retry would otherwise replace the one the exit armed.
func (m *Manager) restartAfterBackoff(ctx context.Context, pod *v1.Pod, key string, c *ctr, now time.Time) {
	if now.Before(c.retryAt) {
		m.queue.AddAfter(key, c.retryAt.Sub(now))
		return
	}
	m.events.restarting(pod, c.name, c.spec.Image)
	m.startCtr(ctx, pod, key, c, now)
}

// startCtr starts a new run of c. Called with m.prt.mu held.
func (m *Manager) startCtr(ctx context.Context, pod *v1.Pod, key string, c *ctr, now time.Time) {
	c.runs++
	runCtx, cancel := context.WithCancel(ctx)
	c.cancel, c.done, c.running, c.started = cancel, make(chan struct{}), true, metav1.NewTime(now).Rfc3339Copy()
	logKey := runLogKey(pod, c.name, c.runs)
	if c.runs > 2 {
		// Only the current and the previous run are kept, as a kubelet
		// keeps the logs of the last terminated container only.
		m.cfg.Logs.Remove(runLogKey(pod, c.name, c.runs-2))
	}
	c.out.setKey(logKey)
	p := pod.DeepCopy()
	spec := c.spec
	stdio := Stdio{Stdin: c.stdin.reader(), Stdout: c.out, Stderr: c.out, TTY: spec.TTY}
	first := c.runs == 1
	go func() {
		if first {
			c.stdin.awaitAttach(runCtx, m.cfg.Clock)
		}
		exit := m.cfg.Containers.Run(runCtx, p, &spec, stdio)
		stopped := runCtx.Err() != nil
		cancel()
		c.out.flush()
		m.prt.mu.Lock()
		end := m.cfg.Clock.Now()
		c.running = false
		c.last = &ended{exit: exit, started: c.started, finished: metav1.NewTime(end).Rfc3339Copy()}
		if end.Sub(c.started.Time) > backoffResetAfter {
			c.backoff = 0
		}
		c.backoff = min(cmp.Or(c.backoff*2, m.cfg.CrashBackoff), m.cfg.MaxCrashBackoff)
		c.retryAt = end.Add(c.backoff)
		m.prt.mu.Unlock()
		close(c.done)
		if !stopped {
			m.queue.Add(key)
		}
	}()
}

// stopPodContainers stops every container of the Pod and waits up to
// grace for them; its state goes, the runtime's (its volumes) too.
func (m *Manager) stopPodContainers(uid types.UID, grace time.Duration) {
	if f, ok := m.cfg.Containers.(PodForgetter); ok {
		defer f.ForgetPod(uid)
	}
	m.prt.mu.Lock()
	p := m.prt.byID[uid]
	delete(m.prt.byID, uid)
	var done []chan struct{}
	var stdins []*stdin
	if p != nil {
		for _, c := range p.all() {
			stdins = append(stdins, c.stdin)
			if c.running {
				c.cancel()
				done = append(done, c.done)
			}
		}
	}
	m.prt.mu.Unlock()
	for _, s := range stdins {
		s.close()
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	for _, d := range done {
		select {
		case <-d:
		case <-t.C:
			m.log.Warn("container did not stop within its grace period", "pod", uid, "grace", grace)
			return
		}
	}
}

// running is what a stream needs of a running container, copied under
// the lock: a restart replaces done.
type running struct {
	name  string
	spec  v1.Container
	done  chan struct{}
	out   *output
	stdin *stdin
}

// runningContainer returns pod's container name while it runs.
func (m *Manager) runningContainer(pod *v1.Pod, name string) (*running, error) {
	m.prt.mu.Lock()
	defer m.prt.mu.Unlock()
	p := m.prt.byID[pod.UID]
	if p == nil {
		return nil, fmt.Errorf("container %q in pod %q is not available", name, pod.Name)
	}
	c := p.find(name)
	if c == nil {
		return nil, fmt.Errorf("container %s is not valid for pod %s", name, pod.Name)
	}
	if !c.running {
		return nil, fmt.Errorf("container %s is not running", name)
	}
	return &running{name: c.name, spec: c.spec, done: c.done, out: c.out, stdin: c.stdin}, nil
}

// buildStatus is pod's status from its containers' state, as a kubelet's
// status manager writes it (pkg/kubelet/kubelet_pods.go,
// generateAPIPodStatus and getPhase, v1.37.2).
func buildStatus(pod *v1.Pod, p *podCtrs, hostIP, podIP string, now metav1.Time, initFailed bool) *v1.Pod {
	out := pod.DeepCopy()
	st := &out.Status
	st.Reason, st.Message = "", ""
	st.HostIP, st.HostIPs = hostIP, []v1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = podIP, []v1.PodIP{{IP: podIP}}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.ObservedGeneration = pod.Generation
	old := pod.Status
	st.InitContainerStatuses = ctrStatuses(pod, p.init, old.InitContainerStatuses, "")
	waiting := ""
	if !p.initDone {
		waiting = "PodInitializing"
	}
	st.ContainerStatuses = ctrStatuses(pod, p.regular, old.ContainerStatuses, waiting)
	st.EphemeralContainerStatuses = ctrStatuses(pod, p.eph, old.EphemeralContainerStatuses, "")

	st.Phase = podPhase(pod.Spec.RestartPolicy, st.ContainerStatuses, p.initDone, initFailed)
	setPodCondition(st, v1.PodReadyToStartContainers, v1.ConditionTrue, "", "", pod.Generation, now)
	setPodCondition(st, v1.PodScheduled, v1.ConditionTrue, "", "", pod.Generation, now)
	if p.initDone {
		setPodCondition(st, v1.PodInitialized, v1.ConditionTrue, "", "", pod.Generation, now)
	} else {
		setPodCondition(st, v1.PodInitialized, v1.ConditionFalse, "ContainersNotInitialized",
			"containers with incomplete status: ["+names(p.init, func(c *ctr) bool { return c.last == nil || c.last.exit.Code != 0 })+"]", pod.Generation, now)
	}
	unready := names(p.regular, func(c *ctr) bool { return !c.running })
	reason, msg := "", ""
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		reason = "PodCompleted"
	}
	if unready != "" {
		reason, msg = cmp.Or(reason, "ContainersNotReady"), "containers with unready status: ["+unready+"]"
		setPodCondition(st, v1.ContainersReady, v1.ConditionFalse, reason, msg, pod.Generation, now)
		setPodCondition(st, v1.PodReady, v1.ConditionFalse, reason, msg, pod.Generation, now)
		return out
	}
	setPodCondition(st, v1.ContainersReady, v1.ConditionTrue, "", "", pod.Generation, now)
	if !readinessGatesPassed(out) {
		setPodCondition(st, v1.PodReady, v1.ConditionFalse, "ReadinessGatesNotReady", "the pod's readiness gates are not all true", pod.Generation, now)
	} else {
		setPodCondition(st, v1.PodReady, v1.ConditionTrue, "", "", pod.Generation, now)
	}
	return out
}

func names(cs []*ctr, pick func(*ctr) bool) string {
	s := ""
	for _, c := range cs {
		if pick(c) {
			if s != "" {
				s += " "
			}
			s += c.name
		}
	}
	return s
}

// ctrStatuses are the statuses of cs; a container not started yet waits
// with waitReason (or ContainerCreating).
func ctrStatuses(pod *v1.Pod, cs []*ctr, old []v1.ContainerStatus, waitReason string) []v1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		s := v1.ContainerStatus{
			Name: c.name, Image: c.spec.Image, ImageID: imageID(c.spec.Image),
			RestartCount: int32(max(c.runs-1, 0)),
			Started:      ptr.To(c.running),
		}
		if c.runs > 0 {
			s.ContainerID = "containerd://" + stableHex("container", string(pod.UID), c.name, strconv.Itoa(c.runs))
		}
		switch {
		case c.running:
			s.State.Running = &v1.ContainerStateRunning{StartedAt: c.started}
			s.Ready = c.kind == kindRegular
			if c.runs > 1 && c.last != nil {
				s.LastTerminationState.Terminated = terminated(c.last, "containerd://"+stableHex("container", string(pod.UID), c.name, strconv.Itoa(c.runs-1)))
			}
		case c.runs == 0:
			s.State.Waiting = &v1.ContainerStateWaiting{Reason: cmp.Or(waitReason, "ContainerCreating")}
		case c.kind == kindRegular && willRestart(pod.Spec.RestartPolicy, c.last.exit.Code) ||
			c.kind == kindInit && pod.Spec.RestartPolicy != v1.RestartPolicyNever && c.last.exit.Code != 0:
			// Exited and waiting for its back-off to pass.
			s.State.Waiting = &v1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", c.backoff, c.name, pod.Name, pod.Namespace, pod.UID),
			}
			s.LastTerminationState.Terminated = terminated(c.last, s.ContainerID)
		default:
			s.State.Terminated = terminated(c.last, s.ContainerID)
			if c.runs > 1 {
				s.LastTerminationState = prevTermination(old, c.name)
			}
		}
		out = append(out, s)
	}
	return out
}

func prevTermination(old []v1.ContainerStatus, name string) v1.ContainerState {
	for _, s := range old {
		if s.Name == name {
			return s.LastTerminationState
		}
	}
	return v1.ContainerState{}
}

func terminated(e *ended, id string) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{
		ExitCode: e.exit.Code, Reason: e.exit.reason(), Message: e.exit.Message,
		StartedAt: e.started, FinishedAt: e.finished, ContainerID: id,
	}
}

func willRestart(policy v1.RestartPolicy, code int32) bool {
	return policy == v1.RestartPolicyAlways || policy == "" || (policy == v1.RestartPolicyOnFailure && code != 0)
}

// podPhase is getPhase's rule for the lab's Pods (no sidecars): Failed
// when an init container failed under restartPolicy Never; Pending until
// every regular container started; Running while one runs or will be
// restarted; Succeeded when all exited 0 and none restarts; Failed when
// all exited, one of them non-zero, and none restarts.
func podPhase(policy v1.RestartPolicy, cs []v1.ContainerStatus, initDone, initFailed bool) v1.PodPhase {
	if initFailed {
		return v1.PodFailed
	}
	if !initDone {
		return v1.PodPending
	}
	running, stopped, succeeded, restarting := 0, 0, 0, 0
	for _, s := range cs {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			stopped++
			restarting++
		default:
			return v1.PodPending
		}
	}
	switch {
	case running > 0, restarting > 0:
		return v1.PodRunning
	case stopped == succeeded:
		return v1.PodSucceeded
	}
	if policy == v1.RestartPolicyAlways || policy == "" {
		return v1.PodRunning
	}
	return v1.PodFailed
}

// output is a container's stdout and stderr: whole lines go to its log,
// every byte to whoever is attached.
type output struct {
	logs  *podlog.Store
	clock interface{ Now() time.Time }

	mu       sync.Mutex
	key      string
	partial  []byte
	attached map[*attachSink]struct{}
}

// maxPartialLine bounds a line without a newline; longer ones are cut,
// as a container runtime splits long lines into partial log entries.
const maxPartialLine = 16 << 10

func newOutput(logs *podlog.Store, clock interface{ Now() time.Time }) *output {
	return &output{logs: logs, clock: clock}
}

func (o *output) setKey(key string) {
	o.mu.Lock()
	o.flushLocked()
	o.key = key
	o.mu.Unlock()
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for s := range o.attached {
		s.send(b)
	}
	if o.logs == nil {
		return len(b), nil
	}
	rest := b
	for len(rest) > 0 {
		i := indexByte(rest, '\n')
		if i < 0 {
			o.partial = append(o.partial, rest...)
			if len(o.partial) >= maxPartialLine {
				o.flushLocked()
			}
			break
		}
		o.partial = append(o.partial, rest[:i]...)
		o.logs.Append(o.key, o.clock.Now(), string(trimCR(o.partial)))
		o.partial = o.partial[:0]
		rest = rest[i+1:]
	}
	return len(b), nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

func (o *output) flush() {
	o.mu.Lock()
	o.flushLocked()
	o.mu.Unlock()
}

func (o *output) flushLocked() {
	if len(o.partial) > 0 && o.logs != nil {
		o.logs.Append(o.key, o.clock.Now(), string(o.partial))
	}
	o.partial = o.partial[:0]
}

// attach adds w as a reader of what the container writes from now on.
func (o *output) attach(w io.Writer) *attachSink {
	s := &attachSink{w: w, ch: make(chan []byte, attachBuffer), done: make(chan struct{})}
	go s.run()
	o.mu.Lock()
	if o.attached == nil {
		o.attached = map[*attachSink]struct{}{}
	}
	o.attached[s] = struct{}{}
	o.mu.Unlock()
	return s
}

func (o *output) detach(s *attachSink) {
	o.mu.Lock()
	if _, ok := o.attached[s]; ok {
		delete(o.attached, s)
		close(s.ch)
	}
	o.mu.Unlock()
	<-s.done
}

// attachBuffer chunks wait for a slow attached client; more are dropped,
// so no client can stall the container.
const attachBuffer = 256

type attachSink struct {
	w    io.Writer
	ch   chan []byte
	done chan struct{}
}

func (s *attachSink) send(b []byte) {
	select {
	case s.ch <- append([]byte(nil), b...):
	default:
	}
}

func (s *attachSink) run() {
	defer close(s.done)
	for b := range s.ch {
		if _, err := s.w.Write(b); err != nil {
			for range s.ch {
			}
			return
		}
	}
}

// stdin is a container's standard input when its spec asks for one
// (stdin: true): what attached clients type. With stdinOnce it closes
// when the first attached client detaches, as a container runtime closes
// the process's stdin then.
type stdin struct {
	open, once bool
	mu         sync.Mutex
	r          *io.PipeReader
	w          *io.PipeWriter
	attached   bool
	closed     bool
	// firstAttach closes when a client first attaches, its output
	// sinks in place.
	firstAttach     chan struct{}
	firstAttachOnce sync.Once
}

// attachWait bounds how long a stdinOnce container's first run waits
// for its client (awaitAttach).
const attachWait = 5 * time.Second

func newStdin(open, once bool) *stdin {
	s := &stdin{open: open, once: once, firstAttach: make(chan struct{})}
	if open {
		s.r, s.w = io.Pipe()
	}
	return s
}

// awaitAttach holds the first run of a stdinOnce container (what
// kubectl run -i creates) until its client attaches, for at most
// attachWait. kubectl attaches once it sees the Pod Running; a real
// container spends that moment starting, while the lab's commands end
// in microseconds, so without the wait every `kubectl run --rm -i --
// curl ...` would find its container gone and fall back to the logs
// with a warning.
func (s *stdin) awaitAttach(ctx context.Context, clk clock.Clock) {
	if !s.open || !s.once {
		return
	}
	t := clk.NewTimer(attachWait)
	defer t.Stop()
	select {
	case <-s.firstAttach:
	case <-t.C():
	case <-ctx.Done():
	}
}

// attachedNow marks the first attach.
func (s *stdin) attachedNow() { s.firstAttachOnce.Do(func() { close(s.firstAttach) }) }

// reader is the process's stdin; nil when the container has none. A
// restarted container reads on from the same stream, as under runc.
func (s *stdin) reader() io.Reader {
	if !s.open {
		return nil
	}
	return s.r
}

// feed copies an attached client's input into the container until the
// client ends or ctx does.
func (s *stdin) feed(ctx context.Context, in io.Reader) {
	if !s.open || in == nil {
		return
	}
	s.mu.Lock()
	if s.attached || s.closed {
		s.mu.Unlock()
		return
	}
	s.attached = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if _, werr := s.w.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.attached = false
	s.mu.Unlock()
	if s.once {
		s.close()
	}
}

func (s *stdin) close() {
	if !s.open {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		_ = s.w.Close()
	}
}

// hasContainer reports whether pod has a container (init, regular or
// ephemeral) of that name.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// forgetRunLogs removes the logs of a deleted Pod's containers, the
// previous runs' with them.
func (m *Manager) forgetRunLogs(pod *v1.Pod) {
	m.prt.mu.Lock()
	runs := map[string]int{}
	if p := m.prt.byID[pod.UID]; p != nil {
		for _, c := range p.all() {
			runs[c.name] = c.runs
		}
	}
	m.prt.mu.Unlock()
	for name, n := range runs {
		for run := max(n-1, 1); run <= max(n, 1); run++ {
			m.cfg.Logs.Remove(runLogKey(pod, name, run))
		}
	}
	for _, c := range pod.Spec.Containers {
		if _, ok := runs[c.Name]; !ok {
			m.cfg.Logs.Remove(LogKey(pod, c.Name))
		}
	}
}
