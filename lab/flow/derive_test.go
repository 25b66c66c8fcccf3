package flow

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

var t0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

func svcView(mut ...func(*ServiceView)) ServiceView {
	v := ServiceView{Namespace: "default", Name: "web", Type: "LoadBalancer", ClusterIP: "10.96.0.10", Ports: "80:31234/TCP", ExternalIP: "<pending>", Created: t0}
	for _, m := range mut {
		m(&v)
	}
	return v
}

func call(seq uint64, action, errCode string) cloud.Call {
	c := cloud.Call{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Action: action, Caller: "service-controller", State: cloud.CallDone, Resources: []string{"lb"}}
	if errCode != "" {
		c.ErrorCode = errCode
		c.Error = errCode + ": not authorized to perform: elasticloadbalancing:" + action
	}
	return c
}

func TestDeriveService(t *testing.T) {
	on := map[string]bool{"service": true, "node": true}
	off := map[string]bool{"node": true}
	lb := &cloud.LoadBalancer{Name: "lb", TargetType: "instance", Targets: []cloud.Target{{ID: "i-1", Port: 31234}}, HealthCheck: &cloud.HealthCheck{Protocol: "TCP", Port: 31234}}
	tests := []struct {
		name       string
		in         serviceInput
		wantStep   int
		wantReason string
	}{
		{"applied, controller on, nothing yet", serviceInput{svc: svcView(), controllers: on, eligibleNodes: 3}, 1, ""},
		{"applied, controller off", serviceInput{svc: svcView(), controllers: off, eligibleNodes: 3}, 1, ReasonNoServiceController},
		{"class nobody handles", serviceInput{svc: svcView(func(v *ServiceView) { v.LoadBalancerClass = "example.com/none" }), controllers: on}, 1, ReasonClassUnhandled},
		{"nlb class without the add-on", serviceInput{svc: svcView(func(v *ServiceView) { v.LoadBalancerClass = ClassAWSNLB }), controllers: on}, 1, ReasonClassUnhandled},
		{"noticed", serviceInput{svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup} }), controllers: on, eligibleNodes: 3}, 2, ""},
		{"IAM denied", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup} }), controllers: on, eligibleNodes: 3,
			calls: []cloud.Call{call(1, "DescribeLoadBalancers", ""), call(2, "CreateLoadBalancer", cloud.ErrAccessDenied)},
		}, 2, ReasonCloudError},
		{"IAM denied seen before the finalizer", serviceInput{
			svc: svcView(), controllers: on, eligibleNodes: 3,
			calls: []cloud.Call{call(2, "CreateLoadBalancer", cloud.ErrAccessDenied)},
		}, 2, ReasonCloudError},
		{"denied then healed", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup} }), controllers: on, eligibleNodes: 3, lb: &cloud.LoadBalancer{Name: "lb"},
			calls: []cloud.Call{call(2, "CreateLoadBalancer", cloud.ErrAccessDenied), call(3, "CreateLoadBalancer", "")},
		}, 3, ""},
		{"no eligible nodes", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup} }), controllers: on, lb: &cloud.LoadBalancer{Name: "lb"},
			calls: []cloud.Call{call(3, "CreateLoadBalancer", "")},
		}, 3, ReasonNoEligibleNodes},
		{"status written", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup}; v.Ingress = []string{"lb-1.elb"} }), controllers: on, eligibleNodes: 3, lb: lb,
			calls: []cloud.Call{call(3, "CreateLoadBalancer", "")}, endpoints: 2,
		}, 5, ""},
		{"status written but no endpoints", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup}; v.Ingress = []string{"lb-1.elb"} }), controllers: on, eligibleNodes: 3, lb: lb,
		}, 5, ""},
		{"traffic", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup}; v.Ingress = []string{"lb-1.elb"} }), controllers: on, eligibleNodes: 3, lb: lb,
			lastTrace: &TraceInfo{ID: "t1", Status: 200, Time: t0}, endpoints: 2,
		}, 6, ""},
		{"controller turned off after success keeps the steps", serviceInput{
			svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup}; v.Ingress = []string{"lb-1.elb"} }), controllers: off, eligibleNodes: 3, lb: lb, endpoints: 1,
		}, 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := deriveService(tt.in, nil)
			if f.Step != tt.wantStep {
				t.Fatalf("step = %d, want %d (%+v)", f.Step, tt.wantStep, f.Steps)
			}
			reason := ""
			if f.Stuck != nil {
				reason = f.Stuck.Reason
			}
			if reason != tt.wantReason {
				t.Fatalf("stuck reason = %q, want %q (%+v)", reason, tt.wantReason, f.Stuck)
			}
			checkWords(t, f.Steps, f.Stuck)
			for i, s := range f.Steps {
				switch {
				case i < f.Step && s.Status != StepDone:
					t.Errorf("step %d is %s, want done", s.N, s.Status)
				case i == f.Step && tt.wantReason != "" && s.Status != StepStuck:
					t.Errorf("step %d is %s, want stuck", s.N, s.Status)
				case i > f.Step && s.Status != StepPending:
					t.Errorf("step %d is %s, want pending", s.N, s.Status)
				}
			}
		})
	}
}

