package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The kubelet API's streams: exec, attach and portForward, mounted at the
// paths the kubelet's server mounts them (pkg/kubelet/server/server.go,
// v1.37.2: /exec/{podNamespace}/{podID}[/{uid}]/{containerName}, the same
// for /attach, /portForward/{podNamespace}/{podID}[/{uid}], GET and POST)
// and served by upstream's CRI streaming server code
// (k8s.io/cri-streaming: SPDY and websocket framing, the v1-v4
// remotecommand protocols, portforward.k8s.io). A real kubelet redirects
// or proxies these to its container runtime's streaming server; here the
// runtime is in the process, so the handlers call it directly. The lab's
// nodes do not declare ExtendWebSocketsToKubelet, so the apiserver
// translates kubectl's websocket (v5.channel.k8s.io, portforward tunnel)
// to SPDY before it reaches this server, as it does for any such node
// (pkg/registry/core/pod/rest/subresources.go).

const (
	// streamIdleTimeout is the kubelet's default
	// --streaming-connection-idle-timeout (4h).
	streamIdleTimeout = 4 * time.Hour
	// streamCreationTimeout: remotecommand's default (30s).
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

func (s *apiServer) mountStreams(mux *http.ServeMux) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", s.exec)
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{container}", s.attach)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{uid}/{container}", s.attach)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.portForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
}

// streamPod finds the Pod a stream request names; on failure it has
// answered already.
func (s *apiServer) streamPod(w http.ResponseWriter, r *http.Request) (*v1.Pod, bool) {
	ns, name, uid := r.PathValue("namespace"), r.PathValue("pod"), types.UID(r.PathValue("uid"))
	pod, err := s.m.pods.Pods(ns).Get(name)
	if err != nil || (uid != "" && pod.UID != uid) {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return nil, false
	}
	if !s.m.runsContainers(pod) {
		http.Error(w, fmt.Sprintf("pod %s/%s runs no process the kubelet API can reach", ns, name), http.StatusBadRequest)
		return nil, false
	}
	return pod, true
}

// streamContainer is the running container a request names; on failure
// it has answered already, as the kubelet answers before any upgrade.
func (s *apiServer) streamContainer(w http.ResponseWriter, r *http.Request) (*v1.Pod, *running, *remotecommand.Options, bool) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, nil, nil, false
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return nil, nil, nil, false
	}
	name := r.PathValue("container")
	c, err := s.m.runningContainer(pod, name)
	if err != nil {
		// The runtime's answer for a container it does not run
		// (kubelet's GetExec: "container not found").
		http.Error(w, fmt.Sprintf("container not found (%q)", name), http.StatusBadRequest)
		return nil, nil, nil, false
	}
	return pod, c, opts, true
}

func (s *apiServer) exec(w http.ResponseWriter, r *http.Request) {
	pod, c, opts, ok := s.streamContainer(w, r)
	if !ok {
		return
	}
	cmd := r.URL.Query()["command"]
	remotecommand.ServeExec(w, r, &execer{m: s.m, pod: pod, c: c}, podFullName(pod), string(pod.UID), c.name, cmd,
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (s *apiServer) attach(w http.ResponseWriter, r *http.Request) {
	pod, c, opts, ok := s.streamContainer(w, r)
	if !ok {
		return
	}
	remotecommand.ServeAttach(w, r, &execer{m: s.m, pod: pod, c: c}, podFullName(pod), string(pod.UID), c.name,
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (s *apiServer) portForward(w http.ResponseWriter, r *http.Request) {
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, &forwarder{m: s.m, pod: pod}, pod.Name, string(pod.UID), opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// podFullName is the kubelet's name for a Pod in its runtime:
// <name>_<namespace> (kubecontainer.GetPodFullName).
func podFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }

// execer runs exec and attach sessions in one running container.
type execer struct {
	m   *Manager
	pod *v1.Pod
	c   *running
}

func (e *execer) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(cmd) == 0 {
		return errors.New("command is required")
	}
	// The session ends with the container too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	stdio := Stdio{Stdin: in, Stdout: discardNil(out), Stderr: discardNil(errw), TTY: tty}
	if tty && stdio.Stderr == io.Discard {
		stdio.Stderr = stdio.Stdout
	}
	spec := e.c.spec
	exit := e.m.cfg.Containers.Exec(ctx, e.pod, &spec, cmd, stdio)
	if exit.Code == 0 {
		return nil
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", exit.Code), Code: int(exit.Code)}
}

func (e *execer) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sinks []*attachSink
	if out != nil {
		sinks = append(sinks, e.c.out.attach(out))
	}
	if errw != nil && out == nil {
		sinks = append(sinks, e.c.out.attach(errw))
	}
	defer func() {
		for _, s := range sinks {
			e.c.out.detach(s)
		}
	}()
	go e.c.stdin.feed(ctx, in)
	e.c.stdin.attachedNow()
	select {
	case <-e.c.done:
	case <-ctx.Done():
	}
	return nil
}

func discardNil(w io.WriteCloser) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// forwarder carries port-forwarded connections to one Pod.
type forwarder struct {
	m   *Manager
	pod *v1.Pod
}

func (f *forwarder) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	return f.m.cfg.Containers.PortForward(ctx, f.pod, port, stream)
}
