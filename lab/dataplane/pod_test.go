package dataplane

import (
	"strings"
	"testing"
)

func TestNginxVersion(t *testing.T) {
	tests := []struct {
		image   string
		version string
		nginx   bool
	}{
		{"nginx", defaultNginxVersion, true},
		{"nginx:latest", defaultNginxVersion, true},
		{"nginx:1.27", "1.27", true},
		{"nginx:1.27.3-alpine", "1.27.3", true},
		{"nginx:stable-alpine", defaultNginxVersion, true},
		{"docker.io/library/nginx:1.25", "1.25", true},
		{"nginx@sha256:0123abcd", defaultNginxVersion, true},
		{"registry.local:5000/nginx:1.26", "1.26", true},
		{"ghcr.io/ccmlab/echo:v1", "", false},
		{"busybox", "", false},
	}
	for _, tc := range tests {
		v, ok := nginxVersion(tc.image)
		if ok != tc.nginx || v != tc.version {
			t.Errorf("nginxVersion(%q) = %q, %v; want %q, %v", tc.image, v, ok, tc.version, tc.nginx)
		}
	}
}

func TestPodAnswer(t *testing.T) {
	tr := &Trace{PodNode: nodeB, PodIP: podBIP, SourceIPSeenByPod: ipA}
	nginx := testPod("web-a", nodeA, podAIP, "nginx:1.27")
	a := podAnswer(nginx, 8080, "GET", "/", tr)
	if a.status != 200 || a.header.Get("Server") != "nginx/1.27" || !strings.Contains(string(a.body), "<title>Welcome to nginx!</title>") {
		t.Errorf("nginx /: %d %v %.60q", a.status, a.header, a.body)
	}
	if a := podAnswer(nginx, 8080, "GET", "/missing", tr); a.status != 404 || !strings.Contains(string(a.body), "nginx/1.27") {
		t.Errorf("nginx /missing: %d %s", a.status, a.body)
	}
	if a := podAnswer(nginx, 8080, "POST", "/", tr); a.status != 405 {
		t.Errorf("nginx POST: %d", a.status)
	}
	echo := testPod("web-b", nodeB, podBIP, "ghcr.io/ccmlab/echo:v1")
	a = podAnswer(echo, 8080, "GET", "/x?y=1", tr)
	body := string(a.body)
	for _, s := range []string{"pod: web-b", "namespace: default", "node: " + nodeB, "source IP seen by the Pod: " + ipA, "GET /x?y=1"} {
		if !strings.Contains(body, s) {
			t.Errorf("text answer lacks %q:\n%s", s, body)
		}
	}
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Errorf("text answer: %d %v", a.status, a.header)
	}
}
