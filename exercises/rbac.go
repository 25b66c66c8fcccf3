package exercises

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/exercises/check"
)

// The Service controller's RBAC. The CCM runs with
// --use-service-account-credentials=true, so its Service controller acts
// as kube-system/service-controller, which the apiserver's bootstrap
// policy binds to the ClusterRole below (plugin/pkg/auth/authorizer/rbac/
// bootstrappolicy/controller_policy.go of k8s.io/kubernetes v1.37.2). The
// rule on services/status is what the controller needs to add its
// finalizer and write EXTERNAL-IP (both go through the status
// subresource: PatchService in k8s.io/cloud-provider/service/helpers).
// An exercise and a diagnosis cause take it away; every reset puts it
// back, since the apiserver reconciles bootstrap roles only when it
// starts and a lab without it cannot even delete a Service with the
// finalizer.
//
// That start-up reconciliation would also undo the diagnosis cause when
// the lab restarts: the apiserver's post-start hook rbac/bootstrap-roles
// (k8s.io/kubernetes v1.37.2 pkg/registry/rbac/rest/storage_rbac.go
// ensureRBACPolicy, lines 207-228) adds every missing rule back to a
// bootstrap ClusterRole, unless the role opts out with the annotation
// rbac.authorization.kubernetes.io/autoupdate: "false" (k8s.io/
// component-helpers v0.37.2 auth/rbac/reconciliation/reconcile_role.go:
// Protected, lines 135 and 181; the hook then only logs "skipped
// reconcile-protected clusterrole"). So the cause is planted with the
// annotation, as an administrator keeps an edit of a bootstrap role, and
// the role stays as the lab left it, or as the student fixed it, across
// restarts; the next reset puts the annotation back to "true".
const serviceControllerRole = "system:controller:service-controller"

// serviceStatusRule is the bootstrap policy's rule on services/status.
func serviceStatusRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services/status"}, Verbs: []string{"patch", "update"}}
}

// serviceStatusIndex is serviceStatusRule's place in the bootstrap
// policy's rules (controller_policy.go:411-416: services, services/status,
// nodes, events).
const serviceStatusIndex = 1

// grantsServiceStatus: the rule gives patch on services/status.
func grantsServiceStatus(r rbacv1.PolicyRule) bool {
	has := func(list []string, v string) bool {
		return slices.Contains(list, v) || slices.Contains(list, rbacv1.ResourceAll)
	}
	return has(r.APIGroups, "") && has(r.Resources, "services/status") && has(r.Verbs, "patch") && has(r.Verbs, "update")
}

// restoreServiceControllerRBAC puts the services/status rule back into
// the Service controller's ClusterRole when it is missing, and the role
// and its binding when they were deleted.
func (s *Service) restoreServiceControllerRBAC(ctx context.Context) error {
	bindings := s.cfg.Env.Client.RbacV1().ClusterRoleBindings()
	if _, err := bindings.Get(ctx, serviceControllerRole, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: serviceControllerRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: serviceControllerRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: check.ServiceControllerAccount, Namespace: check.ServiceControllerNamespace}},
		}
		if _, err := bindings.Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("restoring ClusterRoleBinding %s: %w", serviceControllerRole, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", serviceControllerRole, err)
	}
	roles := s.cfg.Env.Client.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, serviceControllerRole, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted by hand: the apiserver would recreate it only at its
		// next start.
		role = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			Name:        serviceControllerRole,
			Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
			Labels:      map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
		}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
			serviceStatusRule(),
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		}}
		_, err = roles.Create(ctx, role, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return fmt.Errorf("reading ClusterRole %s: %w", serviceControllerRole, err)
	}
	protected := role.Annotations[rbacv1.AutoUpdateAnnotationKey] == "false"
	// The rule goes back where the bootstrap policy has it, second: the
	// exercise's JSON patch names it by its index (/rules/1, guarded by a
	// test op), and a rule the student added back at the end (/rules/-)
	// would leave the nodes rule at that index for the next round.
	i := slices.IndexFunc(role.Rules, grantsServiceStatus)
	inPlace := i == serviceStatusIndex || i >= 0 && len(role.Rules) <= serviceStatusIndex
	if inPlace && !protected {
		return nil
	}
	if !inPlace {
		rule := serviceStatusRule()
		if i >= 0 {
			rule = role.Rules[i]
			role.Rules = slices.Delete(role.Rules, i, i+1)
		}
		role.Rules = slices.Insert(role.Rules, min(serviceStatusIndex, len(role.Rules)), rule)
	}
	if protected {
		role.Annotations[rbacv1.AutoUpdateAnnotationKey] = "true"
	}
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("restoring ClusterRole %s: %w", serviceControllerRole, err)
	}
	return nil
}

// removeServiceStatusRule takes the services/status rule out of the
// Service controller's ClusterRole (the diagnosis cause CauseRBACMissing)
// and opts the role out of the apiserver's start-up reconciliation, so a
// restart of the lab keeps the cause in force (see serviceControllerRole).
func (s *Service) removeServiceStatusRule(ctx context.Context) error {
	roles := s.cfg.Env.Client.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, serviceControllerRole, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ClusterRole %s: %w", serviceControllerRole, err)
	}
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "services/status")
	})
	if role.Annotations == nil {
		role.Annotations = map[string]string{}
	}
	role.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
	return err
}
