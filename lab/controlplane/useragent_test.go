package controlplane

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNameClients(t *testing.T) {
	const ua = "ccmlab-make-1a2b/v1.37.2 (linux/amd64) kubernetes/abcdef/system:serviceaccount:kube-system:node-controller"
	for _, tc := range []struct {
		name, target, ua          string
		wantPath, wantURI, wantUA string
	}{
		{"controller-manager", "/ccmlab-client/kube-controller-manager/api/v1/nodes/n1?fieldManager=", ua,
			"/api/v1/nodes/n1", "/api/v1/nodes/n1?fieldManager=",
			"kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef/system:serviceaccount:kube-system:node-controller"},
		{"scheduler", "/ccmlab-client/kube-scheduler/apis/events.k8s.io/v1/namespaces/default/events", "ccmlab/v1.37.2 (linux/amd64) kubernetes/abcdef/scheduler",
			"/apis/events.k8s.io/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events",
			"kube-scheduler/v1.37.2 (linux/amd64) kubernetes/abcdef/scheduler"},
		{"a User-Agent without a version", "/ccmlab-client/kube-scheduler/version", "ccmlab",
			"/version", "/version", "kube-scheduler"},
		{"any other client is left alone", "/api/v1/nodes", "kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef",
			"/api/v1/nodes", "/api/v1/nodes", "kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef"},
		{"an unknown component is left alone", "/ccmlab-client/kube-proxy/api/v1/nodes", ua,
			"/ccmlab-client/kube-proxy/api/v1/nodes", "/ccmlab-client/kube-proxy/api/v1/nodes", ua},
		{"the apiserver's loopback token", "/api/v1/namespaces", "ccmlab/v1.37.2 (linux/amd64) kubernetes/abcdef",
			"/api/v1/namespaces", "/api/v1/namespaces", "kube-apiserver/v1.37.2 (linux/amd64) kubernetes/abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *http.Request
			h := nameClients(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r }), "loopback-token")
			r := httptest.NewRequest(http.MethodGet, tc.target, nil)
			r.Header.Set("User-Agent", tc.ua)
			if tc.wantUA != tc.ua && !strings.HasPrefix(tc.target, clientPathPrefix) {
				r.Header.Set("Authorization", "Bearer loopback-token")
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got.URL.Path != tc.wantPath || got.RequestURI != tc.wantURI || got.UserAgent() != tc.wantUA {
				t.Errorf("got path %q, URI %q, User-Agent %q; want %q, %q, %q",
					got.URL.Path, got.RequestURI, got.UserAgent(), tc.wantPath, tc.wantURI, tc.wantUA)
			}
		})
	}
}
