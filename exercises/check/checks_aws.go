package check

import (
	"context"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Checks of the lessons on what the AWS provider builds around a load
// balancer and on the CCM's permissions: the security groups
// cloud-provider-aws makes for a Classic ELB (and the rule it adds to the
// nodes' group), and whether the Service controller's ServiceAccount may
// write a Service's status. They read the cloud's state without a logged
// call (a check must not show up in the call log the student reads) and
// the cluster's RBAC objects; none changes anything.

// ServiceControllerAccount is the ServiceAccount the upstream Service
// controller acts as when the CCM runs with
// --use-service-account-credentials=true (the CCM's client builder makes
// one per controller in kube-system, named after the controller).
const (
	ServiceControllerAccount   = "service-controller"
	ServiceControllerNamespace = "kube-system"
)

// awsKinds is this file's part of the kinds table (checks_extra.go).
func awsKinds() map[string]checkKind {
	return map[string]checkKind{
		"nodesAdmitLB":          {params: []string{"!name", "!state"}, enum: map[string][]string{"state": {"open", "closed"}}, eval: evalNodesAdmitLB},
		"serviceStatusWritable": {params: []string{"!state"}, enum: map[string][]string{"state": {"allowed", "forbidden"}}, eval: evalServiceStatusWritable},
	}
}

// awsAnswerKinds is this file's part of the answer kinds.
func awsAnswerKinds() map[string]answerKind {
	return map[string]answerKind{
		"elbSecurityGroup":     {name: true, values: answerELBSecurityGroup},
		"nodeGroupAdmittingLB": {name: true, values: answerNodeGroupAdmittingLB},
	}
}

// serviceLB is the named Service's load balancer in the cloud.
func (e *evalCtx) serviceLB(ctx context.Context, name string) (cloud.LoadBalancer, Outcome, bool) {
	svc, o, ok := e.service(ctx, name)
	if !ok {
		return cloud.LoadBalancer{}, o, false
	}
	return e.loadBalancer(svc)
}

// classicELB is the Service's Classic ELB with its security groups.
func (e *evalCtx) classicELB(ctx context.Context, name string) (cloud.LoadBalancer, Outcome, bool) {
	lb, o, ok := e.serviceLB(ctx, name)
	if !ok {
		return lb, o, false
	}
	if lb.Kind != cloud.LBKindClassic {
		return lb, failf("Service %s のロードバランサーは Classic ELB ではありません (この演習は aws プロファイルの cloud-provider-aws が作る Classic ELB が前提です)。",
			"Service %s's load balancer is not a Classic ELB (this exercise needs the Classic ELB cloud-provider-aws makes on the aws profile).", name), false
	}
	if len(lb.SecurityGroups) == 0 {
		return lb, failf("Service %s の Classic ELB にはまだセキュリティグループがありません。", "Service %s's Classic ELB has no security group yet.", name), false
	}
	return lb, Outcome{}, true
}

// groupsAdmitting returns the security groups (other than the load
// balancer's own) with an ingress rule that names one of lbGroups as its
// source: the rule cloud-provider-aws adds to the nodes' group.
func groupsAdmitting(groups []cloud.SecurityGroup, lbGroups []string) []string {
	var out []string
	for _, g := range groups {
		if slices.Contains(lbGroups, g.ID) {
			continue
		}
		if slices.ContainsFunc(g.Ingress, func(p cloud.IPPermission) bool {
			return slices.ContainsFunc(p.GroupIDs, func(id string) bool { return slices.Contains(lbGroups, id) })
		}) {
			out = append(out, g.ID)
		}
	}
	return out
}

func evalNodesAdmitLB(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	lb, o, ok := e.classicELB(ctx, c.Name)
	if !ok {
		return o
	}
	nodeGroups := e.env.Cloud.NodeSecurityGroups()
	admitting := groupsAdmitting(e.env.Cloud.SecurityGroupViews(), lb.SecurityGroups)
	var open []string
	for _, g := range nodeGroups {
		if slices.Contains(admitting, g) {
			open = append(open, g)
		}
	}
	lbGroups := strings.Join(lb.SecurityGroups, ", ")
	switch {
	case c.State == "open" && len(open) > 0:
		return passf("ノードのセキュリティグループ %s には、ELB のグループ %s からの通信を許すルールがあります", "the nodes' security group %s has a rule admitting the ELB's group %s",
			strings.Join(open, ", "), lbGroups)
	case c.State == "open":
		return failf("ノードのセキュリティグループ %s に、ELB のグループ %s からの通信を許すルールがありません。ELB のヘルスチェックも転送も、ノードに届きません。",
			"the nodes' security group %s has no rule admitting the ELB's group %s: neither the ELB's health checks nor its traffic reach the nodes.",
			strings.Join(nodeGroups, ", "), lbGroups)
	case len(open) == 0:
		return passf("ノードのセキュリティグループ %s には、ELB のグループ %s を許すルールがありません", "the nodes' security group %s has no rule admitting the ELB's group %s",
			strings.Join(nodeGroups, ", "), lbGroups)
	default:
		return failf("ノードのセキュリティグループ %s には、まだ ELB のグループ %s を許すルールがあります。", "the nodes' security group %s still has a rule admitting the ELB's group %s.",
			strings.Join(open, ", "), lbGroups)
	}
}

// canServiceController reports whether the cluster's ClusterRoleBindings
// give the Service controller's ServiceAccount verb on resource (core
// group). It reads the bindings as the RBAC authorizer does for a
// cluster-wide grant: a subject that is the ServiceAccount itself or one
// of the groups every ServiceAccount of kube-system is in, and a rule
// whose group, resource and verb match exactly or by "*". A RoleBinding
// in one namespace would grant it there only; the lesson's Services are
// in default, and the lab makes none.
func canServiceController(ctx context.Context, e *evalCtx, verb, resource string) (allowed bool, roles []string, err error) {
	bindings, err := e.env.Client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, nil, err
	}
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ServiceControllerNamespace, "system:authenticated"}
	for _, b := range bindings.Items {
		if b.RoleRef.Kind != "ClusterRole" || !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == ServiceControllerAccount && s.Namespace == ServiceControllerNamespace ||
				s.Kind == rbacv1.GroupKind && slices.Contains(groups, s.Name)
		}) {
			continue
		}
		role, err := e.env.Client.RbacV1().ClusterRoles().Get(ctx, b.RoleRef.Name, metav1.GetOptions{})
		if err != nil {
			continue // a binding to a missing role grants nothing
		}
		roles = append(roles, role.Name)
		for _, r := range role.Rules {
			if matchesRBAC(r.APIGroups, "") && matchesRBAC(r.Resources, resource) && matchesRBAC(r.Verbs, verb) {
				return true, roles, nil
			}
		}
	}
	return false, roles, nil
}

