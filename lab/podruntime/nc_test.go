package podruntime

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// udpNet answers UDP datagrams to web (10.96.0.20:80) with a hostname,
// as netexec's UDP server does, and TCP as fakeNet.
type udpNet struct{ *fakeNet }

func (u udpNet) FromPod(ctx context.Context, r dataplane.PodRequest) (dataplane.PodResponse, error) {
	if r.Protocol == v1.ProtocolUDP {
		u.reqs = append(u.reqs, r)
		if r.IP == "10.96.0.20" && r.Port == 80 && strings.TrimSpace(string(r.Body)) == "hostName" {
			return dataplane.PodResponse{Status: 200, Body: []byte("web-1")}, nil
		}
		return dataplane.PodResponse{}, &dataplane.ConnError{Refused: false}
	}
	return u.fakeNet.FromPod(ctx, r)
}

func TestNcSeqGetent(t *testing.T) {
	n := udpNet{&fakeNet{}}
	rt, err := New(Config{Network: n})
	if err != nil {
		t.Fatal(err)
	}
	const agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	for _, tc := range []struct {
		name      string
		script    string
		out       string
		code      int32
		errSub    string
		sentRaw   string // the Method of the last TCP request, when raw
		sentProto v1.Protocol
	}{
		// upstream's jig.go checks a Service's reachability this way.
		{name: "tcp line", script: "echo hostName | nc -v -t -w 2 web 80", out: "HTTP/1.1 200 OK\r\n", errSub: "Connection to web 80 port [tcp/*] succeeded!", sentRaw: "hostName"},
		{name: "tcp http request", script: `printf 'GET /x HTTP/1.1\r\nHost: web\r\n\r\n' | nc web 80`, out: "HTTP/1.1 200 OK\r\n"},
		{name: "udp", script: "echo hostName | nc -v -u -w 2 web 80", out: "web-1", errSub: "[udp/*] succeeded!", sentProto: v1.ProtocolUDP},
		{name: "zero", script: "nc -z -v web 80", errSub: "succeeded!"},
		{name: "refused", script: "nc -z -v 10.96.0.99 80", code: 1, errSub: "Connection refused"},
		{name: "unknown host", script: "nc -z nope 80", code: 1, errSub: "Name or service not known"},
		{name: "bad option", script: "nc -X web 80", code: 1, errSub: "invalid option"},
		{name: "seq", script: "seq 3; seq 2 2 6", out: "1\n2\n3\n2\n4\n6\n"},
		{name: "seq in a loop", script: "for i in $(seq 1 3); do echo -n $i; done", out: "123"},
		{name: "seq bad", script: "seq x", code: 1, errSub: "invalid number"},
		{name: "getent found", script: "getent hosts web.default.svc.cluster.local", out: "10.96.0.20      web.default.svc.cluster.local\n"},
		{name: "getent missing", script: "getent hosts nope", code: 2},
		{name: "getent in test -n", script: `test -n "$(getent hosts web.default.svc.cluster.local)" && echo OK`, out: "OK\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(n.reqs)
			out, errOut, code := exec(t, rt, agnhost, "sh", "-c", tc.script)
			if !strings.HasPrefix(out, tc.out) || code != tc.code || !strings.Contains(errOut, tc.errSub) {
				t.Fatalf("%s = %q, %d (stderr %q); want %q, %d, %q", tc.script, out, code, errOut, tc.out, tc.code, tc.errSub)
			}
			if tc.sentRaw != "" || tc.sentProto != "" {
				if len(n.reqs) == before {
					t.Fatalf("nothing was sent")
				}
				last := n.reqs[len(n.reqs)-1]
				if tc.sentRaw != "" && (!last.Raw || last.Method != tc.sentRaw) {
					t.Errorf("sent %+v, want the raw line %q", last, tc.sentRaw)
				}
				if tc.sentProto != "" && last.Protocol != tc.sentProto {
					t.Errorf("sent over %q, want %q", last.Protocol, tc.sentProto)
				}
			}
		})
	}
}
