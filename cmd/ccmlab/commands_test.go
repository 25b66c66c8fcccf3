package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/exercises/format"
)

// TestEveryExerciseCommandRuns runs every command of every exercise, as
// the page prints it, in a real shell on the lab `ccmlab serve --addons
// lbc` builds: after the exercise's reset, one bash per exercise (a
// student's terminal) that first sources the line the page gives
// (Detail.shell), then per step the solution in order and the step's other
// commands, with the system's kubectl, aws, jq and curl; the reading lines the
// console accepts run through POST /api/console too. A line fails when
// it exits non-zero or prints an error (kubectl's "error:", "Error from
// server", jq's and the AWS CLI's errors, "command not found"). The steps
// depend on each other, so each step is played to its end as a student
// would: the solution's page actions are done through the API (doActions),
// a typed answer is read from the lab with a shell line (answerLines), and
// the next step starts once the lab's check passes this one.
//
// What cannot run here is listed with its reason: whole exercises in
// skipExercises, single lines that may fail in mayFail.
func TestEveryExerciseCommandRuns(t *testing.T) {
	needBinary(t)
	for _, tool := range []string{"bash", "kubectl", "aws", "jq", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is needed to run the exercises' commands as printed", tool)
			}
			t.Skipf("%s not installed: the exercises' commands run with the system's kubectl, aws, jq and curl", tool)
		}
	}
	all, err := format.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	only := map[string]bool{} // CCMLAB_EXERCISES=id,id: a subset, while writing one
	for id := range strings.SplitSeq(os.Getenv("CCMLAB_EXERCISES"), ",") {
		if id != "" {
			only[id] = true
		}
	}
	// A data dir with a space, as a student's home may have: the commands
	// name it, so they must quote it.
	dataDir := filepath.Join(t.TempDir(), "my lab")
	l := startProcess(t, dataDir, "--addons", "lbc")
	for _, ex := range all {
		t.Run(ex.ID, func(t *testing.T) {
			if len(only) > 0 && !only[ex.ID] {
				t.Skip("not in CCMLAB_EXERCISES")
			}
			if why, ok := skipExercises[ex.ID]; ok {
				t.Skip(why)
			}
			if len(ex.Steps) == 0 {
				t.Skip("a quiz: no commands")
			}
			playExercise(t, l, dataDir, ex)
		})
	}
}

// skipExercises are the exercises this test cannot play, and why.
var skipExercises = map[string]string{
	"kubevirt-handson": "needs `ccmlab serve --profile kubevirt` (a management cluster); app/kubevirttest plays it",
	"mystery-pending":  "its cause is drawn at reset and named in the page's challenge panel; TestMysteryPendingEveryCause plays each cause",
}

