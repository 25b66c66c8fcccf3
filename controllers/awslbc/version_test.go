package awslbc

import (
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/version"
)

// TestModuleVersion: the controller's version line names the module
// version go.mod requires, not the empty string an embedded build leaves.
func TestModuleVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", modulePath).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != ModuleVersion {
		t.Fatalf("go.mod has %s %s, controllers/awslbc says %s: update ModuleVersion", modulePath, got, ModuleVersion)
	}
	if version.GitVersion != ModuleVersion {
		t.Errorf("GitVersion %q, want %s", version.GitVersion, ModuleVersion)
	}
}
