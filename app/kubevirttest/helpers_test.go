//go:build !unit

package kubevirttest

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nsOf(m *metav1.ObjectMeta) *v1.Namespace { return &v1.Namespace{ObjectMeta: *m} }
