package lbc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Names the controller works with.
const (
	// LoadBalancerClass selects the Services this controller owns.
	LoadBalancerClass = ccmnames.LBCClass
	// Finalizer keeps a Service until its load balancer is deleted.
	Finalizer = ccmnames.LBCFinalizer
	// Caller is how cloud calls made by this controller are logged.
	Caller = ccmnames.LBCCaller
	// Component is the source of its events. The "ccmlab-" prefix marks
	// them as the lab's imitation, not the real controller's.
	Component = "ccmlab-load-balancer-controller"
)

// Annotations the real controller reads, with the values this one follows.
const (
	// AnnotationType "external" (or the older "nlb-ip") hands a Service
	// without a class to this controller; cloud-provider-aws's Service
	// controller then leaves it alone (ImplementedElsewhere).
	AnnotationType = ccmnames.AnnotationLBType
	// AnnotationTargetType is "instance" (the default) or "ip".
	AnnotationTargetType = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
	// AnnotationScheme is "internal" or "internet-facing" (the lab's
	// default).
	AnnotationScheme = "service.beta.kubernetes.io/aws-load-balancer-scheme"
)

// IsExternal reports whether the annotations hand a Service to the load
// balancer controller (aws-load-balancer-type external or nlb-ip).
func IsExternal(annotations map[string]string) bool { return ccmnames.LBCExternal(annotations) }

// TargetType is the target type a Service asks for: ip with
// nlb-target-type ip (or type nlb-ip), instance otherwise, which is the
// real controller's default.
func TargetType(svc *v1.Service) cloud.TargetType {
	if svc.Annotations[AnnotationTargetType] == "ip" || svc.Annotations[AnnotationType] == "nlb-ip" {
		return cloud.TargetTypeIP
	}
	return cloud.TargetTypeInstance
}

// Event reasons, as the real controller names them.
const (
	ReasonReconciled         = "SuccessfullyReconciled"
	ReasonFailedDeploy       = "FailedDeployModel"
	ReasonFailedBuild        = "FailedBuildModel"
	ReasonFailedAddFinalizer = "FailedAddFinalizer"
	ReasonFailedCleanup      = "FailedCleanup"
)

// Config is what the controller needs.
type Config struct {
	Client kubernetes.Interface
	// AWS is where the lab's AWS API is: the controller talks ELBv2 (and
	// EC2, for subnets and the nodes' security group) to it through
	// aws-sdk-go-v2, as the real controller does.
	AWS AWS
	// ClusterName is the elbv2.k8s.aws/cluster tag on what it creates.
	ClusterName string
	Workers     int           // default 2
	Resync      time.Duration // how often every owned Service is re-checked; default 60s
	Logger      *slog.Logger  // default: discard
}

// Controller reconciles Services of class service.k8s.aws/nlb.
type Controller struct {
	cfg      Config
	log      *slog.Logger
	elb      *elbv2.Client
	ec2      *ec2.Client
	http     *http.Client // the SDK clients' transport
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// recorder is set by Run before any worker starts.
	recorder record.EventRecorder
}

