// Package upstreamaws builds the upstream AWS cloud provider,
// k8s.io/cloud-provider-aws v1.37.1 (aws-sdk-go-v2), pointed at the lab's
// simulated AWS (lab/awsapi) on loopback, for the CCM controllers to use
// instead of the lab's own provider (ccmlab serve --aws-provider=upstream).
//
// The provider is built exactly as its cloud-controller-manager builds it:
// cloudprovider.InitCloudProvider("aws", <cloud config file>), then
// SetInformers and Initialize. Its cloud config names the VPC, subnet,
// route table and cluster ID (so it needs no instance metadata) and has
// three [ServiceOverride] sections sending EC2, ELB and ELBv2 to the lab.
// Each controller gets its own provider, which signs with the
// controller's own access key (awsapi.Keys): the lab's AWS API names the
// caller in the call log after the key, as CloudTrail names the IAM user.
//
// Safety: the SDK falls back to the real AWS endpoint for any service
// without a matching override (the Service key must be the SDK v2 service
// ID, "EC2", not SDK v1's "ec2"). SetProcessEnv points AWS_ENDPOINT_URL at
// a Tripwire, a loopback listener that answers nothing useful and counts
// every request, so a mistyped override can never reach AWS and a test can
// prove none was mistyped.
package upstreamaws

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"

	// Registers the "aws" provider factory.
	_ "k8s.io/cloud-provider-aws/pkg/providers/v1"
)

// ProviderName is the name the upstream provider registers under.
const ProviderName = "aws"

// SDK v2 service IDs, the values the provider's ServiceOverride matches.
const (
	serviceEC2   = "EC2"
	serviceELB   = "Elastic Load Balancing"
	serviceELBv2 = "Elastic Load Balancing v2"
)

// Config says where the lab's AWS API is and what the cloud looks like.
type Config struct {
	Endpoint     string // the lab's AWS API, e.g. http://127.0.0.1:39211
	Region       string
	VPCID        string
	SubnetID     string
	RouteTableID string
	ClusterID    string
	// Dir is where the cloud config file is written (the data dir).
	Dir string
	// Keys issues each controller its access key (the AWS API's own
	// store, so that the API knows the key).
	Keys *awsapi.Keys
	// Methods, when set, learns which cloudprovider.Interface method each
	// controller's provider is in, so the AWS API can put it in the call
	// log (the lab's cloud's cloud.Cloud.Methods).
	Methods *cloud.MethodTracker
}

func (c *Config) validate() error {
	var errs []error
	if !strings.HasPrefix(c.Endpoint, "http://127.0.0.1:") && !strings.HasPrefix(c.Endpoint, "http://localhost:") {
		errs = append(errs, fmt.Errorf("endpoint %q: must be the lab's loopback AWS API", c.Endpoint))
	}
	for name, v := range map[string]string{"region": c.Region, "VPC": c.VPCID, "subnet": c.SubnetID, "route table": c.RouteTableID, "cluster ID": c.ClusterID, "dir": c.Dir} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	if c.Keys == nil {
		errs = append(errs, errors.New("the AWS API's keys are required"))
	}
	return errors.Join(errs...)
}

// CloudConfig is the provider's cloud config (gcfg INI).
func (c Config) CloudConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Global]\nRegion = %s\nVPC = %s\nSubnetID = %s\nRouteTableID = %s\nKubernetesClusterID = %s\n",
		c.Region, c.VPCID, c.SubnetID, c.RouteTableID, c.ClusterID)
	url := strings.TrimSuffix(c.Endpoint, "/") + "/"
	for i, s := range []struct{ id, signing string }{
		{serviceEC2, "ec2"}, {serviceELB, "elasticloadbalancing"}, {serviceELBv2, "elasticloadbalancing"},
	} {
		// SigningName must be set: the override passes it to the client
		// as is, and an empty one would sign for no service.
		fmt.Fprintf(&b, "\n[ServiceOverride %q]\nService = %s\nRegion = %s\nURL = %s\nSigningRegion = %s\nSigningName = %s\n",
			fmt.Sprint(i+1), s.id, c.Region, url, c.Region, s.signing)
	}
	return b.String()
}

// New builds the upstream provider for one controller instance: it signs
// with caller's access key, so its calls appear in the call log under
// caller. client serves the provider's own Kubernetes needs (events);
// factory feeds its node cache (SetInformers: without it ListRoutes fails
// "node informer has not synced yet").
func New(cfg Config, caller string, client kubernetes.Interface, factory informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("upstreamaws: %w", err)
	}
	creds, err := cfg.Keys.Issue(caller)
	if err != nil {
		return nil, fmt.Errorf("upstreamaws: %w", err)
	}
	prov, err := initProvider(cfg, creds)
	if err != nil {
		return nil, fmt.Errorf("upstreamaws: %w", err)
	}
	if iu, ok := prov.(cloudprovider.InformerUser); ok {
		iu.SetInformers(factory)
	}
	prov.Initialize(clientBuilder{client}, stop)
	if cfg.Methods != nil {
		return attributed{Interface: prov, caller: caller, methods: cfg.Methods}, nil
	}
	return prov, nil
}

