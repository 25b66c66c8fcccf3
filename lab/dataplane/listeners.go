package dataplane

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// A simulated load balancer has no address anyone can connect to, so every
// TCP listener of every load balancer in the cloud gets a real port on
// ListenHost. It speaks HTTP, which is what students send with curl; the
// answer comes from the Pod the request was routed to, and the trace ID
// travels in the X-Ccmlab-Trace header so the page can show that request's
// way. UDP listeners get no port: HTTP does not run over them.
//
// Each port comes from the host's ephemeral range, which every lab of a
// class and the portal share, so a lab opens at most its cloud's
// Quotas.ListenerSockets of them. The cloud refuses a load balancer or
// listener past that quota with AWS's limit error; the cap here holds even
// when the cloud holds more (a state file saved under a larger quota):
// the listeners of the oldest load balancers stay open, the others are
// refused and logged once.

type listenerKey struct {
	lb   string
	port int32
}

type lbListener struct {
	key  listenerKey
	addr string
	srv  *http.Server
}

// ListenerInfo is one open listener: traffic to Address reaches listener
// Port of load balancer LB.
type ListenerInfo struct {
	LB      string `json:"lb"`
	Port    int32  `json:"port"`
	Address string `json:"address"` // e.g. "127.0.0.1:41234"
}