func TestDeriveServiceCloudError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		calls     []cloud.Call
		wantStuck string // "" = not stuck in the cloud
	}{
		{"refusal names the action", []cloud.Call{call(1, "DescribeLoadBalancers", cloud.ErrLBNotFound), call(2, "CreateLoadBalancer", cloud.ErrAccessDenied)}, "the cloud refused CreateLoadBalancer: AccessDenied"},
		{"not found is an answer, not a refusal", []cloud.Call{call(1, "DescribeLoadBalancers", cloud.ErrLBNotFound)}, ""},
		{"retry after a refusal keeps the refusal", []cloud.Call{call(1, "CreateLoadBalancer", cloud.ErrAccessDenied), call(2, "DescribeLoadBalancers", cloud.ErrLBNotFound)}, "the cloud refused CreateLoadBalancer: AccessDenied"},
		{"a later success clears it", []cloud.Call{call(1, "CreateLoadBalancer", cloud.ErrAccessDenied), call(2, "CreateLoadBalancer", "")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := deriveService(serviceInput{
				svc: svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup} }), controllers: map[string]bool{"service": true}, eligibleNodes: 1,
				calls: tc.calls,
			}, nil)
			if tc.wantStuck == "" {
				if f.Stuck != nil {
					t.Fatalf("stuck = %+v, want none", f.Stuck)
				}
				return
			}
			if f.Stuck == nil || !strings.HasPrefix(f.Stuck.Message, tc.wantStuck) {
				t.Fatalf("stuck = %+v, want a message starting %q", f.Stuck, tc.wantStuck)
			}
			checkWords(t, f.Steps, f.Stuck)
		})
	}
}

func TestDeriveNode(t *testing.T) {
	inst := &cloud.Instance{ID: "i-0123456789abcdef0", Name: "ip-10-0-0-5", State: cloud.InstanceRunning, LaunchTime: t0}
	tainted := &NodeView{Name: "ip-10-0-0-5", Created: t0.Add(time.Second), Taints: []string{UninitializedTaint}, Uninitialized: UninitializedTaint}
	written := &NodeView{Name: "ip-10-0-0-5", Created: t0.Add(time.Second), ProviderID: "aws:///ap-northeast-1a/i-0123456789abcdef0", Taints: []string{UninitializedTaint}, Uninitialized: UninitializedTaint}
	done := &NodeView{Name: "ip-10-0-0-5", Created: t0.Add(time.Second), ProviderID: "aws:///ap-northeast-1a/i-0123456789abcdef0", Taints: []string{}}
	query := []cloud.Call{{Seq: 1, Time: t0.Add(2 * time.Second), Action: "DescribeInstances", Caller: "node-controller", State: cloud.CallDone}}
	on := map[string]bool{"node": true}
	stopped := *inst
	stopped.State = cloud.InstanceStopped
	tests := []struct {
		name       string
		in         nodeInput
		wantStep   int
		wantReason string
	}{
		{"launched only", nodeInput{name: inst.Name, instance: inst, controllers: on}, 1, ""},
		{"registered, no node controller", nodeInput{name: inst.Name, instance: inst, node: tainted, controllers: map[string]bool{}}, 2, ReasonNoNodeController},
		{"registered, queried", nodeInput{name: inst.Name, instance: inst, node: tainted, queries: query, controllers: on}, 3, ""},
		{"written, still tainted", nodeInput{name: inst.Name, instance: inst, node: written, queries: query, controllers: on}, 4, ""},
		{"initialized", nodeInput{name: inst.Name, instance: inst, node: done, queries: query, controllers: on}, 5, ""},
		{"first pod", nodeInput{name: inst.Name, instance: inst, node: done, controllers: on, firstPod: &PodView{Name: "web", Scheduled: t0.Add(5 * time.Second)}}, 6, ""},
		{"stopped before init", nodeInput{name: inst.Name, instance: &stopped, node: tainted, controllers: on}, 2, ReasonInstanceNotRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := deriveNode(tt.in, nil)
			if f.Step != tt.wantStep {
				t.Fatalf("step = %d, want %d (%+v)", f.Step, tt.wantStep, f.Steps)
			}
			reason := ""
			if f.Stuck != nil {
				reason = f.Stuck.Reason
			}
			if reason != tt.wantReason {
				t.Fatalf("stuck = %q, want %q", reason, tt.wantReason)
			}
			checkWords(t, f.Steps, f.Stuck)
		})
	}
}

