package awsapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	Handler Config
	// Listen is a loopback host:port; port 0 picks a free one.
	Listen string // default "127.0.0.1:0"
	// EnvPath, when set, is where the server writes export lines for
	// AWS_ENDPOINT_URL, the credentials and the region (<data-dir>/aws.env).
	EnvPath string
}

func (c *ServerConfig) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
}

// ValidateListen accepts only loopback addresses: the simulated cloud is
// never reachable from another machine.
func ValidateListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("AWS API address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("AWS API address %q: must be a loopback address like 127.0.0.1:4566", addr)
	}
	return nil
}

// Server serves the API on a loopback listener.
type Server struct {
	cfg ServerConfig
	ln  net.Listener
	srv *http.Server
}

// Listen binds the listener and writes the env file; Serve then answers.
func Listen(cfg ServerConfig) (*Server, error) {
	cfg.setDefaults()
	if err := ValidateListen(cfg.Listen); err != nil {
		return nil, err
	}
	h, err := New(cfg.Handler)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("AWS API: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	if cfg.EnvPath != "" {
		if err := WriteEnv(cfg.EnvPath, s.URL(), cfg.Handler.Cloud.Config().Region); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return s, nil
}

// URL is the endpoint URL, e.g. http://127.0.0.1:4566.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Serve answers until ctx ends, then shuts down.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// WriteEnv writes the export lines the AWS CLI needs to talk to the lab:
// `. <data-dir>/aws.env` and then `aws ec2 describe-instances`.
func WriteEnv(path, endpoint, region string) error {
	body := fmt.Sprintf(`# The lab's simulated AWS (ccmlab): . this file, then use the aws CLI.
export AWS_ENDPOINT_URL=%s
export AWS_ACCESS_KEY_ID=%s
export AWS_SECRET_ACCESS_KEY=%s
export AWS_DEFAULT_REGION=%s
export AWS_REGION=%s
export AWS_EC2_METADATA_DISABLED=true
export AWS_PAGER=
`, endpoint, DefaultAccessKeyID, DefaultSecretAccessKey, region, region)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), 0o600)
}