// New registers the controller's handlers on factory's Service and
// EndpointSlice informers; the caller starts the factory.
func New(cfg Config, factory informers.SharedInformerFactory) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("lbc: a Client is required")
	}
	if cfg.ClusterName == "" {
		return nil, errors.New("lbc: a ClusterName is required")
	}
	if err := cfg.AWS.validate(); err != nil {
		return nil, fmt.Errorf("lbc: %w", err)
	}
	cfg.Workers = cmp.Or(cfg.Workers, 2)
	cfg.Resync = cmp.Or(cfg.Resync, time.Minute)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	svcInf := factory.Core().V1().Services()
	esInf := factory.Discovery().V1().EndpointSlices()
	nodeInf := factory.Core().V1().Nodes()
	elbClient, ec2Client, httpClient := cfg.AWS.clients()
	c := &Controller{
		cfg:      cfg,
		log:      cfg.Logger.With("controller", "lbc"),
		elb:      elbClient,
		ec2:      ec2Client,
		http:     httpClient,
		services: svcInf.Lister(),
		slices:   esInf.Lister(),
		nodes:    nodeInf.Lister(),
		synced:   []cache.InformerSynced{svcInf.Informer().HasSynced, esInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](200*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "lbc"},
		),
	}
	_, err := svcInf.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueService(obj, nil) },
		UpdateFunc: func(old, cur any) {
			c.enqueueService(cur, old)
		},
		DeleteFunc: func(obj any) { c.enqueueService(obj, nil) },
	}, cfg.Resync)
	if err != nil {
		return nil, err
	}
	_, err = esInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueSlice,
		UpdateFunc: func(old, cur any) {
			// The informer's resync re-delivers unchanged slices every few
			// seconds; the Service's own resync already re-checks the
			// cloud, and each check is several calls in the call log.
			o, ok1 := old.(*discoveryv1.EndpointSlice)
			n, ok2 := cur.(*discoveryv1.EndpointSlice)
			if ok1 && ok2 && o.ResourceVersion == n.ResourceVersion {
				return
			}
			c.enqueueSlice(cur)
		},
		DeleteFunc: c.enqueueSlice,
	})
	if err != nil {
		return nil, err
	}
	// Instance targets follow the nodes.
	_, err = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueueInstanceServices() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := cur.(*v1.Node)
			if ok1 && ok2 && (o.Spec.ProviderID != n.Spec.ProviderID || o.Labels[v1.LabelNodeExcludeBalancers] != n.Labels[v1.LabelNodeExcludeBalancers]) {
				c.enqueueInstanceServices()
			}
		},
		DeleteFunc: func(any) { c.enqueueInstanceServices() },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueInstanceServices() {
	list, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range list {
		if isNLB(svc) && TargetType(svc) == cloud.TargetTypeInstance {
			c.queue.Add(cache.MetaObjectToName(svc))
		}
	}
}

// owned reports whether this controller is (or was) responsible for svc.
func owned(svc *v1.Service) bool {
	return isNLB(svc) || slices.Contains(svc.Finalizers, Finalizer)
}

// isNLB: a LoadBalancer Service of this controller's class, or without a
// class and annotated aws-load-balancer-type external.
func isNLB(svc *v1.Service) bool {
	if svc.Spec.Type != v1.ServiceTypeLoadBalancer {
		return false
	}
	if svc.Spec.LoadBalancerClass == nil {
		return IsExternal(svc.Annotations)
	}
	return *svc.Spec.LoadBalancerClass == LoadBalancerClass
}

func (c *Controller) enqueueService(obj, old any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	svc, ok := obj.(*v1.Service)
	if !ok {
		return
	}
	oldSvc, _ := old.(*v1.Service)
	if owned(svc) || (oldSvc != nil && owned(oldSvc)) {
		c.queue.Add(cache.MetaObjectToName(svc))
	}
}

func (c *Controller) enqueueSlice(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	if svc, err := c.services.Services(es.Namespace).Get(name); err == nil && owned(svc) {
		c.queue.Add(cache.NewObjectName(es.Namespace, name))
	}
}

// Run records events, waits for the caches and runs the workers until ctx
// ends. It returns only after every worker has returned, so no cloud call
// or API request of this controller is in flight afterwards.
func (c *Controller) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component})

	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	c.log.Info("started", "workers", c.cfg.Workers)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	// Keep-alive connections to the AWS API would outlive the instance.
	c.http.CloseIdleConnections()
	c.log.Info("stopped")
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			c.log.Info("reconcile failed, will retry", "service", key.String(), "err", err)
			c.queue.AddRateLimited(key)
		}
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) event(svc *v1.Service, typ, reason, format string, args ...any) {
	c.recorder.Eventf(svc, typ, reason, format, args...)
}

