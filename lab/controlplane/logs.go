package controlplane

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/ccmlab/ccmlab/internal/podlog"
)

// klog is one per process, but the lab runs five components in it. To give
// each its own `kubectl logs`, CaptureKlog installs a logr sink that looks
// at the call site of every line and walks up the stack to the first frame
// that belongs to a component; the line goes into that component's static
// Pod log (podlog.StaticKey). Lines whose stack holds no component frame
// (client-go reflectors and workqueues run in goroutines of their own) go
// to no Pod; they show on the terminal with -v like everything else.

// Component container names, as kubeadm names them (and the CCM as its
// upstream manifests do).
const (
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
	ComponentEtcd              = "etcd"
	ComponentCCM               = "cloud-controller-manager"
)

// CaptureLevel is the klog verbosity kept in Pod logs: --v=2, what most
// clusters run their control plane with (the Service controller's
// "Ensuring load balancer" lines are at 2).
const CaptureLevel = 2

// Log buffer sizes of the static Pods' containers.
const (
	CCMLogBytes          = 1 << 20
	ControlPlaneLogBytes = 512 << 10
)

// componentPrefixes maps package path prefixes to components. Order
// matters where prefixes nest.
var componentPrefixes = []struct{ prefix, component string }{
	{"k8s.io/cloud-provider", ComponentCCM},
	{"github.com/ccmlab/ccmlab/controllers", ComponentCCM},
	{"k8s.io/kubernetes/pkg/controller/", ComponentControllerManager},
	{"k8s.io/kubernetes/cmd/kube-controller-manager", ComponentControllerManager},
	{"k8s.io/kubernetes/pkg/scheduler", ComponentScheduler},
	{"k8s.io/kubernetes/cmd/kube-scheduler", ComponentScheduler},
	{"k8s.io/kube-scheduler", ComponentScheduler},
	{"k8s.io/kubernetes/cmd/kube-apiserver", ComponentAPIServer},
	{"k8s.io/kubernetes/pkg/controlplane", ComponentAPIServer},
	{"k8s.io/kubernetes/pkg/registry", ComponentAPIServer},
	{"k8s.io/kubernetes/pkg/kubeapiserver", ComponentAPIServer},
	{"k8s.io/kubernetes/pkg/kubelet/client", ComponentAPIServer},
	{"k8s.io/kubernetes/plugin/pkg", ComponentAPIServer},
	{"k8s.io/apiserver", ComponentAPIServer},
	{"k8s.io/kube-aggregator", ComponentAPIServer},
	{"k8s.io/apiextensions-apiserver", ComponentAPIServer},
	{"go.etcd.io/etcd/server", ComponentEtcd},
}

// skipped frames: the logging machinery itself.
var loggingPrefixes = []string{"k8s.io/klog/", "github.com/go-logr/", "github.com/ccmlab/ccmlab/lab/controlplane.(*klogSink)", "runtime."}

func componentOf(fn string) string {
	for _, p := range componentPrefixes {
		if strings.HasPrefix(fn, p.prefix) {
			return p.component
		}
	}
	return ""
}

func isLogging(fn string) bool {
	for _, p := range loggingPrefixes {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// attribute returns the call site (file:line of the first frame outside
// the logging machinery) and the component of the first frame that has one.
//
// warning says the line came from klog.Warning, Warningf, WarningS or
// WarningDepth: klog hands a logr sink its warnings as Info (klog.go's
// output sends every severity but errors to Logger.Info), and the line
// should still start with W, as klog's own text output prints it (the
// subnet-tags exercise has students look for cloud-provider-aws's
// klog.Warningf).
func attribute() (site, component string, warning bool) {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "k8s.io/klog/v2.Warning") {
			warning = true
		}
		if !isLogging(f.Function) {
			if site == "" {
				site = fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
			}
			if c := componentOf(f.Function); c != "" {
				return site, c, warning
			}
		}
		if !more {
			return site, "", warning
		}
	}
}

// klogOutput is where the sink writes: the static Pods' logs in the store
// CaptureKlog was last given (captureStore), and the terminal.
type klogOutput struct {
	terminal io.Writer
	termV    int // 0: nothing on the terminal
	pid      int
	mu       sync.Mutex // serialises terminal writes
}

