package awsapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestStudentKey: a lab makes its own random key on first start, keeps it
// in the data dir (readable by its owner only) and writes it into aws.env;
// a restart keeps it; another lab's is another key; a file that is not a
// key, or a full disk, stops the start with a clear error and changes
// nothing.
func TestStudentKey(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	start := func(t *testing.T, dir string, files datafs.Writer) (*Server, error) {
		t.Helper()
		srv, err := Listen(ServerConfig{Handler: Config{Cloud: c}, EnvPath: filepath.Join(dir, "aws.env"), Files: files})
		if err == nil {
			t.Cleanup(func() { _ = srv.ln.Close() })
		}
		return srv, err
	}
	dir := t.TempDir()
	first, err := start(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := first.StudentKey()
	if err := key.validate(); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join(dir, "aws.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"export AWS_ACCESS_KEY_ID=" + key.AccessKeyID + "\n", "export AWS_SECRET_ACCESS_KEY=" + key.SecretAccessKey + "\n",
		"export AWS_ENDPOINT_URL=" + first.URL() + "\n"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("aws.env lacks %q:\n%s", want, env)
		}
	}
	for _, f := range []string{"aws.env", "aws-key.json"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if _, id, ok := first.Keys().lookup(key.AccessKeyID); !ok || id.Caller != StudentCaller {
		t.Fatalf("the student's key is %+v in the store", id)
	}

	t.Run("restart keeps the key", func(t *testing.T) {
		again, err := start(t, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if again.StudentKey() != key {
			t.Fatal("a restart changed the student's key")
		}
	})
	t.Run("another lab has another key", func(t *testing.T) {
		other, err := start(t, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if o := other.StudentKey(); o.AccessKeyID == key.AccessKeyID || o.SecretAccessKey == key.SecretAccessKey {
			t.Fatal("two labs share a key")
		}
	})
	for _, tc := range []struct{ name, content string }{
		{"not JSON", "AKIA"},
		{"not a key", `{"AccessKeyId":"AKIACCMLABLOCAL00000","SecretAccessKey":"ccmlab-local-secret-not-a-real-key"}`},
		{"an unknown field", `{"AccessKeyId":"` + key.AccessKeyID + `","SecretAccessKey":"` + key.SecretAccessKey + `","Role":"admin"}`},
	} {
		t.Run("a key file that is "+tc.name, func(t *testing.T) {
			bad := t.TempDir()
			path := filepath.Join(bad, "aws-key.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := start(t, bad, nil); err == nil || !strings.Contains(err.Error(), "delete it") {
				t.Fatalf("start: %v, want an error that says what to do", err)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.content {
				t.Fatal("the start rewrote a key file it refused")
			}
			if _, err := os.Stat(filepath.Join(bad, "aws.env")); err == nil {
				t.Fatal("the start wrote aws.env without a key")
			}
		})
	}
	t.Run("a full disk", func(t *testing.T) {
		full := &datafs.Switch{}
		full.SetFull(true)
		empty := t.TempDir()
		if _, err := start(t, empty, full); !datafs.IsFull(err) {
			t.Fatalf("start on a full disk: %v, want ENOSPC", err)
		}
		if ents, _ := os.ReadDir(empty); len(ents) != 0 {
			t.Fatalf("a full disk left %v", ents)
		}
	})
}

// TestKeysIssue: a caller's key is its own and stable; a caller is a
// plain name.
func TestKeysIssue(t *testing.T) {
	k := NewKeys()
	a, err := k.Issue("node-controller")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := k.Issue("node-controller"); again != a {
		t.Fatal("Issue gave one caller two keys")
	}
	for _, bad := range []string{"", "Service-Controller", "a/b", "aws-cli\n", strings.Repeat("a", 64)} {
		if _, err := k.Issue(bad); err == nil {
			t.Errorf("Issue(%q) took a caller that is not a plain name", bad)
		}
	}
	if err := k.Add("other", a); err == nil {
		t.Fatal("Add gave a second caller a key already issued")
	}
	if err := k.Add(StudentCaller, Credentials{"AKIA", "x"}); err == nil {
		t.Fatal("Add took a malformed key")
	}
	if _, _, ok := k.lookup(newCredentials().AccessKeyID); ok {
		t.Fatal("lookup found a key never issued")
	}
}

// TestRestartKeepsThePort: with port 0, a restart listens where aws.env
// says the last run did, so a shell that sourced it still reaches the lab;
// when that port is taken it picks another and aws.env names the new one.
func TestRestartKeepsThePort(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	dir := t.TempDir()
	envPath := filepath.Join(dir, "aws.env")
	start := func(t *testing.T) *Server {
		t.Helper()
		srv, err := Listen(ServerConfig{Handler: Config{Cloud: c}, EnvPath: envPath})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	first := start(t)
	url := first.URL()
	_ = first.ln.Close()

	again := start(t)
	if again.URL() != url {
		t.Errorf("after a restart the AWS API is on %s, want %s as aws.env said", again.URL(), url)
	}
	// Still listening: the next start cannot have the port.
	third := start(t)
	defer third.ln.Close()
	defer again.ln.Close()
	if third.URL() == url {
		t.Fatalf("two servers on %s", url)
	}
	env, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "export AWS_ENDPOINT_URL="+third.URL()+"\n") {
		t.Errorf("aws.env does not name the new port %s:\n%s", third.URL(), env)
	}
	if got := previousPort(filepath.Join(dir, "none.env")); got != "" {
		t.Errorf("no env file: port %q", got)
	}
}