func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	ns, name := key.Namespace, key.Name
	cached, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // gone; the finalizer guarantees we cleaned up first
	}
	if err != nil {
		return err
	}
	svc := cached.DeepCopy()
	hasFinalizer := slices.Contains(svc.Finalizers, Finalizer)
	if !isNLB(svc) || svc.DeletionTimestamp != nil {
		if hasFinalizer {
			return c.cleanup(ctx, svc)
		}
		return nil
	}
	if !hasFinalizer {
		// A patch, as upstream's Service controller adds its own
		// finalizer: no conflict with a writer of other fields.
		withFinalizer := svc.DeepCopy()
		withFinalizer.Finalizers = append(withFinalizer.Finalizers, Finalizer)
		updated, err := servicehelper.PatchService(c.cfg.Client.CoreV1(), svc, withFinalizer)
		if err != nil {
			if !apierrors.IsConflict(err) {
				c.event(svc, v1.EventTypeWarning, ReasonFailedAddFinalizer, "Failed add finalizer due to %v", err)
			}
			return err
		}
		svc = updated
	}

	esList, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}))
	if err != nil {
		return err
	}
	var nodes []*v1.Node
	if TargetType(svc) == cloud.TargetTypeInstance {
		if nodes, err = c.nodes.List(labels.Everything()); err != nil {
			return err
		}
	}
	model, err := BuildModel(svc, esList, nodes, c.cfg.ClusterName)
	if err != nil {
		c.event(svc, v1.EventTypeWarning, ReasonFailedBuild, "Failed build model due to %v", err)
		return err
	}
	dns, changed, err := c.deploy(ctx, model, svc)
	if err != nil {
		if ctx.Err() != nil {
			return err // switched off mid-call: not a cloud failure to report
		}
		c.event(svc, v1.EventTypeWarning, ReasonFailedDeploy, "Failed deploy model due to %v", err)
		return err
	}
	// An NLB answers with its DNS name, and the Service's status says so.
	status := []v1.LoadBalancerIngress{{Hostname: dns}}
	if !slices.EqualFunc(svc.Status.LoadBalancer.Ingress, status, ingressEqual) {
		withStatus := svc.DeepCopy()
		withStatus.Status.LoadBalancer.Ingress = status
		if _, err := servicehelper.PatchService(c.cfg.Client.CoreV1(), svc, withStatus); err != nil {
			return fmt.Errorf("writing status: %w", err)
		}
		changed = true
	}
	if changed {
		c.event(svc, v1.EventTypeNormal, ReasonReconciled, "Successfully reconciled")
		c.log.Info("reconciled", "service", key.String(), "loadBalancer", model.Name, "targets", len(model.Targets))
	}
	return nil
}

// cleanup deletes the load balancer and what belongs to it, then lets
// the Service go.
func (c *Controller) cleanup(ctx context.Context, svc *v1.Service) error {
	name := LoadBalancerName(svc)
	if err := c.teardown(ctx, svc); err != nil {
		if ctx.Err() == nil {
			c.event(svc, v1.EventTypeWarning, ReasonFailedCleanup, "Failed cleanup due to %v", err)
		}
		return err
	}
	without := svc.DeepCopy()
	without.Finalizers = slices.DeleteFunc(without.Finalizers, func(f string) bool { return f == Finalizer })
	if _, err := servicehelper.PatchService(c.cfg.Client.CoreV1(), svc, without); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	c.log.Info("deleted", "service", svc.Namespace+"/"+svc.Name, "loadBalancer", name)
	return nil
}

func ingressEqual(a, b v1.LoadBalancerIngress) bool {
	am, bm := "", ""
	if a.IPMode != nil {
		am = string(*a.IPMode)
	}
	if b.IPMode != nil {
		bm = string(*b.IPMode)
	}
	return a.IP == b.IP && a.Hostname == b.Hostname && am == bm
}