// klogSink is a logr.LogSink over klogOutput.
type klogSink struct {
	out    *klogOutput
	name   string
	values []any
}

var _ logr.CallDepthLogSink = (*klogSink)(nil)

func (s *klogSink) Init(logr.RuntimeInfo) {}

func (s *klogSink) Enabled(level int) bool {
	return (level <= CaptureLevel && captureStore.Load() != nil) || level <= s.out.termV
}

func (s *klogSink) Info(level int, msg string, kv ...any) { s.write('I', level, msg, nil, kv) }

func (s *klogSink) Error(err error, msg string, kv ...any) { s.write('E', 0, msg, err, kv) }

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	return &c
}

func (s *klogSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}

// WithCallDepth: the sink finds the call site by walking the stack, so it
// needs no depth.
func (s *klogSink) WithCallDepth(int) logr.LogSink { return s }

func (s *klogSink) write(sev byte, level int, msg string, err error, kv []any) {
	st := captureStore.Load()
	if st == nil && s.out.termV == 0 {
		return // an error line with nowhere to go
	}
	site, component, warning := attribute()
	if warning && sev == 'I' {
		sev = 'W'
	}
	now := time.Now()
	var b bytes.Buffer
	// klog's text header: Lmmdd hh:mm:ss.uuuuuu threadid file:line]
	fmt.Fprintf(&b, "%c%s %7d %s] ", sev, now.Format("0102 15:04:05.000000"), s.out.pid, site)
	all := append(append([]any(nil), s.values...), kv...)
	if len(all) == 0 && err == nil {
		b.WriteString(msg) // a printf-style klog call
	} else {
		if s.name != "" {
			msg = s.name + ": " + msg
		}
		b.WriteString(strconvQuote(msg))
		if err != nil {
			b.WriteString(" err=")
			b.WriteString(strconvQuote(err.Error()))
		}
		for i := 0; i+1 < len(all); i += 2 {
			fmt.Fprintf(&b, " %v=%s", all[i], formatValue(all[i+1]))
		}
	}
	line := strings.TrimRight(b.String(), "\n")
	if st != nil && component != "" && level <= CaptureLevel {
		st.Append(podlog.StaticKey(component), now, line)
	}
	if s.out.termV > 0 && level <= s.out.termV && s.out.terminal != nil {
		s.out.mu.Lock()
		fmt.Fprintln(s.out.terminal, line)
		s.out.mu.Unlock()
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconvQuote(x)
	case error:
		return strconvQuote(x.Error())
	case fmt.Stringer:
		return strconvQuote(x.String())
	case int, int32, int64, uint, uint32, uint64, float64, bool:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%+v", v)
}

// CaptureKlog sends klog's output, from now on, into the static Pods' logs
// in store, and to stderr as well when verbosity > 0 (the terminal stays
// quiet otherwise). It replaces QuietKlog; call it before Start (which then
// leaves klog alone) or instead of it when attached to a cluster.
//
// klog's logger may only be set while nothing logs, so the first call
// installs the sink and later calls only point it at another store: a
// test package's control plane runs from TestMain on, and each lab it
// serves brings its own store. A nil store captures nothing until a store
// is given. The first call's verbosity stays.
func CaptureKlog(store *podlog.Store, verbosity int) {
	if store != nil {
		store.SetLimit(podlog.StaticKey(ComponentCCM), CCMLogBytes)
		for _, c := range []string{ComponentAPIServer, ComponentControllerManager, ComponentScheduler, ComponentEtcd} {
			store.SetLimit(podlog.StaticKey(c), ControlPlaneLogBytes)
		}
	}
	captureStore.Store(store)
	installKlog.Do(func() {
		logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
		out := &klogOutput{terminal: os.Stderr, termV: verbosity, pid: os.Getpid()}
		// klog checks its own -v before it asks the sink; the sink then
		// decides between Pod log and terminal.
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", fmt.Sprint(max(verbosity, CaptureLevel)))
		klog.SetLoggerWithOptions(logr.New(&klogSink{out: out}), klog.ContextualLogger(true))
		captured.Store(true)
	})
}

// installKlog guards the one SetLoggerWithOptions of CaptureKlog.
var installKlog sync.Once

// captured is set once CaptureKlog has run; QuietKlog then leaves klog be.
var captured atomic.Bool
