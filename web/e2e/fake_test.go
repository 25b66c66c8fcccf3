package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/server/stream"
	"github.com/ccmlab/ccmlab/web"
)

// fakeLab serves the real page with a scripted stream: a snapshot of any
// size, bursts of changes, restarts and slow-client kicks, following
// docs/protocol.md, with messages built from server/stream's types. It records the REST calls the page makes.
type fakeLab struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	epoch    string
	seq      uint64
	world    *world
	conns    map[*fakeConn]bool
	down     bool     // /ws answers 503, like a lab that is restarting
	calls    []string // "METHOD /path body"
	wsQuery  []string // the query of every websocket connection
	restarts int
}

type fakeConn struct {
	c    *websocket.Conn
	send chan []byte
	done chan struct{}
}

// world is the lab's state as the fake keeps it.
type world struct {
	nodes    []flow.NodeView
	pods     []flow.PodView
	services []flow.ServiceView
	sflows   []flow.ServiceFlow
	nflows   []flow.NodeFlow
	insts    []cloud.Instance
	lbs      []cloud.LoadBalancer
	routes   []cloud.Route
	calls    []cloud.Call
	ctrl     map[string]bool
	stepMode bool
	waiting  []cloud.Call
}

func newFakeLab(t testing.TB, w *world) *fakeLab {
	f := &fakeLab{t: t, epoch: "epoch-1", world: w, conns: map[*fakeConn]bool{}}
	assets, err := web.Handler(web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", assets)
	mux.HandleFunc("/ws", f.serveWS)
	mux.HandleFunc("/api/", f.serveAPI)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.mu.Lock()
		for c := range f.conns {
			c.c.CloseNow()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeLab) snapshotData() stream.Snapshot {
	w := f.world
	return stream.Snapshot{
		Epoch: f.epoch, Seq: f.seq,
		Profile:     stream.Profile{Name: "aws", Controllers: []string{"node", "nodelifecycle", "route", "service"}, Description: "fake"},
		Controllers: w.ctrl,
		Cloud: stream.CloudState{
			State:  cloud.State{Instances: nonNil(w.insts), LoadBalancers: nonNil(w.lbs), Routes: nonNil(w.routes)},
			Faults: stream.Faults{Deny: []string{}}, StepMode: w.stepMode, Waiting: nonNil(w.waiting),
			Calls: nonNil(w.calls), Listeners: stream.Listeners{}, Region: "ap-northeast-1",
		},
		Traces: []stream.Trace{},
		Snapshot: flow.Snapshot{
			Nodes: nonNil(w.nodes), Pods: nonNil(w.pods), Services: nonNil(w.services), Events: []flow.EventView{},
			ServiceFlows: nonNil(w.sflows), NodeFlows: nonNil(w.nflows),
		},
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func envelope(seq uint64, typ string, data stream.Message) []byte {
	b, err := json.Marshal(map[string]any{"seq": seq, "type": typ, "time": time.Now().UTC().Format(time.RFC3339Nano), "data": data})
	if err != nil {
		panic(err)
	}
	return b
}

func (f *fakeLab) serveWS(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.wsQuery = append(f.wsQuery, r.URL.RawQuery)
	if f.down {
		f.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"hub is shutting down"}`, http.StatusServiceUnavailable)
		return
	}
	f.mu.Unlock()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	fc := &fakeConn{c: c, send: make(chan []byte, 8192), done: make(chan struct{})}
	f.mu.Lock()
	// Resume only within this epoch and when nothing was missed; the fake
	// keeps no history, so anything else gets a snapshot.
	q := r.URL.Query()
	if !(q.Get("epoch") == f.epoch && q.Get("since") == fmt.Sprint(f.seq)) {
		fc.send <- envelope(f.seq, stream.TypeSnapshot, f.snapshotData())
	}
	f.conns[fc] = true
	f.mu.Unlock()
	ctx := c.CloseRead(context.Background())
	defer func() {
		f.mu.Lock()
		delete(f.conns, fc)
		f.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-fc.done:
			return
		case b := <-fc.send:
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// publish sends one message to every connected page.
func (f *fakeLab) publish(m stream.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	b := envelope(f.seq, m.Type(), m)
	for c := range f.conns {
		c.send <- b
	}
}

func upsert[T any](typ, key string, data T) stream.Change[T] {
	return stream.Change[T]{Kind: typ, Op: stream.OpUpsert, Key: key, Data: &data}
}

// restart imitates ccmlab going down and coming back: a bye, close 1001,
// a few hundred ms of 503s, then a new epoch whose seqs start again.
func (f *fakeLab) restart(next *world, downFor time.Duration) {
	f.mu.Lock()
	bye := envelope(f.seq, stream.TypeBye, stream.Bye{Reason: "server shutting down"})
	for c := range f.conns {
		c.send <- bye
	}
	f.down = true
	f.restarts++
	conns := make([]*fakeConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	time.Sleep(100 * time.Millisecond) // let the bye go out
	for _, c := range conns {
		c.c.Close(websocket.StatusGoingAway, "server shutting down")
		close(c.done)
	}
	time.Sleep(downFor)
	f.mu.Lock()
	f.world = next
	f.epoch = fmt.Sprintf("epoch-%d", f.restarts+1)
	f.seq = 0
	f.down = false
	f.mu.Unlock()
}

// kick closes every connection as the hub does with a client that fell
// behind (1013); the page must resume with ?since=.
func (f *fakeLab) kick() {
	f.mu.Lock()
	conns := make([]*fakeConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	seq := f.seq
	f.mu.Unlock()
	for _, c := range conns {
		c.c.Close(websocket.StatusTryAgainLater, fmt.Sprintf("too slow; reconnect with ?since=%d", seq))
		close(c.done)
	}
}

func (f *fakeLab) serveAPI(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(body)))
	world := f.world
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/api/controllers/"):
		var req struct{ Enabled bool }
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		world.ctrl[strings.TrimPrefix(r.URL.Path, "/api/controllers/")] = req.Enabled
		status := map[string]bool{}
		for k, v := range world.ctrl {
			status[k] = v
		}
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(status)
		f.publish(stream.Controllers(status))
	case r.Method == http.MethodPost && r.URL.Path == "/api/cloud/stepmode/release":
		if len(world.waiting) == 0 {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":"no cloud call is waiting"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(world.waiting[0])
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"the fake lab does not do that"}`))
	}
}

func (f *fakeLab) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// bigWorld is a class-sized lab: nodes, pods spread over them, and as many
// LoadBalancer Services, each with its flow and load balancer.
func bigWorld(nodes, pods, services int) *world {
	w := &world{ctrl: map[string]bool{"node": true, "nodelifecycle": true, "route": true, "service": true}}
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for i := range nodes {
		name := fmt.Sprintf("ip-10-0-%d-%d.ap-northeast-1.compute.internal", i/250, i%250+4)
		id := fmt.Sprintf("i-%017x", 0xabc000+i)
		zone := []string{"ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"}[i%3]
		w.nodes = append(w.nodes, flow.NodeView{
			Name: name, Ready: "True", Taints: []string{}, ProviderID: "aws:///" + zone + "/" + id,
			Region: "ap-northeast-1", Zone: zone, InstanceType: "m5.large", PodCIDR: fmt.Sprintf("10.244.%d.0/24", i),
			InternalIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+4), Addresses: []string{}, Created: t0,
		})
		w.insts = append(w.insts, cloud.Instance{ID: id, Name: name, PrivateDNSName: name, Zone: zone, InstanceType: "m5.large", PrivateIP: w.nodes[i].InternalIP, State: cloud.InstanceRunning, LaunchTime: t0})
		steps := make([]flow.Step, 6)
		for j, k := range flow.NodeStepKeys() {
			steps[j] = flow.Step{N: j + 1, Key: k, Status: flow.StepDone, At: t0.Add(time.Duration(j) * 50 * time.Millisecond), Evidence: "fake"}
		}
		w.nflows = append(w.nflows, flow.NodeFlow{Node: name, InstanceID: id, Step: 6, Steps: steps})
	}
	for i := range pods {
		node := ""
		if nodes > 0 {
			node = w.nodes[i%nodes].Name
		}
		w.pods = append(w.pods, flow.PodView{Namespace: "default", Name: fmt.Sprintf("web-%d-%05x", i%services, i), Node: node, Phase: "Running", Ready: true, IP: fmt.Sprintf("10.244.%d.%d", i%nodes, i/nodes+2), Image: "nginx:1.29", Scheduled: t0})
	}
	for i := range services {
		name := fmt.Sprintf("web-%d", i)
		lbName := fmt.Sprintf("a%031x", i)
		host := lbName + "-1.elb.ap-northeast-1.ccmlab.internal"
		w.services = append(w.services, flow.ServiceView{
			Namespace: "default", Name: name, UID: fmt.Sprint(i), Type: "LoadBalancer", ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+10),
			ExternalIP: host, Ports: fmt.Sprintf("80:%d/TCP", 30000+i), ExternalTrafficPolicy: "Cluster",
			Finalizers: []string{flow.FinalizerLBCleanup}, Ingress: []string{host}, Created: t0.Add(time.Duration(i) * time.Second),
		})
		steps := make([]flow.Step, 6)
		for j, k := range flow.ServiceStepKeys() {
			st := flow.StepDone
			if j == 5 {
				st = flow.StepCurrent
			}
			steps[j] = flow.Step{N: j + 1, Key: k, Status: st, Evidence: "fake"}
		}
		w.sflows = append(w.sflows, flow.ServiceFlow{Service: "default/" + name, LB: lbName, Handler: "service-controller", Step: 5, Steps: steps})
		var targets []cloud.Target
		for _, in := range w.insts {
			targets = append(targets, cloud.Target{ID: in.ID, Port: int32(30000 + i), Health: cloud.TargetHealthy})
		}
		w.lbs = append(w.lbs, cloud.LoadBalancer{
			Name: lbName, DNSName: host, Scheme: "internet-facing", TargetType: cloud.TargetTypeInstance,
			Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: int32(30000 + i)}}, Targets: nonNil(targets),
			HealthCheck: &cloud.HealthCheck{Protocol: "TCP", Port: int32(30000 + i)},
			Tags:        map[string]string{"kubernetes.io/service-name": "default/" + name}, CreatedAt: t0,
		})
	}
	for i := range 200 {
		w.calls = append(w.calls, cloud.Call{Seq: uint64(i + 1), Time: t0, Action: "DescribeInstances", Caller: "node-controller", Request: "fake", Result: "ok", State: cloud.CallDone})
	}
	return w
}

