package podruntime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// CurlConfig runs the runtime's curl outside any Pod: `ccmlab curl` in
// the student's shell and the page's console. Network decides where each
// name resolves and where each request goes (lab/dataplane/outside's
// Client: the lab's load balancers as seen from outside the VPC); the
// flags, the messages, the -v and -w output and the exit codes are the
// same code as a Pod's curl, so the two cannot drift apart.
type CurlConfig struct {
	Network Network // required
	Stdout  io.Writer
	Stderr  io.Writer
	// TTY: stdout is a terminal (curl then shows no progress meter).
	TTY bool
	// Create opens the file -o names; nil refuses every -o but
	// /dev/null and - (the console writes no file).
	Create func(path string) (io.Writer, error)
	Clock  clock.WithTicker // default clock.RealClock{}
	// MaxBody bounds the body curl keeps; default 1 MiB.
	MaxBody int
}

// errNoFiles: this curl writes no file.
var errNoFiles = errors.New("no files here")

// Curl runs `curl args...` (args[0] is "curl") and returns its exit code.
func Curl(ctx context.Context, cfg CurlConfig, args []string) int {
	if cfg.Network == nil {
		panic("podruntime.Curl: a Network is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	rt := &Runtime{cfg: Config{Network: cfg.Network, Clock: cfg.Clock, Limits: Limits{MaxBody: cfg.MaxBody}, Logger: slog.New(slog.DiscardHandler)}}
	rt.cfg.Limits.setDefaults()
	create := cfg.Create
	if create == nil {
		create = func(string) (io.Writer, error) { return nil, errNoFiles }
	}
	// The outside has no Pod: an empty one, which the Network knows as
	// the student's machine (no namespace, no IP).
	b := &box{pod: &v1.Pod{}, img: image{}, fs: newMemFS(map[string]string{}, nil, 0, 0), create: create}
	p := &proc{rt: rt, box: b, stdout: cfg.Stdout, stderr: cfg.Stderr, tty: cfg.TTY, dir: "/",
		meter: &meter{rate: rt.cfg.Limits.StepsPerSecond, clock: rt.cfg.Clock}}
	if len(args) == 0 || args[0] != "curl" {
		args = append([]string{"curl"}, args...)
	}
	return cmdCurl(ctx, p, args)
}

// createOutput opens curl's -o file: the container's own, or where the
// box says (Curl's).
func (p *proc) createOutput(name string) (io.Writer, error) {
	if name == "/dev/null" {
		return io.Discard, nil
	}
	if p.box.create != nil {
		return p.box.create(name)
	}
	return p.box.fs.writer(p.abs(name), false)
}

// CreateFile is CurlConfig.Create for the student's shell: the file
// relative to the working directory, as curl -o writes it. The caller
// closes what it returns (an *os.File).
func CreateFile(name string) (io.Writer, error) {
	return os.Create(name)
}
