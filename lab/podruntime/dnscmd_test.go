package podruntime

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// recordsNet answers SRV and PTR queries besides fakeNet's A records.
type recordsNet struct{ fakeNet }

func (r *recordsNet) Lookup(from *v1.Pod, name string, qtype uint16) (dataplane.DNSAnswer, error) {
	switch {
	case name == "_http._tcp.web.default.svc.cluster.local":
		a := dataplane.DNSAnswer{Name: name}
		if qtype == dataplane.TypeSRV {
			a.SRV = []dataplane.SRVRecord{{Priority: 10, Weight: 100, Port: 80, Target: "web.default.svc.cluster.local"}}
		}
		return a, nil
	case name == "20.0.96.10.in-addr.arpa" && qtype == dataplane.TypePTR:
		return dataplane.DNSAnswer{Name: name, PTR: []string{"web.default.svc.cluster.local"}}, nil
	}
	return r.fakeNet.Lookup(from, name, qtype)
}

// TestDNSCommandsRecordTypes: nslookup, dig and host ask for SRV and PTR
// records and print them in their tools' formats.
func TestDNSCommandsRecordTypes(t *testing.T) {
	rt, err := New(Config{Network: &recordsNet{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image string
		cmd   []string
		want  string
	}{
		{"busybox:1.36", []string{"nslookup", "-type=srv", "_http._tcp.web"}, "_http._tcp.web.default.svc.cluster.local\tservice = 10 100 80 web.default.svc.cluster.local\n"},
		{"busybox:1.36", []string{"nslookup", "10.96.0.20"}, "20.0.96.10.in-addr.arpa\tname = web.default.svc.cluster.local\n"},
		{"busybox:1.36", []string{"nslookup", "-type=mx", "web"}, ""},
		{"registry.k8s.io/e2e-test-images/agnhost:2.53", []string{"dig", "+short", "SRV", "_http._tcp.web.default.svc.cluster.local"}, "10 100 80 web.default.svc.cluster.local.\n"},
		{"registry.k8s.io/e2e-test-images/agnhost:2.53", []string{"dig", "+short", "-x", "10.96.0.20"}, "web.default.svc.cluster.local.\n"},
		{"registry.k8s.io/e2e-test-images/agnhost:2.53", []string{"host", "10.96.0.20"}, "20.0.96.10.in-addr.arpa domain name pointer web.default.svc.cluster.local.\n"},
		{"registry.k8s.io/e2e-test-images/agnhost:2.53", []string{"host", "-t", "srv", "_http._tcp.web"}, "_http._tcp.web.default.svc.cluster.local has SRV record 10 100 80 web.default.svc.cluster.local.\n"},
	} {
		t.Run(strings.Join(tc.cmd, " "), func(t *testing.T) {
			out, errOut, code := exec(t, rt, tc.image, tc.cmd...)
			if tc.want == "" {
				if code == 0 || !strings.Contains(errOut, "Usage: nslookup") {
					t.Errorf("exit %d, stderr %q: want the usage", code, errOut)
				}
				return
			}
			if code != 0 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d:\n%s%s\nwant %q", code, out, errOut, tc.want)
			}
		})
	}
}
