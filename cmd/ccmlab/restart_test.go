package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// The page's restart offer on the binary: an exercise the aws lab cannot
// run (the kubevirt hands-on) says which lab it needs; asking for it
// restarts the same process (same PID, same address) into a fresh
// kubevirt cluster, with the exercise progress kept and the old state in
// <data-dir>.previous.
func TestRestartIntoTheExercisesProfile(t *testing.T) {
	needBinary(t)
	dir := filepath.Join(t.TempDir(), "lab")
	p := startProcess(t, dir, "--nodes", "1")
	pid := p.cmd.Process.Pid

	apiCall(t, p, "POST", "/exercises/node-init/reset", map[string]any{})
	summary := func(id string) exercises.Summary {
		var list []exercises.Summary
		if err := json.Unmarshal(apiCall(t, p, "GET", "/exercises?lang=en", nil), &list); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list, func(s exercises.Summary) bool { return s.ID == id })
		if i < 0 {
			t.Fatalf("no exercise %s", id)
		}
		return list[i]
	}
	offer := summary("kubevirt-handson").Restart
	if offer == nil || offer.Profile != "kubevirt" {
		t.Fatalf("kubevirt-handson's offer: %+v", offer)
	}
	apiCall(t, p, "POST", "/lab/restart", offer)
	select {
	case <-p.ready:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no second ready line; output:\n%s\nstderr:\n%s", p.out, p.stderr)
	}
	if p.cmd.ProcessState != nil || p.cmd.Process.Pid != pid {
		t.Fatalf("the process changed: %v", p.cmd.ProcessState)
	}
	var st struct {
		Profile struct{ Name string } `json:"profile"`
	}
	if err := json.Unmarshal(apiCall(t, p, "GET", "/state", nil), &st); err != nil || st.Profile.Name != "kubevirt" {
		t.Fatalf("profile after the restart: %+v, %v", st, err)
	}
	if s := summary("kubevirt-handson"); !s.Available || s.Restart != nil {
		t.Errorf("kubevirt-handson after the restart: %+v", s)
	}
	if s := summary("node-init"); !s.Started {
		t.Errorf("node-init's progress was lost: %+v", s)
	}
	if s := summary("security-groups"); s.Restart == nil || !reflect.DeepEqual(*s.Restart, exercises.Restart{Profile: "aws", Addons: []string{}}) {
		t.Errorf("security-groups' offer in the kubevirt lab: %+v", s.Restart)
	}
	if _, err := os.Stat(filepath.Join(dir+".previous", "cloud.json")); err != nil {
		t.Errorf("the old state is not in .previous: %v", err)
	}
	p.stop(t)
}

func TestRestartArgs(t *testing.T) {
	o := &serveOptions{profile: "aws", listen: "127.0.0.1:40123"}
	got := restartArgs([]string{"ccmlab", "serve", "--listen", "127.0.0.1:0", "--controllers", "node"}, o, &restartRequest{profile: "kubevirt", addons: []string{"lbc"}})
	want := []string{"ccmlab", "serve", "--listen", "127.0.0.1:0", "--controllers", "node",
		"--profile=kubevirt", "--addons=lbc", "--controllers=", "--listen=127.0.0.1:40123", "--aws-provider="}
	if !slices.Equal(got, want) {
		t.Errorf("restart args\n got %q\nwant %q", got, want)
	}
	same := restartArgs([]string{"ccmlab"}, o, &restartRequest{profile: "aws", addons: nil})
	if slices.Contains(same, "--aws-provider=") {
		t.Errorf("the same profile dropped its AWS provider: %q", same)
	}
}

// A restart of the lab (stop, start on the same --data-dir) keeps what was
// started in force: the diagnosis challenge's rbac-missing cause, which
// the apiserver's RBAC bootstrap would otherwise put back at its start,
// and an injected cloud latency, saved with the cloud's state.
func TestRestartKeepsCausesInForce(t *testing.T) {
	needBinary(t)
	dir := filepath.Join(t.TempDir(), "lab")
	p := startProcess(t, dir, "--nodes", "1")
	apiCall(t, p, "PUT", "/cloud/faults", map[string]any{"latency": "150ms"})
	apiCall(t, p, "POST", "/exercises/mystery-pending/reset", map[string]any{"cause": "rbac-missing"})
	p.stop(t)

	restarted := time.Now()
	p = startProcess(t, dir, "--nodes", "1")
	var f cloud.Faults
	if err := json.Unmarshal(apiCall(t, p, "GET", "/cloud/faults", nil), &f); err != nil || f.Latency.Duration != 150*time.Millisecond {
		t.Errorf("faults after the restart: %+v, %v; want the latency of 150ms", f, err)
	}

	c := clientFor(t, dir)
	ctx := context.Background()
	// The bootstrap runs after the apiserver serves: wait until its hook
	// has finished before looking at the role.
	testutil.Eventually(t, time.Minute, "the apiserver's RBAC bootstrap", func() (bool, string) {
		b, err := c.Discovery().RESTClient().Get().AbsPath("/readyz/poststarthook/rbac/bootstrap-roles").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(b)) == "ok", fmt.Sprintf("%s %v", b, err)
	})
	role, err := c.RbacV1().ClusterRoles().Get(ctx, "system:controller:service-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "services/status") {
			t.Errorf("the RBAC bootstrap put the services/status rule back: %+v", role.Rules)
		}
	}
	// In force, not only on paper: the CCM that started with the lab is
	// refused again, and the Service stays without an address.
	testutil.Eventually(t, 2*time.Minute, "a forbidden SyncLoadBalancerFailed after the restart", func() (bool, string) {
		evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=shop,reason=SyncLoadBalancerFailed"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "forbidden") && e.LastTimestamp.After(restarted) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none forbidden since the restart", len(evs.Items))
	})
	svc, err := c.CoreV1().Services("default").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("shop after the restart: %v, %v", svc.Status.LoadBalancer.Ingress, err)
	}

	// The next reset puts the role back as the bootstrap keeps it.
	apiCall(t, p, "POST", "/exercises/node-init/reset", map[string]any{})
	role, err = c.RbacV1().ClusterRoles().Get(ctx, "system:controller:service-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if role.Annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" ||
		!slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "services/status") }) {
		t.Errorf("after a reset the role is %v %+v", role.Annotations, role.Rules)
	}
	p.stop(t)
}