// processEnv serializes what reads and writes the process's AWS_*
// variables. It is a package variable because the environment it guards
// is the process's.
var processEnv sync.Mutex

// noKey is what AWS_ACCESS_KEY_ID holds between providers: a key the lab
// never issues (it is not even an access key's shape), so an SDK client
// built from the environment at any other time is refused, and the SDK
// never falls back to ~/.aws or instance roles.
const noKey = "ccmlab-no-key"

// initProvider builds the provider with creds. The provider reads its
// credentials only from the environment (config.LoadDefaultConfig in
// aws_sdk.go's Compute, LoadBalancing, LoadBalancingV2 and KeyManagement,
// all called while InitCloudProvider builds it), and the SDK copies env
// credentials into a static provider when it loads them
// (resolveCredentialChain, config/resolve_credentials.go of
// aws-sdk-go-v2/config v1.29.14). So the controller's key is in the
// environment exactly while its provider is built, under processEnv.
func initProvider(cfg Config, creds awsapi.Credentials) (cloudprovider.Interface, error) {
	processEnv.Lock()
	defer processEnv.Unlock()
	path := filepath.Join(cfg.Dir, "aws-cloud-config.ini")
	if err := os.WriteFile(path, []byte(cfg.CloudConfig()), 0o600); err != nil {
		return nil, err
	}
	if err := setKey(creds.AccessKeyID, creds.SecretAccessKey); err != nil {
		return nil, err
	}
	defer func() { _ = setKey(noKey, noKey) }()
	return cloudprovider.InitCloudProvider(ProviderName, path)
}

func setKey(id, secret string) error {
	if err := os.Setenv("AWS_ACCESS_KEY_ID", id); err != nil {
		return err
	}
	return os.Setenv("AWS_SECRET_ACCESS_KEY", secret)
}

// clientBuilder hands the provider the controller's own client.
type clientBuilder struct{ c kubernetes.Interface }

func (b clientBuilder) Config(string) (*rest.Config, error) {
	return nil, errors.New("upstreamaws: the lab gives the provider a client, not a rest config")
}
func (b clientBuilder) ConfigOrDie(name string) *rest.Config {
	panic("upstreamaws: ConfigOrDie(" + name + ") is not supported")
}
func (b clientBuilder) Client(string) (kubernetes.Interface, error) { return b.c, nil }
func (b clientBuilder) ClientOrDie(string) kubernetes.Interface     { return b.c }

// Tripwire is a loopback listener that AWS_ENDPOINT_URL points at: any
// request that reaches it is an AWS call that missed its override.
type Tripwire struct {
	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	hits []string
}

// StartTripwire listens on a free loopback port.
func StartTripwire() (*Tripwire, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &Tripwire{ln: ln}
	t.srv, err = httpguard.NewServer(httpguard.ServerConfig{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		t.mu.Lock()
		t.hits = append(t.hits, r.Method+" "+r.Host+r.URL.Path+" Action="+r.Form.Get("Action"))
		t.mu.Unlock()
		http.Error(w, "ccmlab tripwire: this request missed its ServiceOverride and would have gone to AWS", http.StatusForbidden)
	})})
	if err != nil {
		ln.Close()
		return nil, err
	}
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

// URL is the tripwire's endpoint.
func (t *Tripwire) URL() string { return "http://" + t.ln.Addr().String() }

// Hits returns the requests that reached the tripwire.
func (t *Tripwire) Hits() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.hits...)
}

// Close stops the listener.
func (t *Tripwire) Close() error { return t.srv.Close() }

// SetProcessEnv sets what the AWS SDK reads from the environment: the
// tripwire as the fallback endpoint, no instance metadata, and no key of
// the lab's (noKey; each provider gets its controller's key while it is
// built). The SDK reads only the environment for these, so they are
// process-wide; the lab sets them once, before any provider.
func SetProcessEnv(tripwireURL string) error {
	processEnv.Lock()
	defer processEnv.Unlock()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":          tripwireURL,
		"AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID":         noKey,
		"AWS_SECRET_ACCESS_KEY":     noKey,
	} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	// Profiles and shared config files of the user running the lab must
	// not redirect the provider. AWS_CA_BUNDLE goes too: the lab's AWS API
	// is plain HTTP on loopback, and the SDK would parse the bundle into a
	// fresh certificate pool for every client it builds (a system bundle
	// is ~1 MB of heap per controller, kept for the lab's life), or fail
	// to start the CCM if the file named does not exist.
	for _, k := range []string{"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CA_BUNDLE"} {
		os.Unsetenv(k)
	}
	return nil
}
