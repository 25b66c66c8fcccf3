package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStringConstants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.go")
	src := "package keys\n\nconst (\n\tA = \"a.key\"\n\tB = `b.key`\n\tN = 3\n)\n\nvar V = \"not a const\"\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := StringConstants(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got["a.key"] || !got["b.key"] {
		t.Errorf("StringConstants = %v, want a.key and b.key only", got)
	}
}
