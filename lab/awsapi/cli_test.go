package awsapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// TestAWSCLI: the stock AWS CLI, pointed at the lab with the lines of
// aws.env, reads the lab's state.
func TestAWSCLI(t *testing.T) {
	awsBin, err := exec.LookPath("aws")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the aws CLI is not installed (apt-get install awscli)")
		}
		t.Skip("the aws CLI is not installed (apt-get install awscli)")
	}
	l := newLab(t)
	ctx := cloud.WithCaller(context.Background(), "service-controller")
	dns, err := l.cloud.CreateELB(ctx, cloud.CreateELBInput{Name: "a1", Subnets: []string{l.net.Subnets[0].ID},
		Listeners: []cloud.ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.cloud.ELBRegisterInstances(ctx, "a1", []string{l.inst[0].ID}); err != nil {
		t.Fatal(err)
	}
	nlb, err := l.cloud.CreateNLB(ctx, cloud.CreateNLBInput{Name: "n1", Subnets: []string{l.net.Subnets[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := l.cloud.CreateTargetGroup(ctx, cloud.TargetGroup{Name: "t1", Protocol: "TCP", Port: 30081})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.cloud.CreateListener(ctx, cloud.NLBListener{LBARN: nlb.ARN, Protocol: "TCP", Port: 80, TargetGroupARN: tg.ARN}); err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.RegisterTGTargets(ctx, tg.ARN, []cloud.TGTarget{{ID: l.inst[1].ID}}); err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.CreateRoute(ctx, "10.244.1.0/24", l.inst[0].ID); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	srv, err := Listen(ServerConfig{Handler: Config{Cloud: l.cloud}, EnvPath: filepath.Join(dir, "aws.env")})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// The environment comes from aws.env, as a student's shell would.
	envFile, err := os.ReadFile(filepath.Join(dir, "aws.env"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, line := range strings.Split(string(envFile), "\n") {
		if kv, ok := strings.CutPrefix(line, "export "); ok {
			env = append(env, kv)
		}
	}

	for _, tc := range []struct {
		args []string
		want []string // substrings of the JSON answer
	}{
		{[]string{"ec2", "describe-instances"}, []string{l.inst[0].ID, l.inst[1].ID, l.inst[0].PrivateDNSName}},
		{[]string{"ec2", "describe-security-groups"}, []string{l.net.NodeGroupID, l.cloud.ClusterTagKey()}},
		{[]string{"ec2", "describe-route-tables"}, []string{l.net.RouteTableID, "10.244.1.0/24", l.net.InternetGatewayID}},
		{[]string{"ec2", "describe-subnets"}, []string{l.net.Subnets[0].ID, "kubernetes.io/role/elb"}},
		{[]string{"elb", "describe-load-balancers"}, []string{dns, l.inst[0].ID, "TCP:30080"}},
		{[]string{"elb", "describe-instance-health", "--load-balancer-name", "a1"}, []string{l.inst[0].ID, "OutOfService", "registration is still in progress"}},
		{[]string{"elbv2", "describe-load-balancers"}, []string{nlb.ARN, nlb.DNSName, "active"}},
		{[]string{"elbv2", "describe-target-groups"}, []string{tg.ARN, "30081"}},
		{[]string{"elbv2", "describe-target-health", "--target-group-arn", tg.ARN}, []string{l.inst[1].ID, "healthy"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(awsBin, append(tc.args, "--output", "json")...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("aws %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			var v any
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("answer lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Every call above went through the cloud's pipeline as the CLI.
	n := 0
	for _, c := range l.cloud.Calls(0) {
		if c.Caller == "aws-cli" {
			n++
		}
	}
	if n != 9 {
		t.Fatalf("%d calls by aws-cli in the call log, want 9", n)
	}
}
