package flow

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Only the Node controller's DescribeInstances calls belong to a node's
// flow. The Service controller asks about every node on every load
// balancer sync; filing its calls would redo every node's flow once per
// Service (a million times at 1,000 nodes x 1,000 Services).
func TestOnlyNodeControllerQueriesRedoNodeFlows(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.RunInstance(cloud.WithCaller(context.Background(), "test"), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Client: fake.NewClientset(), Cloud: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		caller string
		redo   bool
	}{
		{"service-controller", false},
		{"route-controller", false},
		{"node-controller", true},
	} {
		t.Run(tc.caller, func(t *testing.T) {
			call := cloud.Call{Seq: 1, Action: cloud.ActionDescribeInstances, Caller: tc.caller, State: cloud.CallDone, Resources: []string{inst.ID}}
			o.mu.Lock()
			keys := o.recordCallLocked(call)
			o.mu.Unlock()
			if got := len(keys) > 0; got != tc.redo {
				t.Errorf("a DescribeInstances by %s redoes node flows: %v, want %v (keys %v)", tc.caller, got, tc.redo, keys)
			}
		})
	}
}
