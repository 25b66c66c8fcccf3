package awsapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// awsCLIs are the AWS CLIs on this machine, by version: Debian's awscli
// 2 in /usr/bin and a pip-installed awscli 1 (botocore) earlier on PATH
// sign a little differently, and both must keep working.
func awsCLIs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	cands := []string{"/usr/bin/aws"}
	if p, err := exec.LookPath("aws"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		v, err := exec.Command(p, "--version").CombinedOutput()
		if err != nil {
			continue
		}
		// "aws-cli/2.9.19 Python/3.11.2 ..." -> "aws-cli/2.9.19"
		name, _, _ := strings.Cut(strings.TrimSpace(string(v)), " ")
		if _, dup := out[name]; !dup {
			out[name] = p
		}
	}
	if len(out) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the aws CLI is not installed (apt-get install awscli)")
		}
		t.Skip("the aws CLI is not installed (apt-get install awscli)")
	}
	return out
}

// TestAWSCLI: the stock AWS CLIs, pointed at the lab with the lines of
// aws.env, read the lab's state, signed with the lab's own key; the call
// log names them aws-cli. A wrong secret gets SignatureDoesNotMatch and a
// caller's path InvalidAction.
func TestAWSCLI(t *testing.T) {
	clis := awsCLIs(t)
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
	envPath := filepath.Join(dir, "aws.env")
	// Whatever the CLI does, it reaches nothing but the lab: any HTTPS
	// request (to a real AWS endpoint) goes to a proxy on a closed
	// loopback port, and only the lab's own address bypasses it.
	base := []string{"HOME=" + dir, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
	cases := []struct {
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
		{[]string{"ec2", "create-tags", "--resources", l.inst[0].ID, "--tags", "Key=team,Value=blue green"}, nil},
		{[]string{"sts", "get-caller-identity"}, []string{Account, "assumed-role/ccmlab-ccm/" + StudentCaller}},
		{[]string{"ec2", "describe-network-interfaces"}, []string{"eni-" + strings.TrimPrefix(l.inst[0].ID, "i-"), l.inst[1].PrivateIP}},
		{[]string{"ec2", "describe-security-groups", "--filters", "Name=group-name,Values=*-nod?"}, []string{l.net.NodeGroupID}},
		{[]string{"ec2", "describe-tags", "--filters", "Name=resource-id,Values=" + l.inst[0].ID}, []string{"blue green"}},
	}
	// run runs the CLI bin as a student's shell does: aws.env sourced
	// (then the exports of extra), then aws.
	run := func(t *testing.T, bin string, extra []string, args ...string) ([]byte, error) {
		t.Helper()
		script := `. "$1"; shift; ` + strings.Join(extra, "; ")
		if len(extra) > 0 {
			script += "; "
		}
		cmd := exec.Command("/bin/bash", append([]string{"-c", script + `aws "$@" --output json`, "bash", envPath}, args...)...)
		cmd.Env = append(slices.Clone(base), "PATH="+filepath.Dir(bin)+":/usr/bin:/bin")
		return cmd.CombinedOutput()
	}
	for version, bin := range clis {
		t.Run(version, func(t *testing.T) {
			before := len(l.cloud.Calls(0))
			for _, tc := range cases {
				t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
					out, err := run(t, bin, nil, tc.args...)
					if err != nil {
						t.Fatalf("aws %s: %v\n%s", strings.Join(tc.args, " "), err, out)
					}
					if tc.want == nil {
						return
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
			// Every call above went through the cloud's pipeline as the
			// student's key.
			n := 0
			for _, c := range l.cloud.Calls(0)[before:] {
				if c.Caller == StudentCaller && c.ErrorCode == "" {
					n++
				}
			}
			// All but sts get-caller-identity, which reads no cloud state.
			if n != len(cases)-1 {
				t.Fatalf("%d calls by %s in the call log, want %d", n, StudentCaller, len(cases)-1)
			}
			if got := instanceTags(l.cloud, l.inst[0].ID)["team"]; got != "blue green" {
				t.Fatalf("tag team = %q after create-tags", got)
			}

			// Refusals, which leave nothing in the call log.
			before = len(l.cloud.Calls(0))
			for _, tc := range []struct {
				name, code string
				extra      []string
			}{
				{"wrong secret", "SignatureDoesNotMatch", []string{"export AWS_SECRET_ACCESS_KEY=" + strings.Repeat("x", 40)}},
				{"unknown key", "AuthFailure", []string{"export AWS_ACCESS_KEY_ID=AKIAAAAAAAAAAAAAAAAA"}},
				{"a caller's path", "InvalidAction", []string{"export AWS_ENDPOINT_URL=" + srv.URL() + "/caller/service-controller/"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out, err := run(t, bin, tc.extra, "ec2", "describe-vpcs")
					if err == nil || !strings.Contains(string(out), tc.code) {
						t.Fatalf("aws ec2 describe-vpcs: %v, want %s:\n%s", err, tc.code, out)
					}
				})
			}
			if calls := l.cloud.Calls(0)[before:]; len(calls) != 0 {
				t.Fatalf("refused calls in the call log: %+v", calls)
			}
		})
	}
}

func instanceTags(c *cloud.Cloud, id string) map[string]string {
	for _, in := range c.Instances() {
		if in.ID == id {
			return in.Tags
		}
	}
	return nil
}
