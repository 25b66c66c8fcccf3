//go:build !unit

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The lbc switch is the AWS Load Balancer Controller's Deployment: off
// scales it to 0, and a restart with --addons lbc on the same data dir
// keeps it off (the lab creates the chart's objects only where missing),
// until the switch turns it on again.
func TestLBCSwitchSurvivesRestart(t *testing.T) {
	needBinary(t)
	dataDir := t.TempDir()
	ctx := context.Background()
	args := []string{"--addons", "lbc", "--nodes", "1"}
	l := startProcess(t, dataDir, args...)
	if got := switchLBC(t, l.addr, false); got["lbc"] {
		t.Fatalf("after switching lbc off the API says %v", got)
	}
	l.stop(t)

	l = startProcess(t, dataDir, args...)
	d, err := clientFor(t, dataDir).AppsV1().Deployments("kube-system").Get(ctx, "aws-load-balancer-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := ptr.Deref(d.Spec.Replicas, 1); r != 0 {
		t.Errorf("after a restart the controller's Deployment asks for %d replicas, want the 0 it was switched to", r)
	}
	if got := controllersOf(t, l.addr); got["lbc"] {
		t.Errorf("after a restart the lbc switch is on: %v", got)
	}
	if got := switchLBC(t, l.addr, true); !got["lbc"] {
		t.Errorf("after switching lbc on the API says %v", got)
	}
}

func switchLBC(t *testing.T, addr string, on bool) map[string]bool {
	t.Helper()
	body, _ := json.Marshal(map[string]bool{"enabled": on})
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/api/controllers/lbc", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return decodeControllers(t, req)
}

func controllersOf(t *testing.T, addr string) map[string]bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/controllers", nil)
	if err != nil {
		t.Fatal(err)
	}
	return decodeControllers(t, req)
}

func decodeControllers(t *testing.T, req *http.Request) map[string]bool {
	t.Helper()
	c := &http.Client{Timeout: 3 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	var out map[string]bool
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}
