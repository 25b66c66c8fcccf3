//go:build !unit

package clustertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFieldManagers: the writes of the embedded controller-manager and
// scheduler carry their binaries' names, as on a real cluster, not the
// lab's (`kubectl get node -o yaml --show-managed-fields`).
func TestFieldManagers(t *testing.T) {
	serve(t)
	c := env.Client
	must(t, "create", "deployment", "managed", "--image=nginx:1.29")
	for _, tc := range []struct {
		name, manager string
		// find returns the managers of the writes in question, or an
		// error while there are none yet.
		find func(ctx context.Context) ([]string, error)
	}{
		{"a Node's podCIDRs", "kube-controller-manager", func(ctx context.Context) ([]string, error) {
			return nodeFieldManagers(ctx, "podCIDRs")
		}},
		{"the scheduler's Scheduled events", "kube-scheduler", func(ctx context.Context) ([]string, error) {
			events, err := c.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
			if err != nil {
				return nil, err
			}
			var managers []string
			for _, e := range events.Items {
				for _, f := range e.ManagedFields {
					managers = append(managers, f.Manager)
				}
			}
			if len(managers) == 0 {
				return nil, fmt.Errorf("no Scheduled event yet (%d events)", len(events.Items))
			}
			return managers, nil
		}},
		{"a Pod's owner reference, set by the ReplicaSet controller", "kube-controller-manager", func(ctx context.Context) ([]string, error) {
			pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var managers []string
			for _, p := range pods.Items {
				if ref := metav1.GetControllerOf(&p); ref == nil || ref.Kind != "ReplicaSet" {
					continue
				}
				for _, f := range p.ManagedFields {
					if f.Operation == metav1.ManagedFieldsOperationUpdate && f.Subresource == "" {
						managers = append(managers, f.Manager)
						break
					}
				}
			}
			if len(managers) == 0 {
				return nil, fmt.Errorf("no Pod of a ReplicaSet yet")
			}
			return managers, nil
		}},
		{"the kubernetes Service and the default namespaces, written by the apiserver itself", "kube-apiserver", func(ctx context.Context) ([]string, error) {
			svc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			managers := managersOf(svc.ManagedFields)
			for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
				ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				managers = append(managers, managersOf(ns.ManagedFields)...)
			}
			return managers, nil
		}},
		{"the CCM's providerID, written by the upstream provider's binary", "aws-cloud-controller-manager", func(ctx context.Context) ([]string, error) {
			return nodeFieldManagers(ctx, "providerID")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var managers []string
			eventually(t, 2*time.Minute, tc.name, func(ctx context.Context) (err error) {
				managers, err = tc.find(ctx)
				return err
			})
			for _, m := range managers {
				if m != tc.manager {
					t.Errorf("field manager %q, want %q (all: %v)", m, tc.manager, managers)
					break
				}
			}
		})
	}
}

func managersOf(fields []metav1.ManagedFieldsEntry) []string {
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		out = append(out, f.Manager)
	}
	return out
}

// nodeFieldManagers returns the managers of the writes that set a field
// of a Node's spec, or an error while no Node has it yet.
func nodeFieldManagers(ctx context.Context, field string) ([]string, error) {
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var managers []string
	for _, n := range nodes.Items {
		for _, f := range n.ManagedFields {
			if f.FieldsV1 != nil && strings.Contains(f.FieldsV1.GetRawString(), `"f:`+field+`"`) {
				managers = append(managers, f.Manager)
			}
		}
	}
	if len(managers) == 0 {
		return nil, fmt.Errorf("no Node has %s yet (%d nodes)", field, len(nodes.Items))
	}
	return managers, nil
}