// doActions stand in for a solution's page actions (SolutionItem.Do), keyed
// exercise/step/index in the solution: the API call the page makes, as a
// shell line written for the default address (rewritten as the page's
// commands are). "" marks an action the step's own lines already do, or a
// typed answer (answerLines).
var doActions = map[string]string{
	"cloudprovider-interface/node-joins/0":      `curl -sf -XPOST -H 'Content-Type: application/json' localhost:8080/api/cloud/instances -d '{}' >/dev/null`,
	"cloudprovider-interface/service-created/2": "",
	"no-ccm/node-controller-on/0":               switchLine("node", true),
	"node-init/launch/0":                        `curl -sf -XPOST -H 'Content-Type: application/json' localhost:8080/api/cloud/instances -d '{}' >/dev/null`,
	"node-init/provider-id/1":                   "",
	"node-init/addresses/1":                     "",
	"node-init/labels/1":                        "",
	"node-init/taint-gone/2":                    "",
	"pending-on-purpose/service-off/0":          switchLine("service", false),
	"pending-on-purpose/still-answers/2":        "",
	"pending-on-purpose/service-on/0":           switchLine("service", true),
	"pending-on-purpose/service-on/3":           "",
	"iam-deny/deny/0":                           "",
	"iam-deny/fix/0":                            "",
	"local-traffic/extra-hop/2":                 untilAnswered("local-web") + "; " + untilAnswered("local-web") + "; " + untilAnswered("local-web"),
	"local-traffic/local/1":                     untilAnswered("local-web"),
	"local-traffic/nlb/1":                       untilAnswered("local-nlb"),
	"local-traffic/health/1":                    "",
	"lb-class/enable-lbc/0":                     switchLine("lbc", true),
	"ingress-ip-hostname/expose/3":              "",
	"delete-finalizer/terminating/0":            switchLine("service", false),
	"delete-finalizer/cleanup/0":                switchLine("service", true),
	"routes/no-route/0":                         switchLine("route", false) + "; " + `curl -sf -XPOST -H 'Content-Type: application/json' localhost:8080/api/cloud/instances -d '{}' >/dev/null`,
	"routes/route-back/0":                       switchLine("route", true),
	"routes/node-leaves/0":                      `ID=$(curl -sf localhost:8080/api/cloud/instances | jq -r '[.[] | select(.launchedBy=="user" and .state=="running")][0].id'); curl -sf -XDELETE localhost:8080/api/cloud/instances/$ID >/dev/null`,
	"terminated-vm/not-ready/0":                 switchLine("nodelifecycle", false) + `; ID=$(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' -o jsonpath='{.items[0].spec.providerID}'); curl -sf -XDELETE localhost:8080/api/cloud/instances/${ID##*/} >/dev/null`,
	"terminated-vm/deleted/0":                   switchLine("nodelifecycle", true),
	"shutdown-taint/stop/0":                     `ID=$(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' -o jsonpath='{.items[0].spec.providerID}'); curl -s -XPOST localhost:8080/api/cloud/instances/${ID##*/}/stop | jq .`,
	"shutdown-taint/start/0":                    `ID=$(curl -s localhost:8080/api/cloud/instances | jq -r '[.[] | select(.state=="stopped")][0].id'); curl -s -XPOST localhost:8080/api/cloud/instances/$ID/start | jq .`,
	"security-groups/elb-group/1":               "",
	"security-groups/node-rule/1":               "",
	"closed-node-group/serve/2":                 untilAnswered("gate-web"),
	"closed-node-group/close/2":                 untilRefused("gate-web"),
	"closed-node-group/reopen/1":                untilAnswered("gate-web"),
	"subnet-tags/which-subnet/1":                "",
	"ip-targets-routes/ip-ok/2":                 untilAnswered("reach"),
	"ip-targets-routes/cut/0":                   switchLine("route", false),
	"ip-targets-routes/cut/2":                   untilRefused("reach"),
	"ip-targets-routes/route-back/0":            switchLine("route", true),
	"ip-targets-routes/route-back/1":            untilAnswered("reach"),
	"ccm-toleration/deadlock/0":                 switchLine("node", false),
	"ccm-toleration/way-out/1":                  switchLine("node", true),
	"rate-limits/throttle/0":                    "",
	"rate-limits/many-services/5":               "",
	"rate-limits/lift/0":                        `curl -s -XPUT -H 'Content-Type: application/json' localhost:8080/api/cloud/faults -d '{"qps":0}' | jq .`,
}

