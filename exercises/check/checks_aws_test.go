package check

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// classicELB gives Service name a Classic ELB with a group of its own and,
// when admitted, the rule cloud-provider-aws adds to the nodes' group.
// It returns the ELB's group.
func (f *fixture) classicELB(name string, admitted bool) string {
	f.t.Helper()
	svc := f.svc(name)
	net := f.cloud.AWSNetworkInfo()
	lbName := cloudprovider.DefaultLoadBalancerName(svc)
	sg, err := f.cloud.CreateSecurityGroup(f.ctx, "k8s-elb-"+lbName, "elb", net.VPCID, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.cloud.CreateELB(f.ctx, cloud.CreateELBInput{Name: lbName, SecurityGroups: []string{sg}, Subnets: []string{net.Subnets[0].ID},
		Listeners: []cloud.ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}}); err != nil {
		f.t.Fatal(err)
	}
	if admitted {
		if err := f.cloud.AuthorizeIngress(f.ctx, net.NodeGroupID, []cloud.IPPermission{{Protocol: "-1", FromPort: -1, ToPort: -1, GroupIDs: []string{sg}}}); err != nil {
			f.t.Fatal(err)
		}
	}
	return sg
}

// serviceControllerRBAC binds the Service controller's ServiceAccount to
// a role with rules, as the bootstrap policy does.
func (f *fixture) serviceControllerRBAC(rules ...rbacv1.PolicyRule) {
	const role = "system:controller:service-controller"
	f.objs = append(f.objs,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceControllerAccount, Namespace: ServiceControllerNamespace}}})
}

func awsCases() []checkCase {
	statusRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services/status"}, Verbs: []string{"patch", "update"}}
	servicesRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}}
	wildcard := rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}
	open := format.CheckSpec{Kind: "nodesAdmitLB", Name: "sg", State: "open"}
	closed := format.CheckSpec{Kind: "nodesAdmitLB", Name: "sg", State: "closed"}
	allowed := format.CheckSpec{Kind: "serviceStatusWritable", State: "allowed"}
	forbidden := format.CheckSpec{Kind: "serviceStatusWritable", State: "forbidden"}
	return []checkCase{
		{"nodes admit the ELB", open, func(f *fixture) { f.classicELB("sg", true) }, true},
		{"nodes do not admit the ELB", open, func(f *fixture) { f.classicELB("sg", false) }, false},
		{"no ELB at all", open, func(f *fixture) { f.svc("sg") }, false},
		{"nodes closed to the ELB", closed, func(f *fixture) { f.classicELB("sg", false) }, true},
		{"nodes still open to the ELB", closed, func(f *fixture) { f.classicELB("sg", true) }, false},

		{"status writable", allowed, func(f *fixture) { f.serviceControllerRBAC(servicesRule, statusRule) }, true},
		{"status writable by a wildcard", allowed, func(f *fixture) { f.serviceControllerRBAC(wildcard) }, true},
		{"status rule removed", allowed, func(f *fixture) { f.serviceControllerRBAC(servicesRule) }, false},
		{"status rule removed, forbidden", forbidden, func(f *fixture) { f.serviceControllerRBAC(servicesRule) }, true},
		{"status still writable", forbidden, func(f *fixture) { f.serviceControllerRBAC(servicesRule, statusRule) }, false},
	}
}

func TestAWSAnswers(t *testing.T) {
	f := newFixture(t)
	sg := f.classicELB("sg", true)
	f.classicELB("closed", false)
	f.svc("none")
	nodes := f.cloud.AWSNetworkInfo().NodeGroupID
	for _, tc := range []struct {
		spec  format.AnswerSpec
		value string
		right bool
	}{
		{format.AnswerSpec{Kind: "elbSecurityGroup", Name: "sg"}, sg, true},
		{format.AnswerSpec{Kind: "elbSecurityGroup", Name: "sg"}, nodes, false},
		{format.AnswerSpec{Kind: "elbSecurityGroup", Name: "none"}, sg, false}, // no ELB
		{format.AnswerSpec{Kind: "nodeGroupAdmittingLB", Name: "sg"}, nodes, true},
		{format.AnswerSpec{Kind: "nodeGroupAdmittingLB", Name: "sg"}, sg, false}, // the ELB's own group
		{format.AnswerSpec{Kind: "nodeGroupAdmittingLB", Name: "closed"}, nodes, false},
	} {
		if err := ValidateAnswer(tc.spec); err != nil {
			t.Fatal(err)
		}
		o := CheckAnswer(f.ctx, f.env(), Input{}, tc.spec, tc.value)
		if o.Pass != tc.right || !o.Detail.Complete() {
			t.Errorf("%s(%s) %q: %+v", tc.spec.Kind, tc.spec.Name, tc.value, o)
		}
	}
}
