package testutil

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Kubectl runs the system's kubectl against kubeconfig, as a student runs
// theirs, and returns its combined output and exit code. A missing kubectl
// skips the test, or fails it under CI, where .ci/run installs one.
func Kubectl(t testing.TB, kubeconfig string, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is not installed")
		}
		t.Skip("kubectl is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return string(out), 0
}

// MustKubectl is Kubectl that fails the test unless kubectl exits 0
// within two minutes.
func MustKubectl(t testing.TB, kubeconfig string, args ...string) string {
	t.Helper()
	out, code := Kubectl(t, kubeconfig, 2*time.Minute, args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}
