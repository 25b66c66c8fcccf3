package classroom

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"alice", true}, {"bob-2", true}, {"a", true}, {"0x", true},
		{"", false}, {"Alice", false}, {"-bob", false}, {"bob-", false}, {"a_b", false},
		{"a.b", false}, {"a/b", false}, {strings.Repeat("a", 41), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateName(tc.name); (err == nil) != tc.ok {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

func TestReadRoster(t *testing.T) {
	got, err := ReadRoster(strings.NewReader("# class of 2026\nalice\n\n  bob  \n"))
	if err != nil || strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("ReadRoster = %v, %v", got, err)
	}
	if _, err := ReadRoster(strings.NewReader("alice\nBob Smith\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a bad name: err = %v, want one naming line 2", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no students", Config{}, "no students"},
		{"twice", Config{Students: []string{"a", "a"}}, "named twice"},
		{"bad name", Config{Students: []string{"A"}}, "lowercase"},
		{"short token", Config{Students: []string{"a"}, Token: "x"}, "8 characters"},
		{"negative warm", Config{Students: []string{"a"}, Warm: -1}, "--warm"},
		{"ok", Config{Students: []string{"a", "b"}}, ""},
		{"unknown backend", Config{Students: []string{"a"}, Backend: "docker"}, "use local or kubernetes"},
		{"kubernetes without a cluster", Config{Students: []string{"a"}, Backend: BackendKubernetes, Kube: KubeOptions{Namespace: "ns", Image: "i"}}, "--kubeconfig"},
		{"kubernetes without an image", Config{Students: []string{"a"}, Backend: BackendKubernetes, Kube: KubeOptions{RestConfig: &rest.Config{}, Namespace: "ns"}}, "--image"},
		{"kubernetes without a namespace", Config{Students: []string{"a"}, Backend: BackendKubernetes, Kube: KubeOptions{RestConfig: &rest.Config{}, Image: "i"}}, "--namespace"},
		{"kubernetes bad namespace", Config{Students: []string{"a"}, Backend: BackendKubernetes, Kube: KubeOptions{RestConfig: &rest.Config{}, Namespace: "Class_1", Image: "i"}}, "--namespace"},
		{"kubernetes bad storage", Config{Students: []string{"a"}, Backend: BackendKubernetes, Kube: KubeOptions{RestConfig: &rest.Config{}, Namespace: "ns", Image: "i", Storage: "disk"}}, "--storage"},
		{"kubernetes with warm", Config{Students: []string{"a"}, Backend: BackendKubernetes, Warm: 1, Kube: KubeOptions{RestConfig: &rest.Config{}, Namespace: "ns", Image: "i"}}, "--warm"},
		{"kubernetes ok", Config{Students: []string{"a"}, Backend: BackendKubernetes, Kube: KubeOptions{RestConfig: &rest.Config{}, Namespace: "ns", Image: "i", Storage: StorageEmptyDir, StorageSize: "1Gi"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTokensPersist: a restarted portal hands out the same links.
func TestTokensPersist(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Students: []string{"alice", "bob"}, DataDir: dir, Binary: "/bin/false"}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Students = append(cfg.Students, "carol")
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.InstructorToken() != b.InstructorToken() || a.StudentToken("alice") != b.StudentToken("alice") {
		t.Fatal("tokens changed across a restart")
	}
	if b.StudentToken("carol") == "" || b.StudentToken("carol") == b.StudentToken("alice") {
		t.Fatal("a new student got no token of their own")
	}
	saved, _ := os.ReadFile(filepath.Join(dir, "instructor-token"))
	if strings.TrimSpace(string(saved)) != a.InstructorToken() {
		t.Fatal("instructor-token does not hold the instructor's token")
	}
}

// TestAuth covers the answers given before any lab is involved.
func TestAuth(t *testing.T) {
	c, err := New(Config{Students: []string{"alice", "bob"}, DataDir: t.TempDir(), Token: "instructor-secret", Binary: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := c.StudentToken("alice"), c.StudentToken("bob")
	for _, tc := range []struct {
		name, method, path, bearer string
		want                       int
	}{
		{"dashboard without token", "GET", "/", "", 401},
		{"dashboard with a student's token", "GET", "/", alice, 403},
		{"class with a wrong token", "GET", "/api/class", "nope", 403},
		{"class as instructor", "GET", "/api/class", "instructor-secret", 200},
		{"lab without token", "GET", "/s/alice/api/state", "", 401},
		{"lab with a wrong token", "GET", "/s/alice/api/state", "nope", 403},
		{"lab with another student's token", "GET", "/s/alice/api/state", bob, 403},
		{"instructor mutating a lab", "PUT", "/s/alice/api/cloud/faults", "instructor-secret", 403},
		// A name not in the class answers as a real one until a token
		// opens it: the portal does not tell who is in the class.
		{"unknown student without token", "GET", "/s/mallory/", "", 401},
		{"unknown student with a student's token", "GET", "/s/mallory/", alice, 403},
		{"unknown student as instructor", "GET", "/s/mallory/", "instructor-secret", 404},
		{"no slash", "GET", "/s/alice", "", 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://localhost"+tc.path, nil)
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			rec := httptest.NewRecorder()
			c.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("%s %s: %d, want %d (%s)", tc.method, tc.path, rec.Code, tc.want, rec.Body)
			}
		})
	}
	t.Run("query token sets a cookie scoped to the student", func(t *testing.T) {
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/api/class?token=instructor-secret", nil))
		ck := rec.Result().Cookies()
		if rec.Code != 200 || len(ck) != 1 || ck[0].Name != instructorCookie || ck[0].Path != "/" || !ck[0].HttpOnly {
			t.Fatalf("%d, cookies %v", rec.Code, ck)
		}
		req := httptest.NewRequest("GET", "http://localhost/api/class", nil)
		req.AddCookie(&http.Cookie{Name: instructorCookie, Value: "instructor-secret"})
		rec = httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("with the cookie: %d", rec.Code)
		}
	})
}
