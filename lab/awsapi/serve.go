package awsapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	Handler Config
	// Listen is a loopback host:port; port 0 picks a free one.
	Listen string // default "127.0.0.1:0"
	// EnvPath, when set, is where the server writes export lines for
	// AWS_ENDPOINT_URL, the student's key and the region
	// (<data-dir>/aws.env).
	EnvPath string
	// KeyPath is where the student's key is kept across restarts
	// (default: aws-key.json beside EnvPath; without either the key lives
	// in memory only).
	KeyPath string
	// Files writes the data dir's files (default datafs.OS{}).
	Files datafs.Writer
}

func (c *ServerConfig) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.KeyPath == "" && c.EnvPath != "" {
		c.KeyPath = filepath.Join(filepath.Dir(c.EnvPath), "aws-key.json")
	}
	if c.Files == nil {
		c.Files = datafs.OS{}
	}
	if c.Handler.Keys == nil {
		c.Handler.Keys = NewKeys()
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
	cfg     ServerConfig
	ln      net.Listener
	srv     *http.Server
	student Credentials
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
	var student Credentials
	if cfg.KeyPath != "" {
		if student, err = LoadStudentKey(cfg.KeyPath, cfg.Files); err == nil {
			err = cfg.Handler.Keys.Add(StudentCaller, student)
		}
	} else {
		student, err = cfg.Handler.Keys.Issue(StudentCaller)
	}
	if err != nil {
		return nil, err
	}
	ln, err := listen(cfg)
	if err != nil {
		return nil, fmt.Errorf("AWS API: %w", err)
	}
	// httpguard's bounds, its WriteTimeout per write: a call held in step
	// mode, or slowed by injected latency, answers whenever it is let go.
	srv, err := httpguard.NewServer(httpguard.ServerConfig{Handler: h})
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, srv: srv, student: student}
	if cfg.EnvPath != "" {
		if err := WriteEnv(cfg.Files, cfg.EnvPath, s.URL(), cfg.Handler.Cloud.Config().Region, student); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return s, nil
}

// listen binds cfg.Listen. With port 0 (pick one) and an env file from an
// earlier run, it first tries the port that file names, so that a
// student's shell which sourced aws.env before a restart still reaches
// the lab; a port taken since falls back to a new one (the file is then
// rewritten, and sourcing it again picks that up).
func listen(cfg ServerConfig) (net.Listener, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if port == "0" && cfg.EnvPath != "" {
		if prev := previousPort(cfg.EnvPath); prev != "" {
			if ln, err := net.Listen("tcp", net.JoinHostPort(host, prev)); err == nil {
				return ln, nil
			}
		}
	}
	return net.Listen("tcp", cfg.Listen)
}

// previousPort is the port of the AWS_ENDPOINT_URL an earlier run wrote to
// the env file at path ("" when there is none to reuse).
func previousPort(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "export AWS_ENDPOINT_URL=")
		if !ok {
			continue
		}
		u, err := url.Parse(strings.TrimSpace(v))
		if err != nil || u.Port() == "" {
			return ""
		}
		if n, err := strconv.Atoi(u.Port()); err != nil || n <= 0 || n > 65535 {
			return ""
		}
		return u.Port()
	}
	return ""
}

// URL is the endpoint URL, e.g. http://127.0.0.1:4566.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// StudentKey is the key aws.env gives the student's shell.
func (s *Server) StudentKey() Credentials { return s.student }

// Keys is the server's key store: a lab caller asks it for its own key.
func (s *Server) Keys() *Keys { return s.cfg.Handler.Keys }

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

// WriteEnv writes the export lines the AWS CLI needs to talk to the lab
// as the student: `. <data-dir>/aws.env` and then `aws ec2
// describe-instances`.
func WriteEnv(files datafs.Writer, path, endpoint, region string, c Credentials) error {
	body := fmt.Sprintf(`# The lab's simulated AWS (ccmlab): . this file, then use the aws CLI.
# The key is this lab's own (IAM user %s); the call log names its calls %s.
export AWS_ENDPOINT_URL=%s
export AWS_ACCESS_KEY_ID=%s
export AWS_SECRET_ACCESS_KEY=%s
export AWS_DEFAULT_REGION=%s
export AWS_REGION=%s
export AWS_EC2_METADATA_DISABLED=true
export AWS_PAGER=
# AWS CLI versions before 2.13 (Debian 12's is 2.9) ignore AWS_ENDPOINT_URL
# and would call the real AWS: the command line names the lab for them.
aws() { command aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
`, StudentCaller, StudentCaller, endpoint, c.AccessKeyID, c.SecretAccessKey, region, region)
	return files.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, body)
		return err
	})
}