func matchesRBAC(list []string, want string) bool {
	return slices.Contains(list, want) || slices.Contains(list, rbacv1.ResourceAll)
}

func evalServiceStatusWritable(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	allowed, roles, err := canServiceController(ctx, e, "patch", "services/status")
	if err != nil {
		return errOutcome(err)
	}
	who := "system:serviceaccount:" + ServiceControllerNamespace + ":" + ServiceControllerAccount
	switch {
	case c.State == "allowed" && allowed:
		return passf("%s は services/status を patch できます", "%s may patch services/status", who)
	case c.State == "allowed":
		return failf("%s は services/status を patch できません (結び付いた ClusterRole: %s)。",
			"%s may not patch services/status (its ClusterRoles: %s).",
			who, strings.Join(roles, ", "))
	case !allowed:
		return passf("%s は services/status を patch できません", "%s may not patch services/status", who)
	default:
		return failf("%s はまだ services/status を patch できます (結び付いた ClusterRole: %s)。", "%s may still patch services/status (its ClusterRoles: %s).",
			who, strings.Join(roles, ", "))
	}
}

// answerELBSecurityGroup: the security groups of the Service's Classic
// ELB (cloud-provider-aws makes one, k8s-elb-<name>).
func answerELBSecurityGroup(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	lb, o, ok := e.classicELB(ctx, a.Name)
	if !ok {
		return nil, o
	}
	return lb.SecurityGroups, Outcome{}
}

// answerNodeGroupAdmittingLB: the groups whose ingress names the ELB's
// group as a source (the nodes' group, once cloud-provider-aws added its
// rule).
func answerNodeGroupAdmittingLB(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	lb, o, ok := e.classicELB(ctx, a.Name)
	if !ok {
		return nil, o
	}
	out := groupsAdmitting(e.env.Cloud.SecurityGroupViews(), lb.SecurityGroups)
	if len(out) == 0 {
		return nil, failf("ELB のグループ %s を送信元として許すセキュリティグループがありません。", "no security group admits the ELB's group %s as a source.", strings.Join(lb.SecurityGroups, ", "))
	}
	return out, Outcome{}
}
