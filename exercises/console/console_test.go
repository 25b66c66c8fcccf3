package console

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestConsoleRefuses(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
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
		{"kubectl --kubeconfig /etc/kubernetes/admin.conf get pods", "subcommand right after kubectl"},
		{"kubectl get pods --kubeconfig=/etc/kubernetes/admin.conf", "--kubeconfig is not allowed"},
		{"kubectl get pods --server https://example.com", "--server is not allowed"},
		{"kubectl get pods -s https://example.com", "-s (--server) is not allowed"},
		{"kubectl get pods --token abc", "--token is not allowed"},
		{"kubectl get pods --as system:admin", "--as is not allowed"},
		{"kubectl create -f /etc/passwd", "-f (--filename) is not allowed"},
		{"kubectl create --filename=/etc/passwd", "--filename is not allowed"},
		{"kubectl delete -Rf dir", "-R (--recursive) is not allowed"},
		{"kubectl create -k .", "-k (--kustomize) is not allowed"},
		{"kubectl create configmap x --from-file=/etc/passwd", "--from-file is not allowed"},
		{"kubectl create secret generic x --from-env-file=.env", "--from-env-file is not allowed"},
		{"kubectl get pods -o jsonpath-file=/etc/passwd", "it reads a template from a file"},
		{"kubectl get pods -ogo-template-file=/etc/passwd", "it reads a template from a file"},
		{"kubectl get pods --output=template-file=/x", "it reads a template from a file"},
		{"kubectl get pods --output go-template-file=/x", "it reads a template from a file"},
		{"kubectl get pods --cache-dir=/tmp", "--cache-dir is not allowed"},
		{"kubectl get pods --log-file=/tmp/x", "--log-file is not allowed"},
		{"kubectl get pods --some-file-flag=/tmp/x", "touches files on the host"},
		{"kubectl get pods -w", "-w (--watch) is not allowed"},
		{"kubectl get pods --watch", "--watch is not allowed"},
		{"kubectl run x --image=nginx -it", "-i (--stdin) is not allowed"},
		{"kubectl run x --image=nginx --rm --attach", "--rm is not allowed"},
		{"kubectl create deployment x --image=nginx --edit", "--edit is not allowed"},
		{"kubectl exec -it web -- sh", "kubectl exec is not available"},
		{"kubectl cp web:/etc/passwd .", "kubectl cp is not available"},
		{"kubectl attach web", "kubectl attach is not available"},
		{"kubectl proxy", "kubectl proxy is not available"},
		{"kubectl port-forward svc/web 8080:80", "kubectl port-forward is not available"},
		{"kubectl edit svc web", "kubectl edit is not available"},
		{"kubectl debug node/x", "kubectl debug is not available"},
		{"kubectl plugin list", "kubectl plugin is not available"},
		{"kubectl config view --raw", "kubectl config is not available"},
		{"kubectl krew install x", "kubectl krew is not available"},
		{"kubectl apply -f x.yaml", "kubectl apply is not available"},
		{"kubectl cluster-info dump", "kubectl cluster-info is not available"},
		{"kubectl frobnicate", "kubectl frobnicate is not available"},
		{"kubectl logs -f deploy/web", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs deploy/web --follow", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs deploy/web --follow=true", "kubectl logs -f (--follow) is not available"},
		{"kubectl logs -pf web", "kubectl logs -f (--follow) is not available"},
		{"kubectl -n kube-system logs -l component=etcd -f", "kubectl logs -f (--follow) is not available"},
	} {
		_, err := Parse(tc.line)
		if err == nil {
			t.Errorf("%q was accepted", tc.line)
			continue
		}
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%q: error %v is not ErrRefused", tc.line, err)
		}
		var re *RefusedError
		if !errors.As(err, &re) || !re.Reason.Complete() || strings.Contains(re.Reason.JA+re.Reason.EN, "%!") {
			t.Errorf("%q: refusal %#v lacks a language or is malformed", tc.line, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %q does not say %q", tc.line, err, tc.want)
		}
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
		{`kubectl patch svc web -p '{"spec":{"externalTrafficPolicy":"Local"}}'`, []string{"patch", "svc", "web", "-p", `{"spec":{"externalTrafficPolicy":"Local"}}`}},
		{`kubectl annotate svc web note="a b" x=\$y`, []string{"annotate", "svc", "web", "note=a b", "x=$y"}},
		{"kubectl -n kube-system get pods", []string{"-n", "kube-system", "get", "pods"}},
		{"kubectl --namespace=default get svc -ojson", []string{"--namespace=default", "get", "svc", "-ojson"}},
		{"kubectl get events -A --field-selector reason=EnsuringLoadBalancer", []string{"get", "events", "-A", "--field-selector", "reason=EnsuringLoadBalancer"}},
		{"kubectl describe pods -l app=waiting", []string{"describe", "pods", "-l", "app=waiting"}},
		{"kubectl get pods -lapp=file-server", []string{"get", "pods", "-lapp=file-server"}},
		{"kubectl taint nodes --all node.cloudprovider.kubernetes.io/uninitialized-", []string{"taint", "nodes", "--all", "node.cloudprovider.kubernetes.io/uninitialized-"}},
		{"kubectl run t --image=nginx:1.29 -- sh -c 'cat -f /etc/passwd'", []string{"run", "t", "--image=nginx:1.29", "--", "sh", "-c", "cat -f /etc/passwd"}},
		{"kubectl get svc ''", []string{"get", "svc", ""}},
		{"kubectl wait --for=delete pod/x --timeout=5s", []string{"wait", "--for=delete", "pod/x", "--timeout=5s"}},
		// logs: bounded to the newest lines unless the line bounds it.
		{"kubectl logs deploy/web", []string{"logs", "deploy/web", "--tail=200"}},
		{"kubectl -n kube-system logs -l component=kube-scheduler", []string{"-n", "kube-system", "logs", "-l", "component=kube-scheduler", "--tail=200"}},
		{"kubectl logs web -c nginx --tail=5", []string{"logs", "web", "-c", "nginx", "--tail=5"}},
		{"kubectl logs web --since=1m", []string{"logs", "web", "--since=1m"}},
		{"kubectl logs web --follow=false --limit-bytes=100", []string{"logs", "web", "--follow=false", "--limit-bytes=100"}},
		{"kubectl logs web -cfoo", []string{"logs", "web", "-cfoo", "--tail=200"}},
	} {
		args, err := Parse(tc.line)
		if err != nil {
			t.Errorf("%q refused: %v", tc.line, err)
			continue
		}
		if !slices.Equal(args, tc.args) {
			t.Errorf("%q -> %q, want %q", tc.line, args, tc.args)
		}
	}
}
