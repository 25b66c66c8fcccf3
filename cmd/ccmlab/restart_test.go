package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/exercises"
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
