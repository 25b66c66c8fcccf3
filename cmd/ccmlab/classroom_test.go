package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassroomFlags: wrong flag combinations are refused with a message
// that names the flag, before anything starts or any cluster is contacted.
func TestClassroomFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// A cluster nobody listens at: validation must fail before any call.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kube := []string{"--students", "alice", "--backend", "kubernetes", "--kubeconfig", kubeconfig}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown backend", []string{"--students", "alice", "--backend", "docker"}, `--backend "docker": use local or kubernetes`},
		{"kubernetes without image", kube, "--backend kubernetes needs --image IMAGE"},
		{"kubernetes without a cluster", []string{"--students", "alice", "--backend", "kubernetes", "--image", "ccmlab:dev"}, "needs --kubeconfig FILE"},
		{"kubernetes with a missing kubeconfig", []string{"--students", "alice", "--backend", "kubernetes", "--image", "i", "--kubeconfig", kubeconfig + "-missing"}, "--kubeconfig"},
		{"kubernetes with warm", append(kube, "--image", "i", "--warm", "2"), "--warm is for --backend local"},
		{"kubernetes bad storage", append(kube, "--image", "i", "--storage", "disk"), `--storage "disk"`},
		{"kubernetes bad namespace", append(kube, "--image", "i", "--namespace", "My_Class"), `--namespace "My_Class"`},
		{"local with image", []string{"--students", "alice", "--image", "i"}, "--image is for --backend kubernetes"},
		{"delete a local class", []string{"delete", "--backend", "local"}, "classroom delete is for --backend kubernetes"},
		{"delete without a cluster", []string{"delete"}, "needs --kubeconfig FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newClassroomCommand(io.Discard)
			cmd.SetArgs(append(tc.args, "--data-dir", t.TempDir()))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
