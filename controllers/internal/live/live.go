package live

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// ConfirmService returns an error unless the apiserver has svc, with the
// same UID, and not being deleted.
func ConfirmService(ctx context.Context, c corev1client.ServicesGetter, svc *v1.Service) error {
	cur, err := c.Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("service %s/%s no longer exists: not creating a load balancer for it", svc.Namespace, svc.Name)
	case err != nil:
		return fmt.Errorf("confirming service %s/%s before creating its load balancer: %w", svc.Namespace, svc.Name, err)
	case cur.UID != svc.UID:
		return fmt.Errorf("service %s/%s was deleted and created again: not creating a load balancer for the old one", svc.Namespace, svc.Name)
	case cur.DeletionTimestamp != nil:
		return fmt.Errorf("service %s/%s is being deleted: not creating a load balancer for it", svc.Namespace, svc.Name)
	}
	return nil
}