// Listeners lists the open listeners by load balancer and port.
func (d *Dataplane) Listeners() []ListenerInfo {
	d.lmu.Lock()
	out := make([]ListenerInfo, 0, len(d.listeners))
	for k, l := range d.listeners {
		out = append(out, ListenerInfo{LB: k.lb, Port: k.port, Address: l.addr})
	}
	d.lmu.Unlock()
	slices.SortFunc(out, func(a, b ListenerInfo) int {
		return cmp.Or(strings.Compare(a.LB, b.LB), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// RefusedListeners lists the listeners that have no port because the cap
// was reached, by load balancer and port (Address empty).
func (d *Dataplane) RefusedListeners() []ListenerInfo {
	d.lmu.Lock()
	out := make([]ListenerInfo, 0, len(d.refused))
	for k := range d.refused {
		out = append(out, ListenerInfo{LB: k.lb, Port: k.port})
	}
	d.lmu.Unlock()
	slices.SortFunc(out, func(a, b ListenerInfo) int {
		return cmp.Or(strings.Compare(a.LB, b.LB), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// ListenerCap is the most listener sockets the data plane opens: the
// cloud's Quotas.ListenerSockets.
func (d *Dataplane) ListenerCap() int { return d.cfg.Cloud.Config().Quotas.ListenerSockets }

// syncListeners opens a listener for every TCP listener in cv that has
// none, up to ListenerCap, and closes those whose load balancer or
// listener is gone. A port that fails to open, or that the cap refused,
// is tried again at the next sync.
func (d *Dataplane) syncListeners(cv *cloudView) {
	type wanted struct {
		key     listenerKey
		created time.Time
	}
	var want []wanted
	wantSet := map[listenerKey]bool{}
	for _, lb := range cv.lbs {
		if internalOnly(lb) {
			// An internal load balancer has only private addresses: the
			// student's shell reaches it nowhere, so no loopback port
			// stands in for it (Pods reach it through FromPod).
			continue
		}
		for _, l := range lb.Listeners {
			k := listenerKey{lb.Name, l.Port}
			if protoOf(v1.Protocol(l.Protocol)) == v1.ProtocolTCP && !wantSet[k] {
				wantSet[k] = true
				want = append(want, wanted{k, lb.CreatedAt})
			}
		}
	}
	// Past the cap the oldest load balancers keep their ports, as the
	// cloud's quota would have refused the newest.
	slices.SortFunc(want, func(a, b wanted) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.key.lb, b.key.lb), cmp.Compare(a.key.port, b.key.port))
	})
	limit := d.ListenerCap()
	d.lmu.Lock()
	defer d.lmu.Unlock()
	if d.closed {
		return
	}
	for k, l := range d.listeners {
		if !wantSet[k] {
			d.closeListener(l)
			delete(d.listeners, k)
		}
	}
	refused := map[listenerKey]bool{}
	for _, w := range want {
		k := w.key
		if _, ok := d.listeners[k]; ok {
			continue
		}
		if len(d.listeners) >= limit {
			refused[k] = true
			if !d.refused[k] {
				d.log.Warn("load balancer listener refused: the lab's listener sockets are at their cap; delete a load balancer or a listener",
					"lb", k.lb, "port", k.port, "cap", limit, "open", len(d.listeners))
			}
			continue
		}
		l, err := d.openListener(k)
		if err != nil {
			d.log.Warn("cannot open load balancer listener", "lb", k.lb, "port", k.port, "err", err)
			continue
		}
		d.listeners[k] = l
		d.log.Info("load balancer listener open", "lb", k.lb, "port", k.port, "address", l.addr)
	}
	d.refused = refused
}

func (d *Dataplane) openListener(k listenerKey) (*lbListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(d.cfg.ListenHost, "0"))
	if err != nil {
		return nil, err
	}
	srv, err := httpguard.NewServer(httpguard.ServerConfig{
		Handler:  d.handler(k),
		ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	d.serving.Add(1)
	go func() {
		defer d.serving.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Warn("load balancer listener stopped", "lb", k.lb, "port", k.port, "err", err)
		}
	}()
	return &lbListener{key: k, addr: ln.Addr().String(), srv: srv}, nil
}

func (d *Dataplane) closeListener(l *lbListener) {
	// Close, not Shutdown: a load balancer that is deleted drops its
	// connections; it does not drain them.
	_ = l.srv.Close()
	d.log.Info("load balancer listener closed", "lb", l.key.lb, "port", l.key.port, "address", l.addr)
}

// closeListeners closes every listener for good and waits for their
// servers to stop.
func (d *Dataplane) closeListeners() {
	d.lmu.Lock()
	d.closed = true
	for k, l := range d.listeners {
		d.closeListener(l)
		delete(d.listeners, k)
	}
	d.lmu.Unlock()
	d.serving.Wait()
}

// handler serves one listener: the connection is one request through the
// load balancer, routed exactly as Do routes a simulated one.
func (d *Dataplane) handler(k listenerKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := Request{Kind: KindLoadBalancer, LB: k.lb, Port: k.port, ClientIP: hostOnly(r.RemoteAddr), Origin: OriginListener, httpReq: r}
		tr, ans, err := d.route(req, r.Method, r.URL.RequestURI())
		if err != nil {
			// The load balancer or listener went away between the accept
			// and the request; its port is about to close.
			tr.Kind, tr.LB, tr.Origin = KindLoadBalancer, k.lb, OriginListener
			tr.fail(http.StatusServiceUnavailable, why(tracetext.NotListening, "error", err.Error()))
			ans = failureAnswer(tr)
		}
		d.traces.add(tr)
		if tr.Error != "" && d.layer4(k) {
			d.failL4(w, tr.Status == statusDropped)
			return
		}
		h := w.Header()
		for name, vals := range ans.header {
			h[name] = vals
		}
		h.Set(TraceHeader, tr.ID)
		h.Set("Content-Length", strconv.Itoa(len(ans.body)))
		w.WriteHeader(ans.status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(ans.body)
		}
	})
}

// failureAnswer is what the client gets when the request reached no Pod:
// the status, and in the body why, so that curl alone explains it.
func failureAnswer(tr Trace) answer {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	body := fmt.Sprintf("ccmlab: %d %s\n%s\ntrace: %s\n", tr.Status, http.StatusText(tr.Status), tr.Error, tr.ID)
	return answer{status: tr.Status, header: h, body: []byte(body)}
}

// internalOnly: an internal load balancer, reachable only from inside the
// VPC.
func internalOnly(lb *cloud.LoadBalancer) bool { return lb.Scheme == cloud.SchemeInternal }

// layer4 reports whether listener k only carries a connection: an NLB's
// (TCP, TLS) or a Classic ELB's TCP or SSL listener. Such a load balancer
// never writes an HTTP answer of its own; only a Classic ELB's HTTP and
// HTTPS listeners do (503 with no healthy instance). The lab's own load
// balancers keep answering with the failure and its trace, as before.
func (d *Dataplane) layer4(k listenerKey) bool {
	lb := d.env().cloud.loadBalancer(k.lb)
	if lb == nil || !isAWS(lb) {
		return false
	}
	l, ok := findListener(lb, k.port)
	return ok && l.Frontend == ""
}

// failL4 ends a connection that reached no Pod as the network would: a
// dropped packet gets no answer, so the connection is held, unanswered,
// until the client gives up or DroppedHold passes; anything else (no
// target, nothing listening, a target taken out of service: an NLB "sends
// a TCP RST for packets received on the client connections associated
// with the target") is reset. At most maxHeldConns are held at once; past
// that a dropped one is reset too.
func (d *Dataplane) failL4(w http.ResponseWriter, dropped bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if dropped {
		select {
		case d.held <- struct{}{}:
			defer func() { <-d.held }()
			_ = conn.SetReadDeadline(time.Now().Add(d.cfg.DroppedHold))
			_, _ = io.Copy(io.Discard, conn)
		default:
		}
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with a RST, not a FIN
	}
	_ = conn.Close()
}
