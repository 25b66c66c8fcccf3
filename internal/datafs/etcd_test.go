package datafs

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// etcdFullStatus is the error client-go returns for a write the apiserver
// could not store because etcd's database is full: a Status of code 500,
// no reason, etcd's text as its message.
func etcdFullStatus() error {
	err := apierrors.NewInternalError(errors.New(EtcdNoSpace))
	err.ErrStatus.Reason = ""
	err.ErrStatus.Message = EtcdNoSpace
	return err
}

func TestIsEtcdFull(t *testing.T) {
	cm := schema.GroupKind{Kind: "ConfigMap"}
	quoted := apierrors.NewInvalid(cm, "x", field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), EtcdNoSpace, "a label value")})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the apiserver's 500", etcdFullStatus(), true},
		{"an InternalError quoting it", apierrors.NewInternalError(errors.New(EtcdNoSpace)), true},
		{"wrapped with %w", fmt.Errorf("updating the DaemonSet: %w", etcdFullStatus()), true},
		{"wrapped with %v", fmt.Errorf("deleting Service shop: %v", etcdFullStatus()), true},
		{"a validation error quoting the text", quoted, false},
		{"another 500", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), false},
		{"a conflict", apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed")), false},
		{"a full disk", fmt.Errorf("save: %w", errors.New("no space left on device")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsEtcdFull(tc.err); got != tc.want {
				t.Errorf("IsEtcdFull(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
