package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/server"
)

type serveOptions struct {
	listen    string
	dataDir   string
	nodes     int
	verbosity int
	// bareAPIServer is the cold-start benchmark's baseline: etcd and
	// kube-apiserver only.
	bareAPIServer bool
}

func defaultServeOptions() *serveOptions {
	return &serveOptions{listen: "127.0.0.1:8080", dataDir: ".ccmlab", nodes: 3}
}

func (o *serveOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listen, "listen", o.listen, "address of the web view and API")
	fs.StringVar(&o.dataDir, "data-dir", o.dataDir, "where the lab keeps its state (etcd, cloud, kubeconfig)")
	fs.IntVar(&o.nodes, "nodes", o.nodes, "number of instances (nodes) the lab launches on first start")
	fs.IntVarP(&o.verbosity, "v", "v", o.verbosity, "log verbosity of the Kubernetes components (0 = quiet)")
	fs.BoolVar(&o.bareAPIServer, "bare-apiserver", false, "start only etcd and kube-apiserver (benchmark baseline)")
	_ = fs.MarkHidden("bare-apiserver")
}

func (o *serveOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	if o.nodes < 0 || o.nodes > 1000 {
		return fmt.Errorf("--nodes %d: must be between 0 and 1000", o.nodes)
	}
	if o.verbosity < 0 {
		return fmt.Errorf("-v %d: must not be negative", o.verbosity)
	}
	return nil
}

func serve(ctx context.Context, o *serveOptions, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	begin := time.Now()
	// Bind before touching anything, so a busy port fails fast and leaves
	// the data dir as it was.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, errors.Unwrap(err))
	}
	dataDir, unlock, err := prepareDataDir(o.dataDir)
	if err != nil {
		ln.Close()
		return err
	}
	defer unlock()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := server.New(server.Config{Logger: logger})
	if err != nil {
		ln.Close()
		return err
	}
	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = httpServer.Shutdown(shutdownCtx)
	}()

	progress := func(stage string, elapsed time.Duration) {
		fmt.Fprintf(out, "  %-20s ready after %s\n", stage, elapsed.Round(10*time.Millisecond))
	}
	fmt.Fprintf(out, "ccmlab %s starting in %s\n", version, dataDir)
	cp, err := controlplane.Start(ctx, controlplane.Config{
		DataDir:       dataDir,
		Verbosity:     o.verbosity,
		Progress:      progress,
		APIServerOnly: o.bareAPIServer,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "ccmlab stopping")
		if err := cp.Stop(); err != nil {
			logger.Error("stopping the control plane", "err", err)
		}
	}()
	srv.SetReady(true)
	progress("lab", time.Since(begin))
	fmt.Fprintf(out, "ccmlab is ready: http://%s  kubeconfig: %s\n", ln.Addr(), cp.KubeconfigPath())

	select {
	case <-ctx.Done():
		srv.SetReady(false)
		return nil
	case err := <-serveErr:
		return fmt.Errorf("web server: %w", err)
	}
}

// prepareDataDir makes sure the data dir exists and is writable, and locks
// it so that a second ccmlab on the same dir fails with a clear message
// instead of two etcds fighting over one database.
func prepareDataDir(dir string) (string, func(), error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", nil, fmt.Errorf("--data-dir %s is not usable: %w", abs, errors.Unwrap(err))
	}
	lock, err := os.OpenFile(filepath.Join(abs, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("--data-dir %s is not writable: %w", abs, errors.Unwrap(err))
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return "", nil, fmt.Errorf("--data-dir %s is in use by another ccmlab", abs)
	}
	return abs, func() {
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		lock.Close()
	}, nil
}
