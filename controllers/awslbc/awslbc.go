//lint:file-ignore SA1019 the controller's own constructors (v3.6.2) take record.EventRecorder and an untyped workqueue.DelayingInterface, so the lab hands them what its main.go does.

package awslbc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	zapraw "go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	elbv2api "sigs.k8s.io/aws-load-balancer-controller/v3/apis/elbv2/v1beta1"
	elbv2controller "sigs.k8s.io/aws-load-balancer-controller/v3/controllers/elbv2"
	"sigs.k8s.io/aws-load-balancer-controller/v3/controllers/service"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/aws"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/aws/throttle"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/config"
	elbv2deploy "sigs.k8s.io/aws-load-balancer-controller/v3/pkg/deploy/elbv2"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/inject/pod_readiness"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/k8s"
	awsmetrics "sigs.k8s.io/aws-load-balancer-controller/v3/pkg/metrics/aws"
	lbcmetrics "sigs.k8s.io/aws-load-balancer-controller/v3/pkg/metrics/lbc"
	metricsutil "sigs.k8s.io/aws-load-balancer-controller/v3/pkg/metrics/util"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/networking"
	lbcruntime "sigs.k8s.io/aws-load-balancer-controller/v3/pkg/runtime"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/targetgroupbinding"
	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/version"
	corewebhook "sigs.k8s.io/aws-load-balancer-controller/v3/webhooks/core"
	elbv2webhook "sigs.k8s.io/aws-load-balancer-controller/v3/webhooks/elbv2"
)

// The flags the lab refuses: they name files, listeners or behaviour a Pod
// of the lab does not have (its credentials, its ports and the instance
// metadata are the lab's).
var refusedFlags = []string{"kubeconfig", "metrics-bind-addr", "health-probe-bind-addr", "webhook-bind-port",
	"webhook-cert-dir", "webhook-cert-file", "webhook-key-file", "kube-ca-pem-filepath"}

// ParseArgs reads the controller's command line with its own flag set
// (config.ControllerConfig.BindFlags) and the lab's bounds. Bad input is
// an error naming the flag.
func ParseArgs(args []string, l Limits, endpoint string) (config.ControllerConfig, error) {
	l.setDefaults()
	cc := config.ControllerConfig{
		AWSConfig:              aws.CloudConfig{ThrottleConfig: throttle.NewDefaultServiceOperationsThrottleConfig()},
		FeatureGates:           config.NewFeatureGates(),
		GatewayFinalizerConfig: config.NewDefaultGatewayFinalizerConfig(),
	}
	fs := pflag.NewFlagSet("aws-load-balancer-controller", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cc.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cc, err
	}
	if err := cc.Validate(); err != nil {
		return cc, err
	}
	var errs []error
	for _, f := range refusedFlags {
		if fs.Changed(f) {
			errs = append(errs, fmt.Errorf("--%s: not in ccmlab (the lab gives the Pod its credentials, certificate and ports)", f))
		}
	}
	if cc.AWSConfig.Region == "" || cc.AWSConfig.VpcID == "" {
		errs = append(errs, errors.New("--aws-region and --aws-vpc-id are required in ccmlab: the lab has no instance metadata (IMDS) to read them from"))
	}
	// The lab's AWS API is the only endpoint its clients send to (clients);
	// a Deployment written before a restart may name the API's old port, so
	// the allowlist is the loopback API's shape.
	for svc, url := range cc.AWSConfig.AWSEndpoints {
		if err := LoopbackEndpoint(url); err != nil {
			errs = append(errs, fmt.Errorf("--aws-api-endpoints: %s: %w (the lab's is %s)", svc, err, endpoint))
		}
	}
	for name, n := range map[string]int{
		"service-max-concurrent-reconciles":            cc.ServiceMaxConcurrentReconciles,
		"targetgroupbinding-max-concurrent-reconciles": cc.TargetGroupBindingMaxConcurrentReconciles,
	} {
		if n < 1 || n > l.MaxConcurrentReconciles {
			errs = append(errs, fmt.Errorf("--%s=%d: want 1 to %d in ccmlab", name, n, l.MaxConcurrentReconciles))
		}
	}
	if cc.AWSConfig.MaxRetries < 0 || cc.AWSConfig.MaxRetries > l.MaxRetries {
		errs = append(errs, fmt.Errorf("--aws-max-retries=%d: want 0 to %d in ccmlab", cc.AWSConfig.MaxRetries, l.MaxRetries))
	}
	if cc.RuntimeConfig.SyncPeriod < l.MinSyncPeriod {
		errs = append(errs, fmt.Errorf("--sync-period=%s: want at least %s in ccmlab", cc.RuntimeConfig.SyncPeriod, l.MinSyncPeriod))
	}
	return cc, errors.Join(errs...)
}

// controller-runtime keeps one root logger per process; the lab's
// controllers each pass their own logger, so the root is set once, to
// discard, before the controller-runtime code that falls back to it runs
// (else it prints a warning with a stack to stderr after 30 s).
var setRootLogger = sync.OnceFunc(func() { ctrllog.SetLogger(logr.Discard()) })

