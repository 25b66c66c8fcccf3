//go:build !unit

package awsclitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// awsCLI is Debian's CLI, the one the README has a newcomer install; it
// predates AWS_ENDPOINT_URL, so only aws.env's shell function keeps it on
// the lab.
const awsCLI = "/usr/bin/aws"

// TestDoneWhen: issue 37's check on the served lab with two nodes, the
// upstream provider in its DaemonSet's Pod, typed as a student would.
func TestDoneWhen(t *testing.T) {
	cptest.Need(t)
	if _, err := os.Stat(awsCLI); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Debian's awscli is not installed (apt-get install awscli)")
		}
		t.Skip("Debian's awscli is not installed")
	}
	l := sim.DefaultLab()
	l.Nodes = 2
	lab, up, err := apptest.ServeUpstream(env, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if hits := up.Tripwire.Hits(); len(hits) > 0 {
			t.Errorf("requests reached the tripwire (they would have gone to AWS): %v", hits)
		}
	})
	ctx, cancel := context.WithTimeout(env.Ctx, 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	envPath := filepath.Join(dir, "aws.env")
	if err := awsapi.WriteEnv(datafs.OS{}, envPath, lab.AWSAPI.URL(), lab.Cloud.Config().Region, lab.AWSAPI.StudentKey()); err != nil {
		t.Fatal(err)
	}
	// The student's shell: aws.env sourced, nothing else. Any request not
	// to the lab goes to a proxy on a closed loopback port.
	aws := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("/bin/bash", append([]string{"-c", `. "$1"; shift; aws "$@" --output json`, "bash", envPath}, args...)...)
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustAWS := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := aws(t, args...)
		if err != nil {
			t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var nodes []cloud.Instance
	testutil.Eventually(t, 3*time.Minute, "the nodes' running instances", func() (bool, string) {
		nodes = nil
		for _, in := range lab.Cloud.Instances() {
			if in.State == cloud.InstanceRunning {
				nodes = append(nodes, in)
			}
		}
		return len(nodes) >= 2, describe(lab.Cloud.Instances())
	})
	net := lab.Cloud.AWSNetworkInfo()

	t.Run("describe-instances answers from the lab", func(t *testing.T) {
		out := mustAWS(t, "ec2", "describe-instances")
		for _, n := range nodes {
			if !strings.Contains(out, n.ID) {
				t.Errorf("no %s in:\n%s", n.ID, out)
			}
		}
	})
	t.Run("sts get-caller-identity answers", func(t *testing.T) {
		var id struct{ Account, Arn, UserId string }
		if err := json.Unmarshal([]byte(mustAWS(t, "sts", "get-caller-identity")), &id); err != nil {
			t.Fatal(err)
		}
		if id.Account != awsapi.Account || id.Arn != cloud.CallerARN(awsapi.StudentCaller) || !strings.HasSuffix(id.UserId, ":"+awsapi.StudentCaller) {
			t.Errorf("identity %+v", id)
		}
	})
	t.Run("describe-network-interfaces lists the nodes' interfaces", func(t *testing.T) {
		out := mustAWS(t, "ec2", "describe-network-interfaces")
		for _, n := range nodes {
			if !strings.Contains(out, "eni-"+strings.TrimPrefix(n.ID, "i-")) || !strings.Contains(out, n.PrivateIP) {
				t.Errorf("no interface of %s in:\n%s", n.ID, out)
			}
		}
	})
	rules := func() []cloud.IPPermission {
		for _, g := range lab.Cloud.SecurityGroupViews() {
			if g.ID == net.NodeGroupID {
				return g.Ingress
			}
		}
		t.Fatal("no nodes' group")
		return nil
	}
	first := rules()
	t.Run("revoke-security-group-ingress --dry-run changes nothing", func(t *testing.T) {
		out, err := aws(t, "ec2", "revoke-security-group-ingress", "--dry-run", "--group-id", net.NodeGroupID,
			"--ip-permissions", "IpProtocol=-1,UserIdGroupPairs=[{GroupId="+net.NodeGroupID+"}]")
		if err == nil || !strings.Contains(out, "DryRunOperation") {
			t.Fatalf("err %v, want DryRunOperation:\n%s", err, out)
		}
		if got := rules(); !slices.EqualFunc(got, first, permEqual) {
			t.Fatalf("rules %+v after the dry run, want %+v", got, first)
		}
	})

	svc := func(name string, annotations map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}}}}
	}
	services := env.Client.CoreV1().Services("default")
	hostname := func(t *testing.T, name string) string {
		var host string
		testutil.EventuallyCtx(t, 5*time.Minute, name+"'s load balancer hostname", func(ctx context.Context) (bool, error) {
			s, err := services.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
				return false, nil
			}
			host = s.Status.LoadBalancer.Ingress[0].Hostname
			return host != "", nil
		})
		return host
	}

	t.Run("an nlb Service created then deleted leaves the nodes' group as it was", func(t *testing.T) {
		if _, err := services.Create(ctx, svc("dw-nlb", map[string]string{awsv1.ServiceAnnotationLoadBalancerType: "nlb"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		hostname(t, "dw-nlb")
		testutil.Eventually(t, 3*time.Minute, "the provider's NLB rules in the nodes' group", func() (bool, string) {
			got := rules()
			return slices.ContainsFunc(got, func(p cloud.IPPermission) bool {
				return strings.HasPrefix(p.Description, awsv1.NLBClientRuleDescription+"=")
			}), describe(got)
		})
		t.Logf("with the NLB: %s", describe(rules()))
		if err := services.Delete(ctx, "dw-nlb", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 3*time.Minute, "the Service gone and the nodes' group back to its first rules", func() (bool, string) {
			_, err := services.Get(ctx, "dw-nlb", metav1.GetOptions{})
			got := rules()
			return err != nil && slices.EqualFunc(got, first, permEqual), describe(got)
		})
	})

	t.Run("describe-security-groups finds the ELB's group by a wildcard name", func(t *testing.T) {
		if _, err := services.Create(ctx, svc("dw-elb", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = services.Delete(context.Background(), "dw-elb", metav1.DeleteOptions{}) })
		hostname(t, "dw-elb")
		var elbGroup string
		testutil.Eventually(t, time.Minute, "a k8s-elb- group", func() (bool, string) {
			for _, g := range lab.Cloud.SecurityGroupViews() {
				if strings.HasPrefix(g.Name, "k8s-elb-") {
					elbGroup = g.ID
					return true, ""
				}
			}
			return false, ""
		})
		out := mustAWS(t, "ec2", "describe-security-groups", "--filters", "Name=group-name,Values=k8s-elb-*")
		var res struct{ SecurityGroups []struct{ GroupId string } }
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.SecurityGroups) != 1 || res.SecurityGroups[0].GroupId != elbGroup {
			t.Fatalf("found %+v, want only %s", res.SecurityGroups, elbGroup)
		}
	})

	t.Run("a Classic ELB checking HTTP:<port>/nonexistent shows its instances OutOfService in AWS's words", func(t *testing.T) {
		// nginx answers 404 on the path; a Classic ELB wants 200.
		labels := map[string]string{"app": "dw-hc"}
		one := int32(1)
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "dw-hc"},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.29", Ports: []v1.ContainerPort{{ContainerPort: 80}}}}}}}}
		if _, err := env.Client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.AppsV1().Deployments("default").Delete(context.Background(), "dw-hc", metav1.DeleteOptions{})
		})
		if _, err := services.Create(ctx, svc("dw-hc", map[string]string{
			awsv1.ServiceAnnotationLoadBalancerHealthCheckProtocol: "HTTP",
			awsv1.ServiceAnnotationLoadBalancerHealthCheckPath:     "/nonexistent",
			// AWS's shortest interval; the timeout must be shorter.
			awsv1.ServiceAnnotationLoadBalancerHCInterval:           "5",
			awsv1.ServiceAnnotationLoadBalancerHCTimeout:            "2",
			awsv1.ServiceAnnotationLoadBalancerHCUnhealthyThreshold: "2",
		}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = services.Delete(context.Background(), "dw-hc", metav1.DeleteOptions{}) })
		host := hostname(t, "dw-hc")
		name, _, _ := strings.Cut(host, "-")
		s, err := services.Get(ctx, "dw-hc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodePort := s.Spec.Ports[0].NodePort
		var res struct {
			LoadBalancerDescriptions []struct{ HealthCheck struct{ Target string } }
			InstanceStates           []struct{ InstanceId, State, ReasonCode, Description string }
		}
		testutil.Eventually(t, 3*time.Minute, "the ELB's health check HTTP:<NodePort>/nonexistent", func() (bool, string) {
			out := mustAWS(t, "elb", "describe-load-balancers", "--load-balancer-names", name)
			_ = json.Unmarshal([]byte(out), &res)
			return len(res.LoadBalancerDescriptions) == 1 && res.LoadBalancerDescriptions[0].HealthCheck.Target == fmt.Sprintf("HTTP:%d/nonexistent", nodePort), out
		})
		const failedChecks = "Instance has failed at least the UnhealthyThreshold number of health checks consecutively."
		testutil.Eventually(t, 3*time.Minute, "every instance OutOfService, failed at least the UnhealthyThreshold", func() (bool, string) {
			out := mustAWS(t, "elb", "describe-instance-health", "--load-balancer-name", name)
			res.InstanceStates = nil
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.InstanceStates) < 2 {
				return false, out
			}
			for _, st := range res.InstanceStates {
				if st.State != "OutOfService" || st.ReasonCode != "Instance" || st.Description != failedChecks {
					return false, out
				}
			}
			return true, out
		})
		t.Logf("describe-instance-health: %+v", res.InstanceStates)
		// The lab's own explanation is on the page (the target's reason),
		// never in the AWS API's answer.
		for _, lb := range lab.Cloud.LoadBalancerViews() {
			if lb.Name != name {
				continue
			}
			for _, tg := range lb.Targets {
				if !strings.Contains(tg.Reason, "answered 404") || tg.Code != "Target.ResponseCodeMismatch" {
					t.Errorf("target %s: reason %q code %q, want nginx's 404 and Target.ResponseCodeMismatch", tg.ID, tg.Reason, tg.Code)
				}
			}
		}
		if out := mustAWS(t, "elb", "describe-instance-health", "--load-balancer-name", name); strings.Contains(out, "404") {
			t.Errorf("the AWS API tells the lab's explanation:\n%s", out)
		}
	})
}

func permEqual(a, b cloud.IPPermission) bool {
	return a.Protocol == b.Protocol && a.FromPort == b.FromPort && a.ToPort == b.ToPort && a.Description == b.Description &&
		slices.Equal(a.CIDRs, b.CIDRs) && slices.Equal(a.GroupIDs, b.GroupIDs)
}

func describe[T any](ps T) string {
	b, _ := json.Marshal(ps)
	return string(b)
}
