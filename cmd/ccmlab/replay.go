package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/server/replay"
)

type replayOptions struct {
	listen string
}

// newReplayCommand is `ccmlab replay FILE`: the page, playing a recording
// saved from a lab's GET /api/recording, with no lab at all.
func newReplayCommand(stdout io.Writer) *cobra.Command {
	o := &replayOptions{listen: "127.0.0.1:8080"}
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Serve the page playing a recording (from GET /api/recording), without a lab",
		Long: `ccmlab replay serves the lab's page from a recording alone: no control plane,
no cloud, no data dir. Save one from a running lab with

  curl -o demo.ndjson http://127.0.0.1:8080/api/recording

(or the page's "Download the recording" link). The page opens at the
recording's last moment, paused, with play, pause, speed and a scrubber.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd.Context(), args[0], o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", o.listen, "address of the page")
	return cmd
}

func runReplay(ctx context.Context, file string, o *replayOptions, out io.Writer) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	rec, err := io.ReadAll(io.LimitReader(f, replay.MaxRecording+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: want host:port", o.listen)
	}
	srv, err := replay.New(replay.Config{
		Recording: rec, Name: file, Listen: o.listen,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, errors.Unwrap(err))
	}
	// httpguard's bounds: the recording (up to MaxRecording) streams in
	// writes each bounded by WriteTimeout, however long it takes in all.
	httpServer, err := httpguard.NewServer(httpguard.ServerConfig{
		Handler:     srv,
		BaseContext: func(net.Listener) context.Context { return ctx },
	})
	if err != nil {
		ln.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	info := srv.Info()
	fmt.Fprintf(out, "replaying %s (%d changes, %s to %s): http://%s\n", file, info.Frames,
		info.From.Local().Format(time.TimeOnly), info.To.Local().Format(time.TimeOnly), ln.Addr())
	select {
	case err := <-served:
		return fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = httpServer.Shutdown(shutdownCtx)
	return nil
}
