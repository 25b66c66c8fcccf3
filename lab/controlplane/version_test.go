package controlplane_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/lab/controlplane"
)

// The version a test binary reports comes from a constant, since go test
// records no module versions; it must follow go.mod.
func TestKubernetesGoMod(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != controlplane.KubernetesGoMod {
		t.Fatalf("go.mod has k8s.io/kubernetes %s, lab/controlplane/version.go says %s: update kubernetesGoMod", got, controlplane.KubernetesGoMod)
	}
}