// answerLines read a typed answer from the lab, by answer kind: what a
// student finds with the step's commands, in one line. {name} is the
// answer's name (a Service, or a call's action).
var answerLines = map[string]string{
	"callMethod":           `curl -sf localhost:8080/api/cloud/calls | jq -r '[.[] | select(.action=="{name}" and .method != null)] | last | .method'`,
	"newNodeInstanceID":    `kubectl get node --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].spec.providerID}' | sed 's#.*/##'`,
	"newNodePrivateIP":     `kubectl get node --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].status.addresses[?(@.type=="InternalIP")].address}'`,
	"newNodeZone":          `kubectl get node --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].metadata.labels.topology\.kubernetes\.io/zone}'`,
	"taintRemover":         `kubectl get node --sort-by=.metadata.creationTimestamp --show-managed-fields -o json | jq -r '[.items[-1].metadata.managedFields[] | select(.fieldsV1["f:spec"]["f:providerID"] != null) | .manager][0]'`,
	"externalAddress":      `kubectl get svc {name} -o jsonpath='{.status.loadBalancer.ingress[0].hostname}{.status.loadBalancer.ingress[0].ip}'`,
	"clientIPSeenByPod":    `kubectl logs deploy/{name} --tail=1 | cut -d' ' -f1`,
	"healthyTargets":       `. .ccmlab/lab.env; H=$(kubectl get svc {name} -o jsonpath='{.status.loadBalancer.ingress[0].hostname}'); aws elb describe-instance-health --load-balancer-name "${H%%-*}" --query 'length(InstanceStates[?State==` + "`InService`" + `])' --output text`,
	"ingressField":         `kubectl get svc {name} -o jsonpath='{.status.loadBalancer.ingress}' | jq -r '.[0] | keys | map(select(. == "hostname" or . == "ip"))[0]'`,
	"elbSecurityGroup":     `. .ccmlab/lab.env; H=$(kubectl get svc {name} -o jsonpath='{.status.loadBalancer.ingress[0].hostname}'); aws elb describe-load-balancers --query "LoadBalancerDescriptions[?DNSName=='$H'].SecurityGroups[0]" --output text`,
	"nodeGroupAdmittingLB": `. .ccmlab/lab.env; H=$(kubectl get svc {name} -o jsonpath='{.status.loadBalancer.ingress[0].hostname}'); G=$(aws elb describe-load-balancers --query "LoadBalancerDescriptions[?DNSName=='$H'].SecurityGroups[0]" --output text); aws ec2 describe-security-groups --filters Name=ip-permission.group-id,Values=$G --query 'SecurityGroups[0].GroupId' --output text`,
	"elbSubnet":            `. .ccmlab/lab.env; H=$(kubectl get svc {name} -o jsonpath='{.status.loadBalancer.ingress[0].hostname}'); aws elb describe-load-balancers --query "LoadBalancerDescriptions[?DNSName=='$H'].Subnets[0]" --output text`,
}

// mayFail are lines whose failure, where the test runs them, is the
// lab working as the step says, keyed exercise/step and a part of the
// line: whether they fail depends on how quickly a controller acts, so
// either outcome passes (and the reason is the skip list's).
var mayFail = map[string]struct{ line, why string }{
	"delete-finalizer/cleanup": {"kubectl get svc fin", "once the Service controller is on again it takes the finalizer off and the Service goes: NotFound is what the step leads to"},
	"closed-node-group/reopen": {"authorize-security-group-ingress", "the other way to put the rule back: after the annotation the provider may have put it back already (InvalidPermission.Duplicate)"},
	"lb-owner/scheme":          {"ccmlab curl", "right after the annotation the controller replaces the internal NLB with an internet-facing one under a new name: until the Service shows it, the old internal name times out from outside, as the step teaches"},
	"lb-owner/move":            {"kubectl patch svc legacy", "the API server refuses the class on an existing Service (may not change once set): the refusal is what the step asks the student to read"},
}

// readsOnly: the console runs line (console.Parse) and it only reads.
func readsOnly(line string) bool {
	args, err := console.Parse(line)
	if err != nil || len(args) == 0 {
		return false
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-n" || a == "--namespace":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return slices.Contains([]string{"get", "describe", "logs", "events", "explain", "api-resources"}, a)
		}
	}
	return false
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func switchLine(controller string, on bool) string {
	return fmt.Sprintf(`curl -sf -XPUT -H 'Content-Type: application/json' localhost:8080/api/controllers/%s -d '{"enabled":%t}' >/dev/null`, controller, on)
}

// untilAnswered sends requests to the Service's load balancer through the
// API (the page's request panel) until one gets 200, for up to 90 s.
func untilAnswered(svc string) string {
	return fmt.Sprintf(`for i in $(seq 90); do s=$(curl -s -XPOST -H 'Content-Type: application/json' localhost:8080/api/requests -d '{"kind":"loadbalancer","service":"default/%s"}' | jq -r .status); [ "$s" = 200 ] && break; sleep 1; done; [ "$s" = 200 ]`, svc)
}

