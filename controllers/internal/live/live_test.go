package live

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestConfirmService(t *testing.T) {
	now := metav1.NewTime(time.Now())
	svc := func(name, uid string, deleting bool) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + uid)}}
		if deleting {
			s.DeletionTimestamp = &now
			s.Finalizers = []string{"x"}
		}
		return s
	}
	client := fake.NewClientset(svc("live", "1", false), svc("recreated", "2", false), svc("deleting", "3", true))
	for _, tc := range []struct {
		name string
		seen *v1.Service // what the controller's cache holds
		want string
	}{
		{"live", svc("live", "1", false), ""},
		{"gone", svc("gone", "9", false), "no longer exists"},
		{"recreated", svc("recreated", "1", false), "deleted and created again"},
		{"deleting", svc("deleting", "3", false), "is being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ConfirmService(context.Background(), client.CoreV1(), tc.seen)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ConfirmService = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ConfirmService = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
