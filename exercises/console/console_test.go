package console

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// refusal checks that line is refused with a complete, well-formed
// reason and returns it.
func refusal(t *testing.T, line string) (*RefusedError, bool) {
	t.Helper()
	args, err := Parse(line)
	if err == nil {
		t.Errorf("%q was accepted as %q", line, args)
		return nil, false
	}
	if !errors.Is(err, ErrRefused) {
		t.Errorf("%q: error %v is not ErrRefused", line, err)
	}
	var re *RefusedError
	if !errors.As(err, &re) || !re.Reason.Complete() || strings.Contains(re.Reason.JA+re.Reason.EN, "%!") {
		t.Errorf("%q: refusal %#v lacks a language or is malformed", line, err)
		return nil, false
	}
	return re, true
}

func TestConsoleRefuses(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		// What the splitter refuses: anything a shell would interpret.
		{"", "type a kubectl command"},
		{"kubectl get pods; rm -rf /", "cannot chain commands"},
		{"kubectl get pods && echo hi", "cannot chain commands"},
		{"kubectl get pods & ", "cannot chain commands"},
		{"kubectl get svc | grep web", "pipes (|) are not supported"},
		{"kubectl get node -o jsonpath='{.items[0].status.addresses}' | jq .", "pipes (|) are not supported"},
		{"kubectl get pods > /tmp/out", "redirection (>)"},
		{"kubectl create -f - < /etc/passwd", "redirection (<)"},
		{"kubectl get pods `id`", "substitution"},
		{"kubectl get pods $(id)", "substitution"},
		{"kubectl get pods -n $HOME", "variables"},
		{`kubectl get pods -n "$HOME"`, "expansion is not supported"},
		{"kubectl get pods (x)", "parentheses"},
		{"kubectl get pods # all", "comments"},
		{"kubectl get pods\nkubectl get svc", "one command per line"},
		{"kubectl get 'pods", "unterminated single quote"},
		{`kubectl get "pods`, "unterminated double quote"},
		{"sleep 10", `"sleep" is another program`},
		{"bash -c 'kubectl get pods'", `"bash" is another program`},
		{"/usr/bin/kubectl get pods", "is another program"},
		{"echo kubectl", `"echo" is another program`},
		{"kubectl", "no subcommand"},
		{"kubectl -n default", "no subcommand"},

		// The four holes of issue 21.
		{"kubectl get ns default -o templatefile=../../../student-tokens.json", "-o templatefile is not allowed: it reads a template from a file"},
		{"kubectl create secret tls x --cert=../pki/ca.crt --key=../pki/ca.key --dry-run=client -o yaml", "kubectl create secret tls is not available in the console: it reads a certificate and a key from files"},
		{"kubectl logs -ps http://127.0.0.1:1 x", "--server (-s) is not allowed"},
		{"kubectl get pods --kuberc=/tmp/kuberc", "--kuberc is not allowed"},

		// Subcommands: only the allowlist, whatever comes before them.
		{"kubectl exec -it web -- sh", "kubectl exec is not available in the console: it reaches into containers"},
		{"kubectl -n default exec web -- cat /etc/passwd", "kubectl exec is not available"},
		{"kubectl cp web:/etc/passwd .", "kubectl cp is not available"},
		{"kubectl attach web", "kubectl attach is not available"},
		{"kubectl proxy", "kubectl proxy is not available"},
		{"kubectl proxy --port=0 --www=/", "kubectl proxy is not available"},
		{"kubectl port-forward svc/web 8080:80", "kubectl port-forward is not available"},
		{"kubectl edit svc web", "kubectl edit is not available"},
		{"kubectl debug node/x", "kubectl debug is not available"},
		{"kubectl plugin list", "kubectl plugin list is not available"},
		{"kubectl config view --raw", "kubectl config view is not available in the console: it reads and writes kubeconfig"},
		{"kubectl kuberc view", "kubectl kuberc view is not available"},
		{"kubectl krew install x", "kubectl krew is not available"},
		{"kubectl apply -f x.yaml", "kubectl apply is not available"},
		{"kubectl apply view-last-applied svc web", "kubectl apply view-last-applied is not available"},
		{"kubectl replace --raw /api/v1/namespaces -f x", "kubectl replace is not available"},
		{"kubectl kustomize ../..", "kubectl kustomize is not available"},
		{"kubectl diff -f x", "kubectl diff is not available"},
		{"kubectl cluster-info dump --output-directory=/tmp/x", "kubectl cluster-info dump is not available"},
		{"kubectl auth can-i '*' '*'", "kubectl auth can-i is not available"},
		{"kubectl create token default", "kubectl create token is not available"},
		{"kubectl create secret docker-registry x --from-file=.dockerconfigjson=../kubeconfig", "kubectl create secret docker-registry is not available"},
		{"kubectl create -f /etc/passwd", "kubectl create is not available in the console: it creates from files"},
		{"kubectl create --raw /api/v1/namespaces -f -", "kubectl create is not available"},
		{"kubectl create frobnicate x", "kubectl create frobnicate is not available in the console; available: create configmap"},
		{"kubectl rollout frobnicate x", "kubectl rollout frobnicate is not available in the console; available: rollout history"},
		{"kubectl frobnicate", "kubectl frobnicate is not available in the console; available: annotate, api-resources"},
		{"kubectl __complete get ''", "kubectl __complete is not available"},
		{"kubectl drain node-1", "kubectl drain is not available"},
		{"kubectl top nodes", "kubectl top node is not available in the console: the lab has no metrics-server"},
		{"kubectl completion bash", "kubectl completion is not available"},
		{"kubectl set subject clusterrolebinding x --user=y", "kubectl set subject is not available"},

		// Files, servers and credentials, however they are spelled.
		{"kubectl --kubeconfig /etc/kubernetes/admin.conf get pods", "--kubeconfig is not allowed"},
		{"kubectl get pods --kubeconfig=/etc/kubernetes/admin.conf", "--kubeconfig is not allowed"},
		{"kubectl get pods --kube_config=x", "kubectl get cannot read this line: unknown flag: --kube_config"},
		{"kubectl get pods --server https://example.com", "--server (-s) is not allowed"},
		{"kubectl get pods -s https://example.com", "--server (-s) is not allowed"},
		{"kubectl get pods -shttps://example.com", "--server (-s) is not allowed"},
		{"kubectl get pods -As=https://example.com", "--server (-s) is not allowed"},
		{"kubectl -s https://example.com get pods", "--server (-s) is not allowed"},
		{"kubectl logs -p -s http://127.0.0.1:1 x", "--server (-s) is not allowed"},
		{"kubectl logs -tps http://127.0.0.1:1 x", "kubectl logs cannot read this line: unknown shorthand flag: 't' in -tps"},
		{"kubectl get pods --proxy-url=http://127.0.0.1:1", "--proxy-url is not allowed"},
		{"kubectl get pods --token abc", "--token is not allowed"},
		{"kubectl get pods --as system:admin", "--as is not allowed"},
		{"kubectl get pods --as-group=system:masters", "--as-group is not allowed"},
		{"kubectl get pods --certificate-authority=../pki/ca.crt", "--certificate-authority is not allowed"},
		{"kubectl get pods --certificate_authority=../pki/ca.crt", "--certificate-authority is not allowed"},
		{"kubectl get pods --client-key=../pki/ca.key", "--client-key is not allowed"},
		{"kubectl get pods --insecure-skip-tls-verify", "--insecure-skip-tls-verify is not allowed"},
		{"kubectl get pods --context=other", "--context is not allowed"},
		{"kubectl get pods --cache-dir=/tmp", "--cache-dir is not allowed"},
		{"kubectl get pods --profile=cpu --profile-output=../kubeconfig", "--profile is not allowed: it writes files"},
		{"kubectl get pods --log-file=/tmp/x", "unknown flag: --log-file"},
		{"kubectl get pods --vmodule=x=9", "--vmodule is not available for kubectl get in the console"},
		{"kubectl create -f /etc/passwd", "kubectl create is not available"},
		{"kubectl get -f /etc/passwd", "--filename (-f) is not allowed: it reads files"},
		{"kubectl get --filename=/etc/passwd", "--filename (-f) is not allowed"},
		{"kubectl get -f/etc/passwd", "--filename (-f) is not allowed"},
		{"kubectl get -Af /etc/passwd", "--filename (-f) is not allowed"},
		{"kubectl get '-f' /etc/passwd", "--filename (-f) is not allowed"},
		{`kubectl get "--filename"=/etc/passwd`, "--filename (-f) is not allowed"},
		{`kubectl get --file\name=/etc/passwd`, "--filename (-f) is not allowed"},
		{"kubectl delete -Rf dir", "--recursive (-R) is not allowed"},
		{"kubectl describe -k .", "--kustomize (-k) is not allowed"},
		{"kubectl create configmap x --from-file=/etc/passwd", "--from-file is not allowed: it reads files"},
		{"kubectl create secret generic x --from-env-file=.env", "--from-env-file is not allowed"},
		{"kubectl patch svc web --patch-file=../kubeconfig", "--patch-file is not allowed"},
		{"kubectl get --raw /api/v1/nodes/node-1/proxy/configz", `--raw "/api/v1/nodes/node-1/proxy/configz" is not allowed`},
		{"kubectl get --raw=/api/v1/namespaces/default/pods/web/proxy", "is not allowed: only paths under /api"},
		{"kubectl get --raw /api/v1/namespaces/default/services/web:80/proxy/", "--raw"},
		{"kubectl get --raw /api/v1/namespaces/default/pods/web/log", "--raw"},
		{"kubectl get --raw /api/v1/namespaces/default/pods/web/exec?command=sh", "--raw"},
		{"kubectl get --raw /api/v1/../../etc/passwd", "--raw"},
		{"kubectl get --raw /api/v1/%2e%2e/x", "--raw"},
		{"kubectl get --raw //evil.example/api", "--raw"},
		{"kubectl get --raw http://127.0.0.1:1/api", "--raw"},
		{"kubectl get --raw /metrics", "--raw"},
		{"kubectl get --raw /debug/pprof/", "--raw"},
		{"kubectl get --raw /api/v1/proxy/nodes/status", "--raw"},
		{"kubectl delete --raw /api/v1/namespaces/default", "--raw is not allowed"},

		// Output formats: inline templates only.
		{"kubectl get pods -o jsonpath-file=/etc/passwd", "-o jsonpath-file is not allowed: it reads a template from a file"},
		{"kubectl get pods -ogo-template-file=/etc/passwd", "-o go-template-file is not allowed"},
		{"kubectl get pods -o=go-template-file=/etc/passwd", "-o go-template-file is not allowed"},
		{"kubectl get pods --output=template-file=/x", "-o template-file is not allowed"},
		{"kubectl get pods --output go-template-file=/x", "-o go-template-file is not allowed"},
		{"kubectl get pods --output custom-columns-file=/x", "-o custom-columns-file is not allowed"},
		{"kubectl get pods -o templatefile --template=/x", "-o templatefile is not allowed"},
		{"kubectl get pods -o go-template --template=/x", `-o "go-template" is not available in the console`},
		{"kubectl get pods --template=/x", "--template is not allowed: with -o go-template-file"},
		{"kubectl get pods -o json -o jsonpath-file=/x", "-o jsonpath-file is not allowed"},
		{"kubectl get pods -o JSONPATH-FILE=/x", `-o "JSONPATH-FILE=/x" is not available`},
		{"kubectl get pods -o template={{.}}", `-o "template={{.}}" is not available`},
		{"kubectl version -o templatefile=/x", "-o templatefile is not allowed"},
		{"kubectl create deployment x --image=y --dry-run=client -o go-template-file=/x", "-o go-template-file is not allowed"},

		// Never-ending and interactive flags.
		{"kubectl get pods -w", "--watch (-w) is not allowed: it never ends"},
		{"kubectl get pods --watch", "--watch (-w) is not allowed"},
		{"kubectl get pods --watch-only", "--watch-only is not allowed"},
		{"kubectl run x --image=nginx -it", "--stdin (-i) is not allowed: the console has no interactive terminal"},
		{"kubectl run x --image=nginx --rm --attach", "--rm is not allowed"},
		{"kubectl run x --image=nginx --attach", "--attach is not allowed"},
		{"kubectl delete pods --all -i", "--interactive (-i) is not allowed"},
		{"kubectl logs -f deploy/web", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs deploy/web --follow", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs deploy/web --follow=true", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs deploy/web --follow=1", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs -pf web", "kubectl logs -f (--follow) is not available"},
		{"kubectl -n kube-system logs -l component=etcd -f", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs web --insecure-skip-tls-verify-backend", "--insecure-skip-tls-verify-backend is not allowed"},

		// Everything else not on the subcommand's list.
		{"kubectl get pods -v=10", "-v takes a level from 0 to 9"},
		{"kubectl label pods x a=b --local", "--local is not available for kubectl label in the console"},
		{"kubectl get pods --frobnicate", "kubectl get cannot read this line: unknown flag: --frobnicate"},
		{"kubectl get pods -o", "flag needs an argument"},
		// The management cluster: reading only, with the same flags.
		{"ccmlab kubectl --infra delete vmi -A --all", "on the management cluster (--infra) only reading commands run"},
		{"ccmlab kubectl --infra patch deploy x -p '{}'", "only reading commands run"},
		{"ccmlab kubectl --infra", "only reading commands run"},
		{"ccmlab kubectl --infra get pods --kubeconfig=/tmp/x", "--kubeconfig is not allowed"},
		{"ccmlab kubectl get pods --infra", "unknown flag: --infra"},
		{"kubectl --infra get pods", "is not available in the console"}, // kubectl has no --infra; the embedded one has
		{"ccmlab serve", `"ccmlab" is another program`},
	} {
		t.Run(tc.line, func(t *testing.T) {
			re, ok := refusal(t, tc.line)
			if ok && !strings.Contains(re.Error(), tc.want) {
				t.Errorf("%q: %q does not say %q", tc.line, re, tc.want)
			}
		})
	}
}

