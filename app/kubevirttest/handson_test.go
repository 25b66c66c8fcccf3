//go:build !unit

package kubevirttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane"
)

// shell runs one of the chapter's command blocks, verbatim, in bash with
// the tenant's kubeconfig as KUBECONFIG (a student's kubectl), and returns
// what it prints, stderr included (kubectl's "No resources found" is on
// stderr, and the chapter shows it).
func shell(t *testing.T, script string) string {
	t.Helper()
	for _, tool := range []string{"kubectl", "jq", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.CP.KubeconfigPath())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s\n%v\n%s", script, err, out)
	}
	return string(out)
}

// Node names as Cluster API names a KubeVirt tenant's Machines.
var (
	nodeName   = `tenant-[0-9a-z]{4}-(control-plane-[0-9a-z]{5}|md-0-[0-9a-z]{5}-[0-9a-z]{5})`
	providerRE = regexp.MustCompile(`^kubevirt://tenant-[0-9A-Za-z_-]+$`)
)

// TestHandsOn runs the chapter's kubevirt hands-on on the lab `ccmlab
// serve --profile kubevirt --nodes 2` builds and compares each output with
// the chapter's example output in shape.
func TestHandsOn(t *testing.T) {
	l := servedLab(t)
	ctx := context.Background()
	cluster := l.KubevirtCluster()
	infraKubeconfig := filepath.Join(env.DataDir, controlplane.InfraKubeconfigName)

	var names []string
	t.Run("node controller's work", func(t *testing.T) {
		out := shell(t, `kubectl get node -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.spec.providerID}{"\n"}{end}'`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != servedNodes+1 {
			t.Fatalf("%d nodes, want %d (a control-plane node and %d workers):\n%s", len(lines), servedNodes+1, servedNodes, out)
		}
		line := regexp.MustCompile(`^(` + nodeName + `)\t(\S+)$`)
		for _, ln := range lines {
			m := line.FindStringSubmatch(ln)
			if m == nil {
				t.Fatalf("line %q: want <tenant-xxxx-control-plane-abcde or tenant-xxxx-md-0-abcde-fghij>\\tkubevirt://<the same>", ln)
			}
			if !providerRE.MatchString(m[3]) || m[3] != "kubevirt://"+m[1] {
				t.Errorf("providerID %q of %s: want kubevirt://%[2]s matching %s", m[3], m[1], providerRE)
			}
			if !strings.HasPrefix(m[1], cluster+"-") {
				t.Errorf("node %s is not of cluster %s", m[1], cluster)
			}
			names = append(names, m[1])
		}
		if !strings.Contains(lines[0], "-control-plane-") {
			t.Errorf("items[0] is %q, want the control-plane node (the chapter's tenant-xxxx-control-plane-abcde)", lines[0])
		}

		out = shell(t, `kubectl get node -o jsonpath='{.items[0].status.addresses}' | jq .`)
		var addrs []map[string]string
		if err := json.Unmarshal([]byte(out), &addrs); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if len(addrs) != 2 || addrs[0]["type"] != "InternalIP" || !regexp.MustCompile(`^10\.\d+\.\d+\.\d+$`).MatchString(addrs[0]["address"]) ||
			addrs[1]["type"] != "Hostname" || addrs[1]["address"] != names[0] {
			t.Errorf("addresses %v: want exactly [InternalIP 10.x.y.z, Hostname %s]", addrs, names[0])
		}

		out = shell(t, `kubectl get node -o jsonpath='{.items[0].spec.taints}' ; echo`)
		if out != "null\n" && out != "\n" {
			t.Errorf("taints of items[0]: %q, want null (the chapter's)", out)
		}
		nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			for k, v := range n.Labels {
				if strings.Contains(k, "topology.kubernetes.io") || strings.Contains(k, "failure-domain") || strings.Contains(v, "ap-northeast") || v == "m5.large" {
					t.Errorf("node %s has an AWS label %s=%s", n.Name, k, v)
				}
			}
			if got := n.Labels["node.kubernetes.io/instance-type"]; got != "u1.medium" {
				t.Errorf("node %s: instance type %q, want the VMI's annotation u1.medium", n.Name, got)
			}
		}
	})

	t.Run("no service controller", func(t *testing.T) {
		shell(t, "kubectl create deployment web --image=nginx:1.29 --port=80\nkubectl expose deployment web --type=LoadBalancer --port=80")
		defer shell(t, "kubectl delete svc web\nkubectl delete deployment web")
		// The chapter sleeps 10 s here; the test waits for the Deployment
		// instead (a condition, not a time).
		testutil.MustKubectl(t, env.CP.KubeconfigPath(), "rollout", "status", "deployment/web", "--timeout=90s")
		out := shell(t, "kubectl get svc web\nkubectl get svc web -o jsonpath='{.status}' ; echo")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 {
			t.Fatalf("want 3 lines:\n%s", out)
		}
		if f := strings.Fields(lines[0]); !slices.Equal(f, []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}) {
			t.Errorf("header %q", lines[0])
		}
		if !regexp.MustCompile(`^web\s+LoadBalancer\s+10\.96\.\d+\.\d+\s+<pending>\s+80:3\d{4}/TCP\s+\d+s$`).MatchString(lines[1]) {
			t.Errorf("row %q: want web LoadBalancer 10.96.x.y <pending> 80:3xxxx/TCP Ns", lines[1])
		}
		if lines[2] != `{"loadBalancer":{}}` {
			t.Errorf("status %q, want {\"loadBalancer\":{}}", lines[2])
		}

		out = shell(t, "kubectl get events -A --field-selector reason=EnsuringLoadBalancer\n"+
			`kubectl get events -A | grep -i -E 'loadbalancer|cloud-controller' || echo "(controller のイベントは無い)"`+"\n"+
			"kubectl describe svc web | tail -5")
		lines = strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 3 || lines[0] != "No resources found" || lines[1] != "(controller のイベントは無い)" || lines[len(lines)-1] != "Events:                   <none>" && !regexp.MustCompile(`^Events:\s+<none>$`).MatchString(lines[len(lines)-1]) {
			t.Errorf("want No resources found, (controller のイベントは無い), ... Events: <none>:\n%s", out)
		}
	})

	t.Run("management side", func(t *testing.T) {
		out := shell(t, "kubectl --kubeconfig "+infraKubeconfig+" get vmi -A")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if f := strings.Fields(lines[0]); !slices.Equal(f, []string{"NAMESPACE", "NAME", "AGE", "PHASE", "IP", "NODENAME", "READY"}) {
			t.Errorf("header %q", lines[0])
		}
		var vmis []string
		for _, ln := range lines[1:] {
			f := strings.Fields(ln)
			if len(f) != 7 || f[0] != cluster || f[3] != "Running" || f[6] != "True" {
				t.Errorf("row %q: want %s <name> <age> Running <ip> <infra node> True", ln, cluster)
				continue
			}
			vmis = append(vmis, f[1])
		}
		slices.Sort(vmis)
		want := slices.Sorted(slices.Values(names))
		if !slices.Equal(vmis, want) {
			t.Errorf("VMIs %v, want one per node %v", vmis, want)
		}
		// The CCM is there, not in the tenant.
		out = shell(t, "kubectl --kubeconfig "+infraKubeconfig+" -n "+cluster+" get deployment,lease")
		for _, w := range []string{"deployment.apps/" + sim.InfraCCMName, "1/1", "lease.coordination.k8s.io/cloud-controller-manager"} {
			if !strings.Contains(out, w) {
				t.Errorf("management side lacks %q:\n%s", w, out)
			}
		}
		out = shell(t, "kubectl get pods,leases -A")
		if strings.Contains(out, "cloud-controller") {
			t.Errorf("the tenant shows the CCM:\n%s", out)
		}
	})

	t.Run("a deleted VMI takes its Node", func(t *testing.T) {
		victim := names[len(names)-1]
		shell(t, fmt.Sprintf("kubectl --kubeconfig %s -n %s delete vmi %s", infraKubeconfig, cluster, victim))
		testutil.EventuallyCtx(t, 2*time.Minute, "the node-lifecycle controller deletes "+victim, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
			return err != nil, nil
		})
	})
}
