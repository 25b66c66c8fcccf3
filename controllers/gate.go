package controllers

import (
	"net/http"
	"sync"
	"time"

	"github.com/ccmlab/ccmlab/controllers/provider"
)

// gate tracks the requests one controller instance has in flight and, once
// closed, refuses new ones. Closing it and waiting for it to drain is what
// makes "switched off" mean that the instance no longer touches the
// apiserver or the cloud, even from a worker goroutine upstream code does
// not wait for.
type gate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Enter registers a request; it reports false once the gate is closed.
func (g *gate) Enter() bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Leave ends a request Enter admitted.
func (g *gate) Leave() {
	if g != nil {
		g.wg.Done()
	}
}

// close refuses new requests and waits up to timeout for those in flight.
// It reports whether they all finished in time.
func (g *gate) close(timeout time.Duration) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// gatedTransport passes requests through a gate. For a watch, the request
// counts as in flight until its response headers arrive; the body is ended
// by the informer factory's shutdown, which the manager waits for first.
type gatedTransport struct {
	g    *gate
	next http.RoundTripper
}

func (t *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.g.Enter() {
		return nil, provider.ErrSwitchedOff
	}
	defer t.g.Leave()
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes on to the next transport, so that
// http.Client.CloseIdleConnections reaches it through the gate (the lbc
// add-on closes its keep-alive connections to the AWS API when it stops).
func (t *gatedTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