// newLogger is the controller's logger, as its main.go builds it: zap's
// JSON lines at --log-level, shortened by its concise logger.
func newLogger(w io.Writer, level string) logr.Logger {
	lvl := zapraw.NewAtomicLevelAt(zapraw.InfoLevel)
	if level == "debug" {
		lvl = zapraw.NewAtomicLevelAt(zapraw.DebugLevel)
	}
	return lbcruntime.NewConciseLogger(zap.New(zap.UseDevMode(false), zap.WriteTo(w), zap.Level(lvl),
		zap.StacktraceLevel(zapraw.NewAtomicLevelAt(zapraw.FatalLevel))))
}

// Run runs the controller until ctx ends (the Pod stops) or it fails.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("awslbc: %w", err)
	}
	setRootLogger()
	cc, err := ParseArgs(cfg.Args, cfg.Limits, cfg.AWSEndpoint)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, cc.LogLevel)
	log.Info("version", "GitVersion", version.GitVersion, "GitCommit", version.GitCommit, "BuildDate", version.BuildDate)
	setupLog := log.WithName("setup")

	// A fresh registry per start: the controller's collectors MustRegister,
	// which panics the second time on one registry.
	reg := prometheus.NewRegistry()
	awsCollector := awsmetrics.NewCollector(reg)
	cloud, err := aws.NewCloud(cc.AWSConfig, cc.ClusterName, awsCollector, log, newClients(cfg, cc, awsCollector), aws.DefaultLbStabilizationTime)
	if err != nil {
		return fmt.Errorf("unable to initialize AWS cloud: %w", err)
	}

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := elbv2api.AddToScheme(scheme); err != nil {
		return err
	}
	restCfg := rest.CopyConfig(cfg.Kube)
	// As its BuildRestConfig: protobuf accepted, JSON sent (its CRDs have
	// no protobuf encoding), whatever the lab's own config prefers.
	restCfg.ContentType = "application/json"
	restCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	restCfg.QPS, restCfg.Burst = cfg.Limits.KubeQPS, cfg.Limits.KubeBurst
	restCfg.UserAgent = "aws-load-balancer-controller/" + version.GitVersion

	webhooks, err := newWebhookServer(cfg.Webhook, cfg.WebhookCert, cfg.WebhookKey, log.WithName("webhook"))
	if err != nil {
		return err
	}
	syncPeriod := cc.RuntimeConfig.SyncPeriod
	opts := ctrl.Options{
		Scheme:                        scheme,
		Logger:                        log,
		HealthProbeBindAddress:        "0",
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                cc.RuntimeConfig.EnableLeaderElection,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionID:              cc.RuntimeConfig.LeaderElectionID,
		LeaderElectionNamespace:       cfg.Namespace,
		LeaderElectionReleaseOnCancel: true, // a restarted Pod leads at once
		Cache:                         cache.Options{SyncPeriod: &syncPeriod},
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		WebhookServer:                 webhooks,
		// Controller names are checked process-wide; the lab's process
		// starts the controller again when its Pod restarts.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	}
	if cc.RuntimeConfig.LeaderElectionNamespace != "" {
		opts.LeaderElectionNamespace = cc.RuntimeConfig.LeaderElectionNamespace
	}
	if ns := cc.RuntimeConfig.WatchNamespace; ns != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return fmt.Errorf("unable to start manager: %w", err)
	}
	counters := metricsutil.NewReconcileCounters()
	lbcCollector := lbcmetrics.NewCollector(reg, mgr, counters, log.WithName("controller_metrics"))
	tgCollector := awsmetrics.NewTargetGroupCollector(reg)
	clientSet, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}

	ec2, vpc := cloud.EC2(), cloud.VpcID()
	podInfoRepo := k8s.NewDefaultPodInfoRepo(clientSet.CoreV1().RESTClient(), cc.RuntimeConfig.WatchNamespace, cc.ServerIDInjectionConfig.EnvironmentVariableName, log)
	finalizers := k8s.NewDefaultFinalizerManager(mgr.GetClient(), log)
	sgManager := networking.NewDefaultSecurityGroupManager(ec2, log)
	sgReconciler := networking.NewDefaultSecurityGroupReconciler(sgManager, log)
	azInfo := networking.NewDefaultAZInfoProvider(ec2, log.WithName("az-info-provider"))
	vpcInfo := networking.NewDefaultVPCInfoProvider(ec2, log.WithName("vpc-info-provider"))
	subnets := networking.NewDefaultSubnetsResolver(azInfo, ec2, vpc, cc.ClusterName,
		cc.FeatureGates.Enabled(config.SubnetsClusterTagCheck), cc.FeatureGates.Enabled(config.ALBSingleSubnet),
		cc.FeatureGates.Enabled(config.SubnetDiscoveryByReachability), log.WithName("subnets-resolver"))
	multiCluster := targetgroupbinding.NewMultiClusterManager(mgr.GetClient(), mgr.GetAPIReader(), log)
	nodeInfo := networking.NewDefaultNodeInfoProvider(ec2, log)
	podENI := networking.NewDefaultPodENIInfoResolver(mgr.GetClient(), ec2, nodeInfo, vpc, log)
	nodeENI := networking.NewDefaultNodeENIInfoResolver(nodeInfo, log)
	netManager := networking.NewDefaultNetworkingManager(mgr.GetClient(), podENI, nodeENI, sgManager, sgReconciler, vpc,
		cc.ClusterName, cc.ServiceTargetENISGTags, log, cc.DisableRestrictedSGRules)
	azIDs := networking.NewDefaultAZIDTranslator(ec2, log.WithName("az-id-translator"))
	tgbResources := targetgroupbinding.NewDefaultResourceManager(mgr.GetClient(), cloud.ELBV2(), podInfoRepo, netManager,
		vpcInfo, azIDs, multiCluster, lbcCollector, vpc, cc.FeatureGates.Enabled(config.EndpointsFailOpen), cc.EnableEndpointSlices,
		mgr.GetEventRecorderFor("targetGroupBinding"), log, cc.MaxTargetsPerTargetGroup, cc.TargetGroupBindingRequeueDuration)
	backendSG := networking.NewBackendSGProvider(cc.ClusterName, cc.BackendSecurityGroup, vpc, ec2, mgr.GetClient(),
		cc.DefaultTags, false, cc.GatewayFinalizerConfig.ALBGatewayFinalizer, cc.GatewayFinalizerConfig.NLBGatewayFinalizer,
		log.WithName("backend-sg-provider"))
	sgResolver := networking.NewDefaultSecurityGroupResolver(ec2, vpc)
	tagging := elbv2deploy.NewDefaultTaggingManager(cloud.ELBV2(), vpc, cc.FeatureGates, cloud.RGT(), log)
	svcReconciler := service.NewServiceReconciler(cloud, mgr.GetClient(), mgr.GetEventRecorderFor("service"),
		finalizers, netManager, sgManager, sgReconciler, subnets, vpcInfo, tagging,
		cc, backendSG, sgResolver, log.WithName("controllers").WithName("service"), lbcCollector, counters, tgCollector)
	deferredQueue := workqueue.NewDelayingQueueWithConfig(workqueue.DelayingQueueConfig{Name: "delayed-target-group-binding"})
	deferred := elbv2controller.NewDeferredTargetGroupBindingReconciler(deferredQueue,
		cc.RuntimeConfig.SyncPeriod, mgr.GetClient(), log.WithName("deferredTGBQueue"))
	tgbReconciler := elbv2controller.NewTargetGroupBindingReconciler(mgr.GetClient(), mgr.GetEventRecorderFor("targetGroupBinding"),
		finalizers, tgbResources, cc, deferred, log.WithName("controllers").WithName("targetGroupBinding"), lbcCollector, counters, podInfoRepo.GetInformer())

	if cc.FeatureGates.Enabled(config.EnableServiceController) {
		if err := svcReconciler.SetupWithManager(ctx, mgr); err != nil {
			return fmt.Errorf("unable to create controller Service: %w", err)
		}
	}
	if err := tgbReconciler.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("unable to create controller TargetGroupBinding: %w", err)
	}

	readiness := pod_readiness.NewPodReadinessGate(cc.PodWebhookConfig, mgr.GetClient(), log.WithName("pod-readiness-gate-injector"))
	corewebhook.NewPodReadinessGateMutator(readiness, lbcCollector).SetupWithManager(mgr)
	corewebhook.NewServiceMutator(cc.ServiceConfig.LoadBalancerClass, log, lbcCollector).SetupWithManager(mgr)
	elbv2webhook.NewIngressClassParamsValidator(lbcCollector).SetupWithManager(mgr)
	elbv2webhook.NewTargetGroupBindingMutator(cloud.ELBV2(), log, lbcCollector).SetupWithManager(mgr)
	elbv2webhook.NewTargetGroupBindingValidator(mgr.GetClient(), cloud.ELBV2(), vpc, log, lbcCollector).SetupWithManager(mgr)

	// The controller's own goroutines end with ctx (the Pod's life); the
	// deferred queue is shut down when Run returns.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	repoErr := make(chan error, 1)
	wg.Go(func() {
		setupLog.Info("starting podInfo repo")
		if err := podInfoRepo.Start(ctx); err != nil {
			repoErr <- fmt.Errorf("problem running podInfo repo: %w", err)
			cancel()
		}
	})
	wg.Go(func() {
		setupLog.Info("starting deferred tgb reconciler")
		deferred.Run()
	})
	wg.Go(func() {
		<-ctx.Done()
		deferredQueue.ShutDown()
	})
	if err := podInfoRepo.WaitForCacheSync(ctx); err != nil {
		return fmt.Errorf("problem wait for podInfo repo sync: %w", err)
	}
	err = mgr.Start(ctx)
	cancel()
	select {
	case rerr := <-repoErr:
		return rerr
	default:
	}
	if err != nil {
		return fmt.Errorf("problem running manager: %w", err)
	}
	return nil
}
