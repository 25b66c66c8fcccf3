package exercises

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/internal/kube"
)

// restoreCCMToleration puts the CCM DaemonSet's toleration of the
// uninitialized taint back (the ccm-toleration exercise takes it away).
// Without it, a CCM Pod deleted while the control-plane node is tainted is
// never placed again, no controller runs, and every switch the reset
// makes would wait in vain. A lab whose CCM is not a DaemonSet Pod (an
// attached one) has nothing to restore.
func (s *Service) restoreCCMToleration(ctx context.Context) error {
	c := s.cfg.Env.Client
	if _, err := check.CCMDaemonSet(ctx, c); err != nil {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := check.CCMDaemonSet(ctx, c)
		if err != nil || check.ToleratesUninitialized(&ds.Spec.Template.Spec) {
			return err
		}
		t := kube.UninitializedTaint()
		ds.Spec.Template.Spec.Tolerations = append(ds.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: t.Key, Value: t.Value, Effect: t.Effect})
		_, err = c.AppsV1().DaemonSets(metav1.NamespaceSystem).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("restoring the CCM DaemonSet's toleration: %w", err)
	}
	return nil
}
