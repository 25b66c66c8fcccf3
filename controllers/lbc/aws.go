package lbc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// AWS says where the lab's AWS API is and what the cloud looks like: what
// the real controller reads from its flags (--aws-region, --aws-vpc-id)
// and its Pod's credentials.
type AWS struct {
	// Endpoint is the lab's AWS API (lab/awsapi), e.g.
	// http://127.0.0.1:39211. Only loopback http endpoints are accepted, so
	// no request of this controller can ever reach real AWS.
	Endpoint string
	Region   string
	VPCID    string
	// VPCCIDR is where an NLB's health checks come from: the nodes'
	// security group admits it on the NodePort of instance targets.
	VPCCIDR string
	// ClusterID is the value of the kubernetes.io/cluster/<ClusterID> tag
	// on the cluster's subnets and the nodes' security group.
	ClusterID string
	// AccessKeyID and SecretAccessKey are the add-on's own key
	// (lab/awsapi Keys.Issue(Caller)): the call log names its
	// calls after it.
	AccessKeyID, SecretAccessKey string
	// HTTPClient, when set, carries the requests; default: one over
	// LoopbackTransport. (The lab wraps the transport in the controller
	// instance's gate, or gives HandlerTransport.)
	HTTPClient *http.Client
}

// validEndpoint is the allowlist: plain http on the loopback interface.
func validEndpoint(e string) error {
	if !strings.HasPrefix(e, "http://127.0.0.1:") && !strings.HasPrefix(e, "http://localhost:") {
		return fmt.Errorf("AWS endpoint %q: must be the lab's loopback AWS API (http://127.0.0.1:<port> or http://localhost:<port>)", e)
	}
	u, err := url.Parse(e)
	if err != nil {
		return fmt.Errorf("AWS endpoint %q: %w", e, err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("AWS endpoint %q: want only scheme, host and port", e)
	}
	return nil
}

func (a *AWS) validate() error {
	var errs []error
	if err := validEndpoint(a.Endpoint); err != nil {
		errs = append(errs, err)
	}
	for name, v := range map[string]string{"region": a.Region, "VPC": a.VPCID, "VPC CIDR": a.VPCCIDR, "cluster ID": a.ClusterID,
		"access key ID": a.AccessKeyID, "secret access key": a.SecretAccessKey} {
		if v == "" {
			errs = append(errs, fmt.Errorf("AWS %s is required", name))
		}
	}
	return errors.Join(errs...)
}

// clients builds the ELBv2 and EC2 clients and returns the HTTP client
// under them. The aws.Config is built by hand, not loaded: nothing is read
// from the environment or ~/.aws, and BaseEndpoint is always the lab's.
// The SDK does not retry: the workqueue does, so an injected failure shows
// as the controller's own failure, as every other controller's does.
func (a *AWS) clients() (*elbv2.Client, *ec2.Client, *http.Client) {
	cfg := aws.Config{
		Region:      a.Region,
		Credentials: credentials.NewStaticCredentialsProvider(a.AccessKeyID, a.SecretAccessKey, ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}
	hc := a.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: LoopbackTransport()}
	}
	cfg.HTTPClient = hc
	base := strings.TrimSuffix(a.Endpoint, "/")
	return elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(base) }),
		ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(base) }), hc
}

// InProcessEndpoint is the endpoint to give with HandlerTransport:
// loopback, so it passes the allowlist, and never dialled.
const InProcessEndpoint = "http://127.0.0.1:0"

// LoopbackTransport is the transport to the lab's AWS API: direct, never
// through a proxy the environment names, and with short timeouts, as the
// API is on this machine.
func LoopbackTransport() http.RoundTripper {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
}

// HandlerTransport hands every request to h in process: the same bytes as
// over the loopback listener, without a socket. The lab uses it when it
// has no AWS API endpoint to give (a test, or a caller that has not wired
// one).
func HandlerTransport(h http.Handler) http.RoundTripper { return handlerTransport{h} }

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	// What a server sees: the Host header and a body, never nil.
	in := r.Clone(r.Context())
	in.Host = r.URL.Host
	in.RequestURI = r.URL.RequestURI()
	if in.Body == nil {
		in.Body = http.NoBody
	}
	w := &memResponse{header: http.Header{}, status: http.StatusOK}
	t.h.ServeHTTP(w, in)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: r,
	}, nil
}

// memResponse is an http.ResponseWriter into memory.
type memResponse struct {
	header      http.Header
	body        bytes.Buffer
	status      int
	wroteHeader bool
}

func (w *memResponse) Header() http.Header { return w.header }

func (w *memResponse) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
}

func (w *memResponse) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.body.Write(b)
}
