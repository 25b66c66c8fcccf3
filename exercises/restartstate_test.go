package exercises

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The rbac-missing cause opts the role out of the apiserver's start-up
// reconciliation (rbacv1.AutoUpdateAnnotationKey "false"), so a restart
// keeps it; the next reset puts the rule and "true" back.
func TestRBACCauseOutlivesTheBootstrap(t *testing.T) {
	ctx := context.Background()
	env := fakeEnv(t, "aws", fakeControllers{"node": true, "service": true})
	roles := env.Client.RbacV1().ClusterRoles()
	bootstrap := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: serviceControllerRole, Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
			serviceStatusRule(),
		},
	}
	if _, err := roles.Create(ctx, bootstrap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Env: env, Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.removeServiceStatusRule(ctx); err != nil {
		t.Fatal(err)
	}
	role, err := roles.Get(ctx, serviceControllerRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if role.Annotations[rbacv1.AutoUpdateAnnotationKey] != "false" || slices.ContainsFunc(role.Rules, grantsServiceStatus) {
		t.Fatalf("planted: %v %+v", role.Annotations, role.Rules)
	}
	// The student puts the rule back: the reset still restores "true".
	role.Rules = append(role.Rules, serviceStatusRule())
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.restoreServiceControllerRBAC(ctx); err != nil {
		t.Fatal(err)
	}
	role, _ = roles.Get(ctx, serviceControllerRole, metav1.GetOptions{})
	if role.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" || len(role.Rules) != 2 {
		t.Fatalf("restored: %v %+v", role.Annotations, role.Rules)
	}
	// Deleted by hand: recreated as the bootstrap makes it.
	if err := roles.Delete(ctx, serviceControllerRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.restoreServiceControllerRBAC(ctx); err != nil {
		t.Fatal(err)
	}
	role, _ = roles.Get(ctx, serviceControllerRole, metav1.GetOptions{})
	if role.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" || !slices.ContainsFunc(role.Rules, grantsServiceStatus) {
		t.Fatalf("recreated: %v %+v", role.Annotations, role.Rules)
	}
}

// The classroom pace a reset set is known to the Service of the next
// start (the same store), so its reset puts back the latency it replaced.
func TestPaceOutlivesARestart(t *testing.T) {
	ctx := context.Background()
	env := fakeEnv(t, "aws", fakeControllers{"node": true, "service": true})
	store := openStore(t)
	s, err := New(Config{Env: env, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	err = s.setPace(ctx, &pace{set: time.Second, before: 150 * time.Millisecond})
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	again, err := New(Config{Env: env, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	again.mu.Lock()
	defer again.mu.Unlock()
	if err := again.loadPace(ctx); err != nil {
		t.Fatal(err)
	}
	if again.pace == nil || *again.pace != (pace{set: time.Second, before: 150 * time.Millisecond}) {
		t.Fatalf("pace after a restart: %+v", again.pace)
	}
}