// burst is n changes of every kind the page handles, as the lab would
// send them during a busy moment (a rollout while load balancers sync).
// The last one renames the last Service's EXTERNAL-IP to marker.
func (f *fakeLab) burst(n int, marker string) {
	f.mu.Lock()
	w := f.world
	f.mu.Unlock()
	for i := range n {
		switch {
		case i == n-1:
			s := w.services[len(w.services)-1]
			s.ExternalIP = marker
			f.publish(upsert(stream.TypeService, s.Key(), s))
		case i%5 == 0:
			p := w.pods[i%len(w.pods)]
			p.Phase, p.Ready = "Pending", false
			f.publish(upsert(stream.TypePod, p.Namespace+"/"+p.Name, p))
		case i%5 == 1:
			nd := w.nodes[i%len(w.nodes)]
			nd.Ready = "False"
			f.publish(upsert(stream.TypeNode, nd.Name, nd))
		case i%5 == 2:
			fl := w.sflows[i%len(w.sflows)]
			fl.Steps = append([]flow.Step(nil), fl.Steps...)
			fl.Steps[5].Status = flow.StepDone
			fl.Step = 6
			f.publish(upsert(stream.TypeServiceFlow, fl.Service, fl))
		case i%5 == 3:
			f.publish(stream.Call{Seq: uint64(1000 + i), Time: time.Now(), Action: "RegisterTargets", Caller: "service-controller", Request: "fake", Result: "ok", State: cloud.CallDone})
		default:
			s := w.services[i%len(w.services)]
			s.Ports = fmt.Sprintf("80:%d/TCP,443:%d/TCP", 30000+i, 31000+i)
			f.publish(upsert(stream.TypeService, s.Key(), s))
		}
	}
}
