package awslbc

import (
	"embed"
	"net"
	"net/http"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The controller's CRDs as its module ships them (config/crd/bases;
// copied by go generate, the module has no Go package that embeds them):
// TargetGroupBinding and IngressClassParams, the two its Service path and
// its chart's webhooks use.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// CRDs returns the controller's CRDs.
func CRDs() []*apiextv1.CustomResourceDefinition {
	names := []string{"crds/elbv2.k8s.aws_targetgroupbindings.yaml", "crds/elbv2.k8s.aws_ingressclassparams.yaml"}
	out := make([]*apiextv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		b, err := crdFiles.ReadFile(n)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			panic(err) // embedded, and checked by TestCRDs
		}
		out = append(out, crd)
	}
	return out
}

// LoopbackTransport is the transport to the lab's AWS API: direct, never
// through a proxy the environment names, with short timeouts, as the API
// is on this machine.
func LoopbackTransport() http.RoundTripper {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
}