// untilRefused is untilAnswered for a request that does not get 200.
func untilRefused(svc string) string {
	return fmt.Sprintf(`for i in $(seq 90); do s=$(curl -s -XPOST -H 'Content-Type: application/json' localhost:8080/api/requests -d '{"kind":"loadbalancer","service":"default/%s"}' | jq -r .status); [ "$s" != 200 ] && break; sleep 1; done; [ "$s" != 200 ]`, svc)
}

// failedOutput is what an error looks like in a line's output, besides a
// non-zero exit.
var failedOutput = regexp.MustCompile(`(?m)^error:|Error from server|jq: error|parse error|command not found|^An error occurred|^usage:|No such file or directory|Cannot iterate`)

func playExercise(t *testing.T, l *process, dataDir string, ex *format.Exercise) {
	apiCall(t, l, "POST", "/exercises/"+ex.ID+"/reset", struct{}{})
	var d struct {
		Shell string `json:"shell"`
		Steps []struct {
			ID       string `json:"id"`
			Commands []struct {
				Line string `json:"line"`
			} `json:"commands"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(apiCall(t, l, "GET", "/exercises/"+ex.ID+"?lang=en", nil), &d); err != nil {
		t.Fatal(err)
	}
	if d.Shell == "" {
		t.Fatal("the exercise does not say what a terminal sources (shell)")
	}
	// The address as serve gives it to the exercises (studentAddr).
	addr := studentAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port(t, l.addr)})
	onLab := func(line string) string { return exercises.CommandOnLab(line, addr, dataDir) }
	// The lines run here are the page's: the first step's, as the API
	// sends them, are the file's through CommandOnLab.
	var first []string
	for _, c := range d.Steps[0].Commands {
		first = append(first, c.Line)
	}
	var want []string
	for _, c := range ex.Steps[0].Commands {
		want = append(want, onLab(c))
	}
	if !slices.Equal(first, want) {
		t.Fatalf("the page's commands differ from the file's on this lab:\n%q\n%q", first, want)
	}

	sh := startShell(t)
	if res := sh.run(t, d.Shell); res.code != 0 {
		t.Fatalf("%s: exit %d\n%s", d.Shell, res.code, res.out)
	}
	var failed []string
	for si, st := range ex.Steps {
		key := ex.ID + "/" + st.ID
		var lines []string
		for i, item := range st.Solution {
			if item.Cmd != "" {
				lines = append(lines, item.Cmd)
				continue
			}
			do, ok := doActions[fmt.Sprintf("%s/%d", key, i)]
			if !ok {
				t.Errorf("%s: no doActions entry for solution[%d] %q", key, i, item.Do.EN)
				return
			}
			if do != "" {
				lines = append(lines, do)
			}
		}
		lines = append(lines, st.Commands...)
		ran := map[string]bool{}
		for _, line := range lines {
			line = onLab(line)
			if ran[line] {
				continue
			}
			ran[line] = true
			res := sh.run(t, line)
			bad := res.code != 0 || failedOutput.MatchString(res.out)
			exp, expected := mayFail[key]
			expected = expected && exp.line != "" && strings.Contains(line, exp.line)
			switch {
			case bad && !expected:
				failed = append(failed, fmt.Sprintf("%s: %s\n    exit %d: %s", key, line, res.code, strings.TrimSpace(res.out)))
			case bad:
				t.Logf("%s: %q failed, as it may: %s", key, line, exp.why)
			}
			// A line the page puts into the console runs there too (the
			// reading ones: a second create would only say AlreadyExists).
			if !expected && readsOnly(line) {
				var res struct {
					Output   string `json:"output"`
					ExitCode int    `json:"exitCode"`
				}
				if err := json.Unmarshal(apiCall(t, l, "POST", "/console", map[string]string{"command": line}), &res); err != nil {
					t.Fatal(err)
				}
				if res.ExitCode != 0 || failedOutput.MatchString(res.Output) {
					failed = append(failed, fmt.Sprintf("%s (console): %s\n    exit %d: %s", key, line, res.ExitCode, strings.TrimSpace(res.Output)))
				}
			}
		}
		if !waitStep(t, l, sh, ex, si, onLab) {
			for _, later := range ex.Steps[si+1:] {
				t.Logf("%s/%s not reached", ex.ID, later.ID)
			}
			break
		}
	}
	for _, f := range failed {
		t.Errorf("command failed: %s", f)
	}
}

// waitStep checks the exercise until step si has passed (typing its answer
// once its other checks hold), for up to 2 minutes.
func waitStep(t *testing.T, l *process, sh *shell, ex *format.Exercise, si int, onLab func(string) string) bool {
	t.Helper()
	st := ex.Steps[si]
	answered := false
	var last string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var rep exercises.CheckReport
		if err := json.Unmarshal(apiCall(t, l, "POST", "/exercises/"+ex.ID+"/check?lang=en", struct{}{}), &rep); err != nil {
			t.Fatal(err)
		}
		res := rep.Steps[si]
		if res.Status == exercises.StepPassed {
			t.Logf("%s/%s passed", ex.ID, st.ID)
			return true
		}
		others := true
		last = ""
		for _, c := range res.Checks {
			if c.Kind != "answer" && !c.Pass {
				others = false
			}
			if !c.Pass {
				last += fmt.Sprintf("\n    %s: %s", c.Kind, c.Detail)
			}
		}
		if others && st.Answer != nil && !answered {
			tmpl, ok := answerLines[st.Answer.Kind]
			if !ok {
				t.Errorf("%s/%s: no answerLines entry for answer kind %s", ex.ID, st.ID, st.Answer.Kind)
				return false
			}
			name := st.Answer.Name
			line := onLab(strings.ReplaceAll(tmpl, "{name}", name))
			out := sh.run(t, line)
			v := strings.TrimSpace(out.out)
			if out.code != 0 || v == "" || v == "null" {
				t.Errorf("%s/%s: reading the answer: %s\n    exit %d: %s", ex.ID, st.ID, line, out.code, v)
				return false
			}
			apiCall(t, l, "POST", "/exercises/"+ex.ID+"/steps/"+st.ID+"/answer", map[string]string{"answer": v})
			answered = true
			continue
		}
		time.Sleep(2 * time.Second)
	}
	t.Errorf("%s/%s did not pass within 2 minutes after its lines ran:%s", ex.ID, st.ID, last)
	return false
}

// shell is one bash, a student's terminal: what a line sets stays for the
// next.
type shell struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	mark  string
}

type shellResult struct {
	out  string
	code int
}

func startShell(t *testing.T) *shell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8", "TERM=dumb"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &shell{cmd: cmd, in: in, lines: make(chan string, 1024), mark: fmt.Sprintf("__ccmlab_done_%d__", time.Now().UnixNano())}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})
	return s
}

// run types line into the shell and returns what it printed and its exit
// status (pipefail: a failing kubectl before | jq counts).
func (s *shell) run(t *testing.T, line string) shellResult {
	t.Helper()
	// The mark on a line of its own: a line bash cannot parse still ends.
	if _, err := fmt.Fprintf(s.in, "set -o pipefail; { %s\n} </dev/null 2>&1\n__rc=$?; echo; echo %s $__rc\n", line, s.mark); err != nil {
		t.Fatalf("the shell is gone: %v", err)
	}
	var out strings.Builder
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("the shell ended during %s:\n%s", line, &out)
			}
			if rest, found := strings.CutPrefix(l, s.mark+" "); found {
				var code int
				fmt.Sscan(rest, &code)
				return shellResult{out: strings.TrimSuffix(out.String(), "\n"), code: code}
			}
			out.WriteString(l + "\n")
		case <-timeout:
			t.Fatalf("%s: no end after 3 minutes:\n%s", line, &out)
		}
	}
}
