package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// ErrRefused is what every *RefusedError wraps: the line is not an allowed
// kubectl command (a bad request, not a failure of the lab).
var ErrRefused = errors.New("refused by the console")

// RefusedError is why the console will not run a line. Error() is the
// English text; Reason has both of the lab's languages.
type RefusedError struct {
	Reason i18n.Text
}

func (e *RefusedError) Error() string { return e.Reason.EN }

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

func refuse(ja, en string, args ...any) error {
	return &RefusedError{i18n.Textf(ja, en, args...)}
}

func refuseText(ja, en string) error { return &RefusedError{i18n.Text{JA: ja, EN: en}} }

// Config wires the console to the lab.
type Config struct {
	// DataDir is the lab's data dir: the kubeconfig is DataDir/kubeconfig.
	DataDir string
	// Binary is the ccmlab executable (its "kubectl" subcommand is the
	// embedded kubectl). Default: this process's own executable.
	Binary string
	// TempDir is where each command gets its own empty working directory
	// and HOME, removed when it ends. It must not be inside DataDir (a
	// path relative to the working directory would reach the lab's files).
	// Default: os.TempDir().
	TempDir string
	// Timeout per command; default 20s.
	Timeout time.Duration
	// MaxOutput bounds stdout and stderr together; default 64 KiB.
	MaxOutput int
	// Parallel bounds commands running at once; default 2.
	Parallel int
}

// Console runs kubectl commands typed in the page.
type Console struct {
	cfg Config
	sem chan struct{}
}

// Result is what a command printed (stdout and stderr, interleaved as
// written) and its exit code. A command that timed out has exit code -1.
type Result struct {
	Output    string `json:"output"`
	ExitCode  int    `json:"exitCode"`
	Truncated bool   `json:"truncated,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Console, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return &Console{cfg: cfg, sem: make(chan struct{}, cfg.Parallel)}, nil
}

func (cfg *Config) validate() error {
	if cfg.DataDir == "" {
		return errors.New("DataDir is required")
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the ccmlab binary: %w", err)
		}
		cfg.Binary = exe
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 64 << 10
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 2
	}
	var err error
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return err
	}
	if cfg.TempDir, err = filepath.Abs(cfg.TempDir); err != nil {
		return err
	}
	if rel, err := filepath.Rel(cfg.DataDir, cfg.TempDir); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return fmt.Errorf("TempDir %s is inside DataDir %s", cfg.TempDir, cfg.DataDir)
	}
	return nil
}

// limitedBuffer keeps the first max bytes written and remembers whether
// more came.
type limitedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Run parses line and, if the console's policy allows it, runs it with the
// embedded kubectl against the lab: no shell, the lab's kubeconfig, a
// fresh empty working directory and HOME outside the data dir (so no
// relative path reaches the lab's files and kubectl finds no kubeconfig,
// kuberc or cache but the lab's), an environment of only those, a timeout
// and bounded output. A refused line is a *RefusedError (ErrRefused);
// kubectl's own failures are a Result with a non-zero ExitCode.
func (c *Console) Run(ctx context.Context, line string) (Result, error) {
	program, args, err := ParseCommand(line)
	if err != nil {
		return Result{}, err
	}
	kubeconfig := "kubeconfig"
	if program == "curl" {
		// ccmlab curl from outside the VPC, with the console's own
		// rules (--from-console: only the load balancers' listeners).
		args = append([]string{"curl", "--from-console", "--data-dir", c.cfg.DataDir}, args...)
	} else {
		if len(args) > 0 && args[0] == InfraFlag {
			// The management cluster (Parse allowed reading only): its
			// kubeconfig, as `ccmlab kubectl --infra` picks it.
			kubeconfig, args = InfraKubeconfig, args[1:]
		}
		args = append([]string{"kubectl"}, args...)
	}
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp(c.cfg.TempDir, "ccmlab-console-")
	if err != nil {
		return Result{}, fmt.Errorf("console: %w", err)
	}
	defer os.RemoveAll(tmp)
	work, home := filepath.Join(tmp, "work"), filepath.Join(tmp, "home")
	for _, d := range []string{work, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return Result{}, fmt.Errorf("console: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, c.cfg.Binary, args...)
	cmd.Dir = work
	cmd.Env = []string{
		"KUBECONFIG=" + filepath.Join(c.cfg.DataDir, kubeconfig),
		"HOME=" + home, // kubectl's discovery cache, empty each time
		"KUBERC=off",   // no preferences file, whatever HOME holds
		"PATH=",        // no plugins, no credential helpers
		"LANG=C.UTF-8",
	}
	out := &limitedBuffer{max: c.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	res := Result{Output: out.buf.String(), Truncated: out.truncated}
	if res.Truncated {
		res.Output += fmt.Sprintf("\n[output cut at %d KiB]\n", c.cfg.MaxOutput>>10)
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.TimedOut, res.ExitCode = true, -1
		res.Output += fmt.Sprintf("\n[stopped after %s]\n", c.cfg.Timeout)
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case err != nil:
		return Result{}, fmt.Errorf("console: running kubectl: %w", err)
	}
	return res, nil
}
