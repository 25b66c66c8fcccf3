package awslbc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// webhookServer is controller-runtime's webhook.Server on a listener the
// lab opened (loopback, port chosen by the kernel) with the certificate
// the lab gave: controller-runtime's own server binds a fixed port and
// reads files.
type webhookServer struct {
	ln  net.Listener
	tls *tls.Config
	mux *http.ServeMux
	log logr.Logger
	mu  sync.Mutex
	up  bool
}

var _ webhook.Server = (*webhookServer)(nil)

func newWebhookServer(ln net.Listener, certPEM, keyPEM []byte, log logr.Logger) (*webhookServer, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("webhook certificate: %w", err)
	}
	return &webhookServer{
		ln:  ln,
		tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
		mux: http.NewServeMux(),
		log: log,
	}, nil
}

func (s *webhookServer) NeedLeaderElection() bool             { return false }
func (s *webhookServer) WebhookMux() *http.ServeMux           { return s.mux }
func (s *webhookServer) Register(path string, h http.Handler) { s.mux.Handle(path, h) }

func (s *webhookServer) Start(ctx context.Context) error {
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second, MaxHeaderBytes: 64 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.mu.Lock()
	s.up = true
	s.mu.Unlock()
	s.log.Info("Serving webhook server", "addr", s.ln.Addr().String())
	err := srv.Serve(tls.NewListener(s.ln, s.tls))
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	<-done
	return err
}

func (s *webhookServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.up {
			return errors.New("webhook server has not been started yet")
		}
		return nil
	}
}