var japanese = regexp.MustCompile(`[\p{Hiragana}\p{Katakana}\p{Han}]`)

// checkWords: every proof and stuck detail a derivation produced is a
// flowtext key with texts, filled completely by its arguments, Japanese in
// Japanese, and the English field is the English text. This is what the
// Japanese page shows, checked without a browser.
func checkWords(t *testing.T, steps []Step, stuck *Stuck) {
	t.Helper()
	words := flowtext.Catalog()
	check := func(what, key string, args i18n.Args, english string) {
		t.Helper()
		if _, ok := words[key]; !ok {
			t.Errorf("%s: key %q has no texts", what, key)
			return
		}
		txt := words.Text(i18n.Msg{Key: key, Args: args})
		for _, p := range i18n.Placeholders(words[key].EN) {
			if _, ok := args[p]; !ok {
				t.Errorf("%s: %s lacks the argument %q", what, key, p)
			}
		}
		if !japanese.MatchString(txt.JA) {
			t.Errorf("%s: %q is not Japanese", what, txt.JA)
		}
		if txt.EN != english {
			t.Errorf("%s: English field %q, the catalog says %q", what, english, txt.EN)
		}
	}
	for _, s := range steps {
		if s.Status != StepDone {
			if s.EvidenceKey != "" || s.Evidence != "" {
				t.Errorf("step %d is %s but has evidence %q", s.N, s.Status, s.EvidenceKey)
			}
			continue
		}
		check("step "+s.Key, s.EvidenceKey, s.EvidenceArgs, s.Evidence)
	}
	if stuck != nil {
		check("stuck "+stuck.Reason, stuck.MessageKey, stuck.MessageArgs, stuck.Message)
	}
}

// awsCall is a finished call through the AWS API by the Service controller.
func awsCall(seq uint64, service, action, errCode string) cloud.Call {
	c := call(seq, action, errCode)
	c.Service = service
	if errCode != "" {
		c.Error = errCode + ": refused " + action
	}
	return c
}

