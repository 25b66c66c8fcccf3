package awslbc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Config is one controller process: what the lab's kubelet hands it when
// it runs the Deployment's Pod.
type Config struct {
	// Args is the container's command line (the controller's own flags).
	Args []string
	// Kube is the Pod's credentials (its ServiceAccount's token), as the
	// in-cluster config would be.
	Kube *rest.Config
	// Namespace is the Pod's namespace: where its leader-election Lease
	// lives (in a cluster the controller reads it from the ServiceAccount
	// mount).
	Namespace string
	// AWSEndpoint is the lab's AWS API (http://127.0.0.1:<port>): the only
	// endpoint its AWS clients send to. --aws-api-endpoints may name it and
	// nothing else.
	AWSEndpoint string
	// AccessKeyID and SecretAccessKey are the controller's own key in the
	// lab's key store, so the call log names its calls.
	AccessKeyID, SecretAccessKey string
	// HTTPClient carries its AWS requests (the lab's loopback transport).
	HTTPClient *http.Client
	// Webhook is the listener its webhook server serves TLS on (a loopback
	// listener the lab's cluster network reaches as the webhook Service),
	// and the serving certificate (the chart's aws-load-balancer-tls
	// Secret).
	Webhook     net.Listener
	WebhookCert []byte
	WebhookKey  []byte
	// Log receives its log lines (kubectl logs).
	Log io.Writer
	// Limits bound what its command line may ask for.
	Limits Limits
}

// Limits are the bounds on the controller's knobs, as the CCM's flags are
// bounded (controllers.ParseArgs).
type Limits struct {
	// MaxConcurrentReconciles bounds --service-max-concurrent-reconciles
	// and --targetgroupbinding-max-concurrent-reconciles (default 8).
	MaxConcurrentReconciles int
	// KubeQPS and KubeBurst are its apiserver client's rate (default 20,
	// 40): the controller itself asks for 1e6 (pkg/config/runtime_config.go).
	KubeQPS   float32
	KubeBurst int
	// MinSyncPeriod bounds --sync-period from below (default 1m).
	MinSyncPeriod time.Duration
	// MaxRetries bounds --aws-max-retries (default 10, the controller's
	// own default, pkg/aws/cloud_config.go).
	MaxRetries int
}

func (l *Limits) setDefaults() {
	if l.MaxConcurrentReconciles <= 0 {
		l.MaxConcurrentReconciles = 8
	}
	if l.KubeQPS <= 0 {
		l.KubeQPS = 20
	}
	if l.KubeBurst <= 0 {
		l.KubeBurst = 40
	}
	if l.MinSyncPeriod <= 0 {
		l.MinSyncPeriod = time.Minute
	}
	if l.MaxRetries <= 0 {
		l.MaxRetries = 10
	}
}

func (c *Config) validate() error {
	c.Limits.setDefaults()
	var errs []error
	if c.Kube == nil {
		errs = append(errs, errors.New("no apiserver credentials (Kube)"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("no namespace"))
	}
	if err := LoopbackEndpoint(c.AWSEndpoint); err != nil {
		errs = append(errs, err)
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		errs = append(errs, errors.New("no AWS access key"))
	}
	if c.HTTPClient == nil {
		errs = append(errs, errors.New("no HTTP client for the AWS API"))
	}
	if c.Webhook == nil || len(c.WebhookCert) == 0 || len(c.WebhookKey) == 0 {
		errs = append(errs, errors.New("no webhook listener or certificate"))
	}
	if c.Log == nil {
		errs = append(errs, errors.New("no log"))
	}
	return errors.Join(errs...)
}

// LoopbackEndpoint is the allowlist for an AWS endpoint: plain http on the
// loopback interface, scheme, host and port only.
func LoopbackEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil {
		return fmt.Errorf("AWS endpoint %q: %w", e, err)
	}
	host := u.Hostname()
	if u.Scheme != "http" || (host != "127.0.0.1" && host != "localhost") || u.Port() == "" {
		return fmt.Errorf("AWS endpoint %q: must be the lab's loopback AWS API (http://127.0.0.1:<port>)", e)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("AWS endpoint %q: want only scheme, host and port", e)
	}
	return nil
}
