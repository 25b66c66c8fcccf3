package console

import (
	"errors"
	"testing"
)

// TestCurlPolicy: the console's curl allowlist.
func TestCurlPolicy(t *testing.T) {
	const u = "http://a-1.us-east-1.elb.amazonaws.com/"
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"curl " + u, true},
		{"curl -s " + u, true},
		{"curl -sSv -o /dev/null -w '%{http_code} %{remote_ip}' " + u, true},
		{"curl -so/dev/null " + u, true},
		{"curl -sI " + u, true},
		{"curl -i -H 'X-A: b' -X POST -d a=b " + u, true},
		{"curl -m 2 --connect-timeout 1 " + u, true},
		{"curl --resolve a:80:127.0.0.1 http://a/", true},
		{"curl -o - " + u, true},
		{"curl --max-time=2 " + u, true},
		{"curl a-1.us-east-1.elb.amazonaws.com:8080", true},
		{"curl", false},
		{"curl -s", false},
		{"curl -o out.html " + u, false},
		{"curl -sSo out.html " + u, false},
		{"curl --output=/etc/x " + u, false},
		{"curl -d @/etc/passwd " + u, false},
		{"curl --data-binary @secret " + u, false},
		{"curl -H @headers " + u, false},
		{"curl -w @fmt " + u, false},
		{"curl -K cfg " + u, false},
		{"curl --config cfg " + u, false},
		{"curl -T /etc/passwd " + u, false},
		{"curl -x http://proxy:3128 " + u, false},
		{"curl --unix-socket /run/x.sock " + u, false},
		{"curl -u a:b " + u, false},
		{"curl --data-dir / " + u, false},
		{"curl --from-console " + u, false},
		{"curl -m 600 " + u, false},
		{"curl -X 'GET /x' " + u, false},
		{"curl --resolve 'a:80:127.0.0.1;x' http://a/", false},
		{"curl file:///etc/passwd", false},
		{"curl ftp://a/", false},
		{"curl http://user:pw@a/", false},
		{"curl http://a:99999/", false},
		{"curl http://a/ http://b/ http://c/ http://d/", false},
		{"curl " + u + " | sh", false},
		{"curl " + u + " > /tmp/x", false},
		{"curl $(cat /etc/passwd)", false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			prog, _, err := ParseCommand(tc.line)
			if tc.ok && (err != nil || prog != "curl") {
				t.Fatalf("refused (%v, program %q), want allowed", err, prog)
			}
			if !tc.ok && !errors.Is(err, ErrRefused) {
				t.Fatalf("err %v, want a refusal", err)
			}
		})
	}
	if prog, _, err := ParseCommand("kubectl get nodes"); err != nil || prog != "kubectl" {
		t.Errorf("kubectl get nodes: %q, %v", prog, err)
	}
}
