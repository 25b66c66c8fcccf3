package controlplane

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// A field manager is the first word of the client's User-Agent
// (k8s.io/apiserver pkg/endpoints/handlers/create.go:259,
// managerOrUserAgent), and client-go starts every User-Agent with the
// base name of os.Args[0] (k8s.io/client-go rest/config.go:533,
// DefaultKubernetesUserAgent), so on a real cluster the controller-manager's
// writes are kube-controller-manager's and the scheduler's kube-scheduler's.
// In the lab all of them are one binary, ccmlab. No client config can
// change that for the controller-manager: every controller's client is made
// with rest.AddUserAgent from a copy of its config that keeps only the
// host, TLS roots and limits (--use-service-account-credentials,
// k8s.io/controller-manager pkg/clientbuilder/client_builder_dynamic.go:243).
//
// The host is kept, path included, so each embedded component reaches the
// apiserver under a path of its own (clientPath) and the apiserver's
// outermost filter (nameClients) takes the path off again and gives the
// request the User-Agent the component's own binary would have sent.

// clientPathPrefix starts the paths of the embedded components; no
// Kubernetes API path starts with it.
const clientPathPrefix = "/ccmlab-client/"

// Binary names of the embedded components, as their images run them.
const (
	binaryAPIServer         = "kube-apiserver"
	binaryControllerManager = "kube-controller-manager"
	binaryScheduler         = "kube-scheduler"
)

// namedClients are the components whose clients the apiserver renames.
var namedClients = []string{binaryControllerManager, binaryScheduler}

// clientPath is the server path component binary's kubeconfig names.
func clientPath(binary string) string { return clientPathPrefix + binary }

// nameClients serves a request under clientPath(b) as the same request
// without the path, its User-Agent's first word replaced by b. A request
// that carries the apiserver's own loopback token (loopbackToken; its
// post-start hooks and controllers write the default namespaces, the
// kubernetes Service, RBAC's bootstrap roles and its identity Lease with
// it) is kube-apiserver's.
func nameClients(next http.Handler, loopbackToken string) http.Handler {
	loopback := []byte("Bearer " + loopbackToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, clientPathPrefix); ok {
			binary, path, _ := strings.Cut(rest, "/")
			for _, b := range namedClients {
				if binary != b {
					continue
				}
				r.URL.Path = "/" + path
				if r.URL.RawPath != "" {
					r.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, clientPath(b))
				}
				r.RequestURI = r.URL.RequestURI()
				renameAgent(r, b)
				break
			}
		} else if loopbackToken != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), loopback) == 1 {
			renameAgent(r, binaryAPIServer)
		}
		next.ServeHTTP(w, r)
	})
}

// renameAgent replaces the first word of r's User-Agent with binary.
func renameAgent(r *http.Request, binary string) {
	if _, version, ok := strings.Cut(r.UserAgent(), "/"); ok {
		r.Header.Set("User-Agent", binary+"/"+version)
	} else {
		r.Header.Set("User-Agent", binary)
	}
}

// runAPIServerChain is kube-apiserver's app.Run (cmd/kube-apiserver/app/
// server.go:149) with nameClients outside the aggregator's handler chain,
// the first handler every request meets.
func runAPIServerChain(ctx context.Context, opts apiserveroptions.CompletedOptions) error {
	if opts.InformerName == nil {
		name, err := cache.NewInformerName("kube-apiserver")
		if err != nil {
			return err
		}
		opts.InformerName = name
	}
	config, err := apiserverapp.NewConfig(opts)
	if err != nil {
		return err
	}
	generic := &config.Aggregator.GenericConfig.Config
	build := generic.BuildHandlerChainFunc
	var token string
	if lc := generic.LoopbackClientConfig; lc != nil {
		token = lc.BearerToken
	}
	generic.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return nameClients(build(h, c), token)
	}
	completed, err := config.Complete()
	if err != nil {
		return err
	}
	server, err := apiserverapp.CreateServerChain(completed)
	if err != nil {
		return err
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return err
	}
	return prepared.Run(ctx)
}
