//go:build !unit

package upstreamtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// studentEnv writes the lab's aws.env, as the served lab writes it for the
// student, and reads its variables back.
func studentEnv(t *testing.T, lab *apptest.Lab) (path string, vars map[string]string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "aws.env")
	if err := awsapi.WriteEnv(datafs.OS{}, path, lab.AWSAPI.URL(), lab.Cloud.Config().Region, lab.AWSAPI.StudentKey()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
	}
	return path, vars
}

// loopbackListeners counts this process's listening TCP sockets on
// 127.0.0.1: the lab runs in the test's process, its load balancer
// listeners among them.
func loopbackListeners(t *testing.T) int {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			if in, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(in, "]")] = true
			}
		}
	}
	b, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// local address 127.0.0.1 (little-endian hex), state 0A (LISTEN)
		if len(f) > 9 && strings.HasPrefix(f[1], "0100007F:") && f[3] == "0A" && inodes[f[9]] {
			n++
		}
	}
	return n
}

// quotasOnTheServedLab: 1,000 CreateLoadBalancer calls through the lab's
// AWS API, signed with aws.env's key, leave the lab's listening sockets
// under its cap, and the calls past the Classic ELB quota get AWS's
// TooManyLoadBalancers (the AWS CLI says it in AWS's words); a Service
// whose ELB the quota refuses gets the Service controller's
// SyncLoadBalancerFailed with the cloud's error. Everything made here is
// deleted again.
func quotasOnTheServedLab(t *testing.T, lab *apptest.Lab) {
	ctx, cancel := context.WithTimeout(env.Ctx, 5*time.Minute)
	defer cancel()
	envPath, vars := studentEnv(t, lab)
	client := elasticloadbalancing.NewFromConfig(aws.Config{
		Region: vars["AWS_REGION"], Retryer: func() aws.Retryer { return aws.NopRetryer{} },
		Credentials: credentials.NewStaticCredentialsProvider(vars["AWS_ACCESS_KEY_ID"], vars["AWS_SECRET_ACCESS_KEY"], ""),
	}, func(o *elasticloadbalancing.Options) { o.BaseEndpoint = aws.String(vars["AWS_ENDPOINT_URL"]) })
	if !strings.HasPrefix(vars["AWS_ENDPOINT_URL"], "http://127.0.0.1:") {
		t.Fatalf("aws.env's endpoint %q is not the lab's loopback address", vars["AWS_ENDPOINT_URL"])
	}
	q := lab.Cloud.Config().Quotas
	classic := 0
	for _, lb := range lab.Cloud.LoadBalancerViews() {
		if lb.Kind == cloud.LBKindClassic {
			classic++
		}
	}
	open := len(lab.Dataplane.Listeners())
	socketsBefore := loopbackListeners(t)
	subnet := lab.Cloud.AWSNetworkInfo().Subnets[0].ID

	var made []string
	refused := 0
	defer func() {
		for _, name := range made {
			if _, err := client.DeleteLoadBalancer(context.Background(), &elasticloadbalancing.DeleteLoadBalancerInput{LoadBalancerName: aws.String(name)}); err != nil {
				t.Errorf("deleting %s: %v", name, err)
			}
		}
	}()
	began := time.Now()
	for i := range 1000 {
		name := fmt.Sprintf("cap-%d", i)
		_, err := client.CreateLoadBalancer(ctx, &elasticloadbalancing.CreateLoadBalancerInput{
			LoadBalancerName: aws.String(name), Subnets: []string{subnet},
			Listeners: []elbtypes.Listener{
				{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)},
				{Protocol: aws.String("TCP"), LoadBalancerPort: 443, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30443)},
			},
		})
		var ae smithy.APIError
		switch {
		case err == nil:
			made = append(made, name)
		case errors.As(err, &ae) && ae.ErrorCode() == cloud.ErrTooManyLoadBalancers:
			refused++
		default:
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	took := time.Since(began)
	if want := q.ClassicLoadBalancers - classic; len(made) != want {
		t.Errorf("%d load balancers made, want %d (the quota of %d, %d there before)", len(made), want, q.ClassicLoadBalancers, classic)
	}
	testutil.Eventually(t, time.Minute, "the data plane's listeners for the new load balancers", func() (bool, string) {
		n := len(lab.Dataplane.Listeners())
		return n == open+2*len(made), fmt.Sprintf("%d open, want %d", n, open+2*len(made))
	})
	socketsAfter := loopbackListeners(t)
	if got, limit := len(lab.Dataplane.Listeners()), lab.Dataplane.ListenerCap(); got > limit || socketsAfter-socketsBefore != 2*len(made) {
		t.Errorf("listeners: the data plane has %d open (cap %d); the process's loopback listening sockets went %d -> %d, want +%d",
			got, limit, socketsBefore, socketsAfter, 2*len(made))
	}
	t.Logf("1,000 CreateLoadBalancer calls in %s: %d made, %d refused with %s; the lab's loopback listening sockets %d -> %d, its load balancer listeners %d (cap %d)",
		took.Round(time.Millisecond), len(made), refused, cloud.ErrTooManyLoadBalancers, socketsBefore, socketsAfter, len(lab.Dataplane.Listeners()), lab.Dataplane.ListenerCap())

	t.Run("the AWS CLI answers AWS's error", func(t *testing.T) {
		bin, err := exec.LookPath("aws")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("the aws CLI is not installed (apt-get install awscli)")
			}
			t.Skip("the aws CLI is not installed (apt-get install awscli)")
		}
		dir := t.TempDir()
		cmd := exec.CommandContext(ctx, "/bin/bash", "-c", `. "$1"; shift; aws "$@"`, "bash", envPath,
			"elb", "create-load-balancer", "--load-balancer-name", "cap-cli", "--subnets", subnet,
			"--listeners", "Protocol=TCP,LoadBalancerPort=80,InstanceProtocol=TCP,InstancePort=30080")
		// Nothing but the lab: an HTTPS request (to a real AWS endpoint)
		// would go to a proxy on a closed loopback port.
		cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
		out, err := cmd.CombinedOutput()
		const want = "An error occurred (TooManyLoadBalancers) when calling the CreateLoadBalancer operation: The quota for the number of load balancers has been reached"
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("aws elb create-load-balancer past the quota: %v\n%s\nwant %q", err, out, want)
		}
		t.Logf("the AWS CLI: %s", strings.TrimSpace(string(out)))
	})

	t.Run("a Service past the quota gets SyncLoadBalancerFailed", func(t *testing.T) {
		svc := &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "past-the-quota"},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "past-the-quota"},
				Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}}},
		}
		created, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = env.Client.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		}()
		const want = "TooManyLoadBalancers: The quota for the number of load balancers has been reached"
		testutil.EventuallyCtx(t, 2*time.Minute, "SyncLoadBalancerFailed with "+want, func(ctx context.Context) (bool, error) {
			evs, err := env.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(created.UID)})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Reason == "SyncLoadBalancerFailed" && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, want) {
					t.Logf("event: %s", e.Message)
					return true, nil
				}
			}
			return false, nil
		})
	})
}