func TestConsoleAccepts(t *testing.T) {
	for _, tc := range []struct {
		line string
		args []string
	}{
		{"kubectl get nodes", []string{"get", "nodes"}},
		{"  kubectl   get  svc web  ", []string{"get", "svc", "web"}},
		{`kubectl get node -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.spec.providerID}{"\n"}{end}'`,
			[]string{"get", "node", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.providerID}{"\n"}{end}`}},
		{`kubectl get svc web -o jsonpath="{.status}"`, []string{"get", "svc", "web", "-o", "jsonpath={.status}"}},
		{`kubectl get svc -o go-template='{{range .items}}{{.metadata.name}}{{end}}'`, []string{"get", "svc", "-o", "go-template={{range .items}}{{.metadata.name}}{{end}}"}},
		{"kubectl get svc -o=custom-columns=NAME:.metadata.name", []string{"get", "svc", "-o=custom-columns=NAME:.metadata.name"}},
		{"kubectl get svc --output=jsonpath-as-json={.items}", []string{"get", "svc", "--output=jsonpath-as-json={.items}"}},
		{"kubectl get svc -oyaml", []string{"get", "svc", "-oyaml"}},
		{"kubectl get svc -Aoname", []string{"get", "svc", "-Aoname"}},
		{`kubectl patch svc web -p '{"spec":{"externalTrafficPolicy":"Local"}}'`, []string{"patch", "svc", "web", "-p", `{"spec":{"externalTrafficPolicy":"Local"}}`}},
		{`kubectl annotate svc web note="a b" x=\$y`, []string{"annotate", "svc", "web", "note=a b", "x=$y"}},
		{"kubectl -n kube-system get pods", []string{"-n", "kube-system", "get", "pods"}},
		{"kubectl --namespace=default get svc -ojson", []string{"--namespace=default", "get", "svc", "-ojson"}},
		{"kubectl get events -A --field-selector reason=EnsuringLoadBalancer", []string{"get", "events", "-A", "--field-selector", "reason=EnsuringLoadBalancer"}},
		{"kubectl describe pods -l app=waiting", []string{"describe", "pods", "-l", "app=waiting"}},
		{"kubectl get pods -lapp=file-server", []string{"get", "pods", "-lapp=file-server"}},
		{"kubectl taint nodes --all node.cloudprovider.kubernetes.io/uninitialized-", []string{"taint", "nodes", "--all", "node.cloudprovider.kubernetes.io/uninitialized-"}},
		// After --, words are the container's command line, never read by kubectl.
		{"kubectl run t --image=nginx:1.29 -- sh -c 'cat -f /etc/passwd'", []string{"run", "t", "--image=nginx:1.29", "--", "sh", "-c", "cat -f /etc/passwd"}},
		{"kubectl create deployment d --image=nginx:1.29 -- --kubeconfig=x", []string{"create", "deployment", "d", "--image=nginx:1.29", "--", "--kubeconfig=x"}},
		{"kubectl get svc ''", []string{"get", "svc", ""}},
		{"kubectl wait --for=delete pod/x --timeout=5s", []string{"wait", "--for=delete", "pod/x", "--timeout=5s"}},
		{"kubectl create deploy web --image=nginx:1.29 --dry-run=client -o yaml", []string{"create", "deploy", "web", "--image=nginx:1.29", "--dry-run=client", "-o", "yaml"}},
		{"kubectl create svc loadbalancer web --tcp=80:80", []string{"create", "svc", "loadbalancer", "web", "--tcp=80:80"}},
		{"kubectl create cm c --from-literal=a=b", []string{"create", "cm", "c", "--from-literal=a=b"}},
		{"kubectl rollout status deploy/web --timeout=10s", []string{"rollout", "status", "deploy/web", "--timeout=10s"}},
		{"kubectl set image deploy/web nginx=nginx:1.30", []string{"set", "image", "deploy/web", "nginx=nginx:1.30"}},
		{"kubectl explain svc.spec --recursive", []string{"explain", "svc.spec", "--recursive"}},
		{"kubectl version -o json", []string{"version", "-o", "json"}},
		{"kubectl api-resources -o wide", []string{"api-resources", "-o", "wide"}},
		{"kubectl get pods -v=6", []string{"get", "pods", "-v=6"}},
		{"kubectl get pods --show_labels", []string{"get", "pods", "--show_labels"}}, // kubectl reads _ as -
		// --help and help print kubectl's help.
		{"kubectl help", []string{"help"}},
		{"kubectl help get", []string{"help", "get"}},
		{"kubectl --help", []string{"--help"}},
		{"kubectl get --help", []string{"get", "--help"}},
		{"kubectl rollout", []string{"rollout"}},
		{"kubectl create service -h", []string{"create", "service", "-h"}},
		// --raw, for get only and only under the API's own paths.
		{"kubectl get --raw /api/v1/namespaces/default/pods", []string{"get", "--raw", "/api/v1/namespaces/default/pods"}},
		{"kubectl get --raw=/apis/apps/v1/namespaces/default/deployments/web/scale", []string{"get", "--raw=/apis/apps/v1/namespaces/default/deployments/web/scale"}},
		{"kubectl get --raw /api/v1/nodes/ip-10-0-1-5.ec2.internal/status", []string{"get", "--raw", "/api/v1/nodes/ip-10-0-1-5.ec2.internal/status"}},
		{"kubectl get --raw /readyz?verbose", []string{"get", "--raw", "/readyz?verbose"}},
		{"kubectl get --raw /livez/etcd", []string{"get", "--raw", "/livez/etcd"}},
		{"kubectl get --raw /version", []string{"get", "--raw", "/version"}},
		{"kubectl get --raw /openapi/v3/apis/apps/v1", []string{"get", "--raw", "/openapi/v3/apis/apps/v1"}},
		{"kubectl get --raw /apis", []string{"get", "--raw", "/apis"}},
		// logs: bounded to the newest lines unless the line bounds it.
		{"kubectl logs deploy/web", []string{"logs", "deploy/web", "--tail=200"}},
		{"kubectl -n kube-system logs -l component=kube-scheduler", []string{"-n", "kube-system", "logs", "-l", "component=kube-scheduler", "--tail=200"}},
		{"kubectl logs web -c nginx --tail=5", []string{"logs", "web", "-c", "nginx", "--tail=5"}},
		{"kubectl logs web --since=1m", []string{"logs", "web", "--since=1m"}},
		{"kubectl logs web --follow=false --limit-bytes=100", []string{"logs", "web", "--follow=false", "--limit-bytes=100"}},
		{"kubectl logs web -cfoo", []string{"logs", "web", "-cfoo", "--tail=200"}},
		{"kubectl logs -p web", []string{"logs", "-p", "web", "--tail=200"}},
		{"kubectl logs web -- extra", []string{"logs", "web", "--tail=200", "--", "extra"}},
		// ccmlab's embedded kubectl as a terminal spells it; --infra reads
		// the management cluster.
		{"ccmlab kubectl get nodes", []string{"get", "nodes"}},
		{"ccmlab kubectl --infra get deploy,lease,vmi -A", []string{"--infra", "get", "deploy,lease,vmi", "-A"}},
		{"ccmlab kubectl --infra -n tenant-ab12 logs deploy/kubevirt-cloud-controller-manager", []string{"--infra", "-n", "tenant-ab12", "logs", "deploy/kubevirt-cloud-controller-manager", "--tail=200"}},
		{"ccmlab kubectl --infra describe vmi -A", []string{"--infra", "describe", "vmi", "-A"}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			args, err := Parse(tc.line)
			if err != nil {
				t.Fatalf("%q refused: %v", tc.line, err)
			}
			if !slices.Equal(args, tc.args) {
				t.Errorf("%q -> %q, want %q", tc.line, args, tc.args)
			}
		})
	}
}
