// Command ccmlab runs the cloud-controller-manager teaching lab: a real
// Kubernetes control plane, a simulated cloud and an embedded CCM in one
// process, with a web view. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	var ee exitError
	if errors.As(err, &ee) {
		// curl's own exit code; it printed its own message.
		os.Exit(ee.code)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ccmlab: %v\n", err)
		os.Exit(1)
	}
}
