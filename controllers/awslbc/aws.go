package awslbc

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/globalaccelerator"
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/shield"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/aws-sdk-go-v2/service/wafregional"
	"github.com/aws/aws-sdk-go-v2/service/wafv2"
	smithymiddleware "github.com/aws/smithy-go/middleware"

	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/aws/provider"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/aws/throttle"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/config"
	awsmetrics "sigs.k8s.io/aws-load-balancer-controller/v3/pkg/metrics/aws"
)

// clients is the controller's AWSClientsProvider: every client of every
// service is built by hand on the lab's endpoint, with the controller's
// static key and the lab's HTTP client, so no request can leave for real
// AWS and nothing is read from the environment, ~/.aws or instance
// metadata. The services the lab leaves off (ACM, WAF, Shield, Global
// Accelerator, Route 53, STS) get clients too, as the interface wants
// them; the lab's API answers them as unknown.
type clients struct {
	cfg  aws.Config
	base string
}

func newClients(c Config, cc config.ControllerConfig, m *awsmetrics.Collector) provider.AWSClientsProvider {
	cfg := aws.Config{
		Region:      cc.AWSConfig.Region,
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, ""),
		HTTPClient:  c.HTTPClient,
		// As its aws_config.go: the standard retryer without its client-side
		// rate limit, --aws-max-retries attempts (bounded by the lab), its
		// throttle and metrics middleware.
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.RateLimiter = ratelimit.None
				o.MaxAttempts = max(1, cc.AWSConfig.MaxRetries)
			})
		},
	}
	if cc.AWSConfig.ThrottleConfig != nil {
		t := throttle.NewThrottler(cc.AWSConfig.ThrottleConfig)
		cfg.APIOptions = append(cfg.APIOptions, func(s *smithymiddleware.Stack) error {
			return throttle.WithSDKRequestThrottleMiddleware(t)(s)
		})
	}
	if m != nil {
		cfg.APIOptions = awsmetrics.WithSDKMetricCollector(m, cfg.APIOptions)
	}
	return &clients{cfg: cfg, base: strings.TrimSuffix(c.AWSEndpoint, "/")}
}

func (c *clients) GetEC2Client(context.Context, string) (*ec2.Client, error) {
	return c.GenerateNewEC2Client(c.cfg), nil
}

func (c *clients) GetELBv2Client(context.Context, string) (*elbv2.Client, error) {
	return c.GenerateNewELBv2Client(c.cfg), nil
}

// GenerateNewELBv2Client and GenerateNewEC2Client are how the controller
// builds clients for an assumed role (--role-arn on a TargetGroupBinding):
// whatever cfg says, the endpoint and transport stay the lab's.
func (c *clients) GenerateNewELBv2Client(cfg aws.Config) *elbv2.Client {
	cfg.HTTPClient = c.cfg.HTTPClient
	return elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(c.base) })
}

func (c *clients) GenerateNewEC2Client(cfg aws.Config) *ec2.Client {
	cfg.HTTPClient = c.cfg.HTTPClient
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(c.base) })
}

func (c *clients) GetRoute53Client(context.Context, string) (*route53.Client, error) {
	return route53.NewFromConfig(c.cfg, func(o *route53.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetACMClient(context.Context, string) (*acm.Client, error) {
	return acm.NewFromConfig(c.cfg, func(o *acm.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetWAFv2Client(context.Context, string) (*wafv2.Client, error) {
	return wafv2.NewFromConfig(c.cfg, func(o *wafv2.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetWAFRegionClient(context.Context, string) (*wafregional.Client, error) {
	return wafregional.NewFromConfig(c.cfg, func(o *wafregional.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetShieldClient(context.Context, string) (*shield.Client, error) {
	return shield.NewFromConfig(c.cfg, func(o *shield.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetRGTClient(context.Context, string) (*resourcegroupstaggingapi.Client, error) {
	return resourcegroupstaggingapi.NewFromConfig(c.cfg, func(o *resourcegroupstaggingapi.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetSTSClient(context.Context, string) (*sts.Client, error) {
	return sts.NewFromConfig(c.cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}

func (c *clients) GetGlobalAcceleratorClient(context.Context, string) (*globalaccelerator.Client, error) {
	return globalaccelerator.NewFromConfig(c.cfg, func(o *globalaccelerator.Options) { o.BaseEndpoint = aws.String(c.base) }), nil
}