// TestDeriveServiceProviders follows each provider's real calls for one
// LoadBalancer Service through steps 3 and 4: the lab's own (its Go API),
// and k8s.io/cloud-provider-aws v1.37.1 making a Classic ELB (a Service
// without annotations) or an NLB (aws-load-balancer-type: nlb). The
// sequences are the call log of lab/flow/upstreamflow's run.
func TestDeriveServiceProviders(t *testing.T) {
	const elb, elbv2, ec2 = cloud.ServiceELB, cloud.ServiceELBv2, cloud.ServiceEC2
	labLB := &cloud.LoadBalancer{Name: "lb", TargetType: "instance", Targets: []cloud.Target{{ID: "i-1", Port: 31234}}, HealthCheck: &cloud.HealthCheck{Protocol: "TCP", Port: 31234}}
	hc := &cloud.HealthCheck{Protocol: "TCP", Port: 31234}
	two := []cloud.Target{{ID: "i-1", Port: 31234}, {ID: "i-2", Port: 31234}}
	one := []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 31234}}
	classic := &cloud.LoadBalancer{Kind: cloud.LBKindClassic, Name: "lb", CreatedAt: t0, Targets: two, HealthCheck: hc, Listeners: one}
	classicEmpty := &cloud.LoadBalancer{Kind: cloud.LBKindClassic, Name: "lb", CreatedAt: t0, HealthCheck: hc, Listeners: one}
	nlb := &cloud.LoadBalancer{Kind: cloud.LBKindNetwork, Name: "lb", CreatedAt: t0, Targets: two, HealthCheck: hc, Listeners: one}
	nlbNoListener := &cloud.LoadBalancer{Kind: cloud.LBKindNetwork, Name: "lb", CreatedAt: t0}
	labCalls := []cloud.Call{
		call(1, "DescribeLoadBalancers", cloud.ErrLBNotFound), call(2, "CreateLoadBalancer", ""), call(3, "DescribeInstances", ""),
		call(4, "RegisterTargets", ""), call(5, "ConfigureHealthCheck", ""),
	}
	// As k8s.io/cloud-provider-aws v1.37.1 made them in the lab (its EC2
	// look-ups of instances, subnets and route tables left out).
	classicCalls := []cloud.Call{
		awsCall(1, elb, "DescribeLoadBalancers", cloud.ErrLBNotFound), awsCall(2, ec2, "DescribeSecurityGroups", ""),
		awsCall(3, ec2, "CreateSecurityGroup", ""), awsCall(4, ec2, "AuthorizeSecurityGroupIngress", ""),
		awsCall(5, elb, "CreateLoadBalancer", ""), awsCall(6, elb, "DescribeLoadBalancerAttributes", ""),
		awsCall(7, elb, "ModifyLoadBalancerAttributes", ""), awsCall(8, elb, "ConfigureHealthCheck", ""),
		awsCall(9, elb, "RegisterInstancesWithLoadBalancer", ""), awsCall(10, ec2, "AuthorizeSecurityGroupIngress", ""),
	}
	nlbCalls := []cloud.Call{
		awsCall(1, elbv2, "DescribeLoadBalancers", cloud.ErrLBNotFound), awsCall(2, elbv2, "CreateLoadBalancer", ""),
		awsCall(3, elbv2, "CreateTargetGroup", ""), awsCall(4, elbv2, "RegisterTargets", ""),
		awsCall(5, elbv2, "CreateListener", ""), awsCall(6, elbv2, "DescribeLoadBalancerAttributes", ""),
		awsCall(7, ec2, "AuthorizeSecurityGroupIngress", ""),
	}
	noticed := svcView(func(v *ServiceView) { v.Finalizers = []string{FinalizerLBCleanup} })
	for _, tc := range []struct {
		name      string
		lb        *cloud.LoadBalancer
		awsLB     *cloud.LoadBalancer
		calls     []cloud.Call
		wantStep  int
		wantStuck string // the stuck message's start, "" for none
		want3     string // step 3's English evidence
		want4     string // step 4's
	}{
		{name: "lab", lb: labLB, calls: labCalls, wantStep: 4,
			want3: "call CreateLoadBalancer by service-controller", want4: "1 instance targets, health check TCP:31234"},
		{name: "upstream classic ELB", awsLB: classic, calls: classicCalls, wantStep: 4,
			want3: "call elb CreateLoadBalancer by service-controller",
			want4: "2 instances registered, health check TCP:31234 (elb RegisterInstancesWithLoadBalancer + ConfigureHealthCheck)"},
		{name: "upstream NLB", awsLB: nlb, calls: nlbCalls, wantStep: 4,
			want3: "call elbv2 CreateLoadBalancer by service-controller",
			want4: "2 instances registered, health check TCP:31234 (elbv2 CreateTargetGroup + RegisterTargets + CreateListener)"},
		{name: "classic ELB without instances yet", awsLB: classicEmpty, calls: classicCalls[:8], wantStep: 3,
			want3: "call elb CreateLoadBalancer by service-controller"},
		{name: "NLB before its listener", awsLB: nlbNoListener, calls: nlbCalls[:3], wantStep: 3,
			want3: "call elbv2 CreateLoadBalancer by service-controller"},
		{name: "classic ELB after a restart (no calls kept)", awsLB: classic, wantStep: 4,
			want3: "load balancer lb exists", want4: "2 instances registered, health check TCP:31234 (elb RegisterInstancesWithLoadBalancer + ConfigureHealthCheck)"},
		{name: "EC2 denies the ELB's security group", calls: append(classicCalls[:2:2], awsCall(3, ec2, "CreateSecurityGroup", cloud.ErrUnauthorizedOperation)),
			wantStep: 2, wantStuck: "the cloud refused CreateSecurityGroup: UnauthorizedOperation"},
		{name: "ELB denies CreateLoadBalancer", calls: append(classicCalls[:4:4], awsCall(5, elb, "CreateLoadBalancer", cloud.ErrAccessDenied)),
			wantStep: 2, wantStuck: "the cloud refused CreateLoadBalancer: AccessDenied"},
		{name: "ELBv2 denies CreateLoadBalancer", calls: append(nlbCalls[:1:1], awsCall(2, elbv2, "CreateLoadBalancer", cloud.ErrAccessDenied)),
			wantStep: 2, wantStuck: "the cloud refused CreateLoadBalancer: AccessDenied"},
		{name: "EC2 throttles", calls: append(classicCalls[:2:2], awsCall(3, ec2, "CreateSecurityGroup", cloud.ErrRequestLimitExceeded)),
			wantStep: 2, wantStuck: "the cloud refused CreateSecurityGroup: RequestLimitExceeded"},
		{name: "ELB throttles registering", awsLB: classicEmpty, calls: append(classicCalls[:8:8], awsCall(9, elb, "RegisterInstancesWithLoadBalancer", cloud.ErrThrottling)),
			wantStep: 3, wantStuck: "the cloud refused RegisterInstancesWithLoadBalancer: Throttling",
			want3: "call elb CreateLoadBalancer by service-controller"},
		{name: "ELBv2 denies CreateTargetGroup", awsLB: nlbNoListener, calls: append(nlbCalls[:2:2], awsCall(3, elbv2, "CreateTargetGroup", cloud.ErrAccessDenied)),
			wantStep: 3, wantStuck: "the cloud refused CreateTargetGroup: AccessDenied",
			want3: "call elbv2 CreateLoadBalancer by service-controller"},
		{name: "target group not found is an answer", awsLB: nlbNoListener, calls: append(nlbCalls[:2:2], awsCall(3, elbv2, "DescribeTargetGroups", cloud.ErrTargetGroupNotFound)),
			wantStep: 3, want3: "call elbv2 CreateLoadBalancer by service-controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := deriveService(serviceInput{svc: noticed, controllers: map[string]bool{"service": true}, eligibleNodes: 2,
				lb: tc.lb, awsLB: tc.awsLB, calls: tc.calls}, nil)
			if f.Step != tc.wantStep {
				t.Fatalf("step = %d, want %d (%+v)", f.Step, tc.wantStep, f.Steps)
			}
			switch {
			case tc.wantStuck == "" && f.Stuck != nil:
				t.Errorf("stuck = %+v, want none", f.Stuck)
			case tc.wantStuck != "" && (f.Stuck == nil || !strings.HasPrefix(f.Stuck.Message, tc.wantStuck)):
				t.Errorf("stuck = %+v, want a message starting %q", f.Stuck, tc.wantStuck)
			}
			if got := f.Steps[2].Evidence; got != tc.want3 {
				t.Errorf("step 3 evidence %q, want %q", got, tc.want3)
			}
			if got := f.Steps[3].Evidence; got != tc.want4 {
				t.Errorf("step 4 evidence %q, want %q", got, tc.want4)
			}
			if tc.want4 != "" && len(tc.calls) > 0 && f.Steps[3].At.IsZero() {
				t.Error("step 4 has no time though its calls are known")
			}
			checkWords(t, f.Steps, f.Stuck)
		})
	}
}
