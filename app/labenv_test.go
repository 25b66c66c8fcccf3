package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/internal/datafs"
)

// lab.env, sourced once by a student's terminal, gives kubectl the lab's
// kubeconfig, the AWS CLI what aws.env says now (read again each time it
// is sourced) and a ccmlab function, from a data dir whose path a shell
// would otherwise split.
func TestLabEnv(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	dir := filepath.Join(t.TempDir(), "my lab's dir")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeLabEnv(datafs.OS{}, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "aws.env"), []byte("export AWS_ENDPOINT_URL=http://127.0.0.1:4566\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `. "$1"; echo "$KUBECONFIG|$CCMLAB_DATA_DIR|$AWS_ENDPOINT_URL|$(type -t ccmlab)"`
	out, err := exec.Command("bash", "--noprofile", "--norc", "-c", script, "bash", filepath.Join(dir, "lab.env")).CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing lab.env: %v\n%s", err, out)
	}
	want := filepath.Join(dir, "kubeconfig") + "|" + dir + "|http://127.0.0.1:4566|function"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("after . lab.env: %q, want %q", got, want)
	}
}
