package sim

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/controllers/awslbc"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// The AWS Load Balancer Controller as its Helm chart installs it
// (helm/aws-load-balancer-controller in the controller's module: its
// ServiceAccount, ClusterRole and bindings, leader-election Role, webhook
// Service, TLS Secret, webhook configurations and Deployment), and the
// runtime the lab's kubelets run its container with: the real controller
// (controllers/awslbc) in the lab's process, for as long as the Pod runs.

const (
	// LBCName is the Deployment, ServiceAccount and leader-election name
	// prefix.
	LBCName = ccmnames.LBCName
	// LBCWebhookService is the chart's webhook Service.
	LBCWebhookService = "aws-load-balancer-webhook-service"
	lbcTLSSecret      = "aws-load-balancer-tls"
	lbcWebhookConfig  = "aws-load-balancer-webhook"
	lbcImageRepo      = "ccmlab/aws-load-balancer-controller"
	lbcWebhookPort    = 9443
)

func isLBCContainer(c v1.Container) bool { return strings.HasPrefix(c.Image, lbcImageRepo+":") }

// lbcArgs is the container's command line: the chart's (cluster name,
// region, VPC ID, which the lab knows, so no instance metadata is asked)
// with the add-ons the lab does not serve switched off.
func (s *Sim) lbcArgs() []string {
	cc, n := s.Cloud.Config(), s.Cloud.AWSNetworkInfo()
	return []string{
		"--cluster-name=" + cc.ClusterID,
		"--aws-region=" + cc.Region,
		"--aws-vpc-id=" + n.VPCID,
		"--enable-shield=false",
		"--enable-waf=false",
		"--enable-wafv2=false",
		"--ingress-class=alb",
	}
}

// lbcCert is the webhook's serving certificate and its CA, as the chart
// makes them (genCA, genSignedCert) for the Service's DNS names.
func lbcCert(now time.Time) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aws-load-balancer-controller-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	svc := LBCWebhookService + "." + metav1.NamespaceSystem
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: svc + ".svc"},
		DNSNames:  []string{LBCWebhookService, svc, svc + ".svc", svc + ".svc.cluster.local"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// lbcServiceWebhookName is the chart's Service mutator: it sets the
// controller's loadBalancerClass on every new LoadBalancer Service
// (webhooks/core/service_mutator.go:40-55), so that the controller, not
// the CCM, makes its load balancer.
const lbcServiceWebhookName = "mservice.elbv2.k8s.aws"

// lbcServiceWebhook is that webhook as the chart installs it
// (templates/webhook.yaml:105-145, values.yaml:484-493: on, failure
// fails the create, the controller's own Services left out).
func lbcServiceWebhook(caPEM []byte) admissionv1.MutatingWebhook {
	return admissionv1.MutatingWebhook{
		Name: lbcServiceWebhookName,
		ClientConfig: admissionv1.WebhookClientConfig{CABundle: caPEM, Service: &admissionv1.ServiceReference{
			Namespace: metav1.NamespaceSystem, Name: LBCWebhookService, Path: ptr.To("/mutate-v1-service")}},
		FailurePolicy:           ptr.To(admissionv1.Fail),
		AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionv1.SideEffectClassNone),
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{LBCName}},
		}},
		Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}}}},
	}
}

// SetLBCServiceWebhook switches the controller's Service webhook on or
// off, as `helm upgrade --set enableServiceMutatorWebhook=...` would: the
// entry added to or removed from the chart's MutatingWebhookConfiguration.
// It returns once the apiserver calls the webhook, or no longer does, for
// a new LoadBalancer Service (a dry run), and reports whether anything
// changed. A lab without the lbc add-on has no webhook: nothing to do.
func (s *Sim) SetLBCServiceWebhook(ctx context.Context, on bool) (bool, error) {
	if !s.lbcOn() {
		return false, nil
	}
	select {
	case <-s.lbcApplied:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	mwcs := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		mwc, err := mwcs.Get(ctx, lbcWebhookConfig, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(mwc.Webhooks, func(w admissionv1.MutatingWebhook) bool { return w.Name == lbcServiceWebhookName })
		switch {
		case on && i < 0:
			// The CA the chart's other webhooks trust (the Secret's).
			var ca []byte
			for _, w := range mwc.Webhooks {
				if ca == nil {
					ca = w.ClientConfig.CABundle
				}
			}
			if ca == nil {
				sec, err := s.Client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, lbcTLSSecret, metav1.GetOptions{})
				if err != nil {
					return err
				}
				ca = sec.Data["ca.crt"]
			}
			mwc.Webhooks = append(mwc.Webhooks, lbcServiceWebhook(ca))
		case !on && i >= 0:
			mwc.Webhooks = slices.Delete(mwc.Webhooks, i, i+1)
		default:
			return nil
		}
		changed = true
		_, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{FieldManager: "ccmlab"})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("switching the AWS Load Balancer Controller's Service webhook: %w", err)
	}
	// The apiserver reads webhook configurations from an informer: wait
	// until a new Service meets the webhook as it now is. On means the
	// webhook answers: a call that fails (the controller's Pod not
	// running yet, or restarting) would refuse the student's first
	// Service, so it is waited out too.
	probe := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "ccmlab-webhook-probe-", Namespace: metav1.NamespaceDefault},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80}}},
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := s.Client.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		served := err == nil && got.Spec.LoadBalancerClass != nil
		failing := err != nil && strings.Contains(err.Error(), lbcServiceWebhookName) // called, did not answer
		if err != nil && !failing {
			return changed, fmt.Errorf("checking the AWS Load Balancer Controller's Service webhook: %w", err)
		}
		if on && served || !on && !served && !failing {
			return changed, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			if on && failing {
				return changed, fmt.Errorf("the AWS Load Balancer Controller's Service webhook does not answer: %w (%w)", err, ctx.Err())
			}
			return changed, fmt.Errorf("the apiserver has not taken up the AWS Load Balancer Controller's Service webhook switched %s: %w", map[bool]string{true: "on", false: "off"}[on], ctx.Err())
		}
	}
}

// lbcObjects are the chart's objects for this lab.
func (s *Sim) lbcObjects(caPEM, certPEM, keyPEM []byte) []lbcObject {
	ns := metav1.NamespaceSystem
	labels := map[string]string{"app.kubernetes.io/name": LBCName, "app.kubernetes.io/instance": LBCName}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	rule := func(groups, resources []string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
	}
	core := []string{""}
	elbv2 := []string{"elbv2.k8s.aws"}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: LBCName, Namespace: ns}}
	c, rbac := s.Client, s.Client.RbacV1()
	var out []lbcObject
	add := func(what string, do func(context.Context) error) { out = append(out, lbcObject{what, do}) }

	add("serviceaccount", func(ctx context.Context) error {
		_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: meta(LBCName)}, metav1.CreateOptions{})
		return err
	})
	// The chart's ClusterRole (templates/rbac.yaml), minus the Gateway API
	// and Global Accelerator rules of the controllers the lab leaves off.
	add("clusterrole", func(ctx context.Context) error {
		_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: LBCName + "-role", Labels: labels},
			Rules: []rbacv1.PolicyRule{
				rule(core, []string{"configmaps"}, "create", "delete", "get", "update"),
				rule(core, []string{"endpoints", "namespaces", "nodes", "pods"}, "get", "list", "watch"),
				rule(core, []string{"events"}, "create", "patch"),
				rule(core, []string{"pods/status", "services/status"}, "patch", "update"),
				rule(core, []string{"services"}, "get", "list", "patch", "update", "watch"),
				rule([]string{"discovery.k8s.io"}, []string{"endpointslices"}, "get", "list", "watch"),
				rule(elbv2, []string{"albtargetcontrolconfigs"}, "get"),
				rule(elbv2, []string{"ingressclassparams"}, "get", "list", "watch"),
				rule(elbv2, []string{"targetgroupbindings"}, "create", "delete", "get", "list", "patch", "update", "watch"),
				rule(elbv2, []string{"targetgroupbindings/status"}, "patch", "update"),
				rule([]string{"extensions", "networking.k8s.io"}, []string{"ingresses"}, "get", "list", "patch", "update", "watch"),
				rule([]string{"extensions", "networking.k8s.io"}, []string{"ingresses/status"}, "patch", "update"),
				rule([]string{"networking.k8s.io"}, []string{"ingressclasses"}, "get", "list", "watch"),
				rule(core, []string{"secrets"}, "get", "list", "watch"),
			},
		}, metav1.CreateOptions{})
		return err
	})
	add("clusterrolebinding", func(ctx context.Context) error {
		_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: LBCName + "-rolebinding", Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: LBCName + "-role"},
			Subjects:   subject,
		}, metav1.CreateOptions{})
		return err
	})
	leader := "aws-load-balancer-controller-leader"
	add("role", func(ctx context.Context) error {
		_, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: meta(LBCName + "-leader-election-role"),
			Rules: []rbacv1.PolicyRule{
				rule(core, []string{"configmaps"}, "create"),
				{APIGroups: core, Resources: []string{"configmaps"}, ResourceNames: []string{leader}, Verbs: []string{"get", "patch", "update"}},
				rule([]string{"coordination.k8s.io"}, []string{"leases"}, "create"),
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{leader}, Verbs: []string{"get", "update", "patch"}},
			},
		}, metav1.CreateOptions{})
		return err
	})
	add("rolebinding", func(ctx context.Context) error {
		_, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: meta(LBCName + "-leader-election-rolebinding"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: LBCName + "-leader-election-role"},
			Subjects:   subject,
		}, metav1.CreateOptions{})
		return err
	})
	add("secret", func(ctx context.Context) error {
		_, err := c.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{
			ObjectMeta: meta(lbcTLSSecret), Type: v1.SecretTypeTLS,
			Data: map[string][]byte{"ca.crt": caPEM, v1.TLSCertKey: certPEM, v1.TLSPrivateKeyKey: keyPEM},
		}, metav1.CreateOptions{})
		return err
	})
	add("service", func(ctx context.Context) error {
		m := meta(LBCWebhookService)
		m.Labels = map[string]string{"app.kubernetes.io/name": LBCName, "app.kubernetes.io/instance": LBCName, "app.kubernetes.io/component": "webhook"}
		_, err := c.CoreV1().Services(ns).Create(ctx, &v1.Service{
			ObjectMeta: m,
			Spec: v1.ServiceSpec{
				Ports:    []v1.ServicePort{{Name: "webhook-server", Port: 443, TargetPort: intstr.FromString("webhook-server")}},
				Selector: map[string]string{"app.kubernetes.io/name": LBCName, "app.kubernetes.io/instance": LBCName},
			},
		}, metav1.CreateOptions{})
		return err
	})
	for _, crd := range awslbc.CRDs() {
		add("crd "+crd.Name, func(ctx context.Context) error {
			ac, err := apiextclient.NewForConfig(s.cfg.RestConfig)
			if err != nil {
				return err
			}
			_, err = ac.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd.DeepCopy(), metav1.CreateOptions{})
			return err
		})
	}
	notSelf := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{LBCName}},
	}}
	hook := func(path string) admissionv1.WebhookClientConfig {
		return admissionv1.WebhookClientConfig{CABundle: caPEM, Service: &admissionv1.ServiceReference{Namespace: ns, Name: LBCWebhookService, Path: ptr.To(path)}}
	}
	none := ptr.To(admissionv1.SideEffectClassNone)
	rules := func(group, version, resource string, ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}}
	}
	// The chart's webhooks (templates/webhook.yaml) with its defaults: the
	// Pod readiness-gate injection in namespaces labelled for it (failure
	// ignored), the Service mutator on every new Service (failure fails
	// the create), the TargetGroupBinding mutator and validator.
	add("mutatingwebhookconfiguration", func(ctx context.Context) error {
		_, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: lbcWebhookConfig, Labels: labels},
			Webhooks: []admissionv1.MutatingWebhook{
				{
					Name: "mpod.elbv2.k8s.aws", ClientConfig: hook("/mutate-v1-pod"), FailurePolicy: ptr.To(admissionv1.Ignore),
					AdmissionReviewVersions: []string{"v1"}, SideEffects: none, ObjectSelector: notSelf,
					NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "elbv2.k8s.aws/pod-readiness-gate-inject", Operator: metav1.LabelSelectorOpIn, Values: []string{"enabled"}},
					}},
					Rules: rules("", "v1", "pods", admissionv1.Create),
				},
				lbcServiceWebhook(caPEM),
				{
					Name: "mtargetgroupbinding.elbv2.k8s.aws", ClientConfig: hook("/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding"),
					FailurePolicy: ptr.To(admissionv1.Fail), AdmissionReviewVersions: []string{"v1beta1"}, SideEffects: none,
					Rules: rules("elbv2.k8s.aws", "v1beta1", "targetgroupbindings", admissionv1.Create, admissionv1.Update),
				},
			},
		}, metav1.CreateOptions{})
		return err
	})
	add("validatingwebhookconfiguration", func(ctx context.Context) error {
		_, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: lbcWebhookConfig, Labels: labels},
			Webhooks: []admissionv1.ValidatingWebhook{{
				Name: "vtargetgroupbinding.elbv2.k8s.aws", ClientConfig: hook("/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding"),
				FailurePolicy: ptr.To(admissionv1.Fail), AdmissionReviewVersions: []string{"v1beta1"}, SideEffects: none,
				Rules: rules("elbv2.k8s.aws", "v1beta1", "targetgroupbindings", admissionv1.Create, admissionv1.Update),
			}},
		}, metav1.CreateOptions{})
		return err
	})
	add("deployment", func(ctx context.Context) error {
		_, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: meta(LBCName),
			Spec: appsv1.DeploymentSpec{
				// The chart runs 2 replicas behind leader election; the lab
				// runs 1, one controller process.
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: v1.PodSpec{
						ServiceAccountName: LBCName,
						PriorityClassName:  "system-cluster-critical",
						Containers: []v1.Container{{
							Name:  LBCName,
							Image: lbcImageRepo + ":" + awslbc.ModuleVersion,
							Args:  s.lbcArgs(),
							Ports: []v1.ContainerPort{
								{Name: "webhook-server", ContainerPort: lbcWebhookPort, Protocol: v1.ProtocolTCP},
								{Name: "metrics-server", ContainerPort: 8080, Protocol: v1.ProtocolTCP},
							},
							VolumeMounts: []v1.VolumeMount{{Name: "cert", MountPath: "/tmp/k8s-webhook-server/serving-certs", ReadOnly: true}},
						}},
						Volumes: []v1.Volume{{Name: "cert", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: lbcTLSSecret}}}},
					},
				},
			},
		}, metav1.CreateOptions{})
		return err
	})
	return out
}

type lbcObject struct {
	what string
	do   func(context.Context) error
}

// ensureLBCObjects creates the chart's objects that do not exist; one that
// does (a restart, or a student's edit) is left as it is. The certificate
// is made once: an existing Secret keeps its own, which the webhook
// configurations made with it trust.
func (s *Sim) ensureLBCObjects(ctx context.Context) error {
	ca, cert, key, err := lbcCert(time.Now())
	if err != nil {
		return err
	}
	for _, o := range s.lbcObjects(ca, cert, key) {
		if err := o.do(ctx); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the AWS Load Balancer Controller's %s: %w", o.what, err)
		}
	}
	return nil
}

// runLBCObjects applies the chart's objects once, retrying while the
// apiserver refuses (it may still be bootstrapping).
func (s *Sim) runLBCObjects(ctx context.Context) error {
	for {
		err := s.ensureLBCObjects(ctx)
		if err == nil {
			close(s.lbcApplied)
			return nil
		}
		s.cfg.Logger.Warn("applying the AWS Load Balancer Controller; will retry", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// lbcWebhooks are the webhook listeners of the controller processes that
// run: what the cluster network reaches at the webhook Service's address.
// One is added as a process starts and removed when it has returned.
type lbcWebhooks struct {
	mu      sync.Mutex
	lns     []net.Listener
	changed chan struct{} // closed and replaced on every change
}

func (w *lbcWebhooks) add(ln net.Listener) {
	w.mu.Lock()
	w.lns = append(w.lns, ln)
	w.notifyLocked()
	w.mu.Unlock()
}

func (w *lbcWebhooks) remove(ln net.Listener) {
	w.mu.Lock()
	w.lns = slices.DeleteFunc(w.lns, func(l net.Listener) bool { return l == ln })
	w.notifyLocked()
	w.mu.Unlock()
}

func (w *lbcWebhooks) notifyLocked() {
	if w.changed != nil {
		close(w.changed)
	}
	w.changed = make(chan struct{})
}

// running is how many controller processes run, and a channel closed at
// the next change.
func (w *lbcWebhooks) running() (int, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return len(w.lns), w.changed
}

func (w *lbcWebhooks) addr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lns) == 0 {
		return ""
	}
	return w.lns[len(w.lns)-1].Addr().String()
}

// DialCluster is the control plane's cluster-network dialer: the kubelets
// (Kubelets.DialNode) and, with the lbc add-on, the controller's webhook
// Service (its ClusterIP and port 443) at the listener of the controller
// process that runs. Nothing else, and nothing off loopback.
func (s *Sim) DialCluster(ctx context.Context, addr string) (net.Conn, error) {
	if s.lbcOn() {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && port == "443" {
			svc, gerr := s.Client.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, LBCWebhookService, metav1.GetOptions{})
			if gerr == nil && slices.Contains(svc.Spec.ClusterIPs, host) {
				to := s.lbcHooks.addr()
				if to == "" {
					return nil, fmt.Errorf("dial %s: connection refused (no endpoint of Service %s/%s: the controller's Pod does not run)", addr, metav1.NamespaceSystem, LBCWebhookService)
				}
				var d net.Dialer
				return d.DialContext(ctx, "tcp", to)
			}
		}
	}
	return s.Kubelets.DialNode(ctx, addr)
}

func (s *Sim) lbcOn() bool {
	return s.cfg.ControlPlaneNode && slices.Contains(s.cfg.Addons, controllers.AddonLBC)
}

// switchLBC is the lbc add-on's switch (controllers.Config.AddonSwitch):
// the Deployment scaled to 1 (on) or 0 (off), as an operator would, then a
// wait until the controller's process runs, or none does. The switch's
// state is what followLBC reads back from the Deployment.
func (s *Sim) switchLBC(ctx context.Context, _ string, on bool) error {
	select {
	case <-s.lbcApplied:
	case <-ctx.Done():
		return ctx.Err()
	}
	want := int32(0)
	if on {
		want = 1
	}
	deps := s.Client.AppsV1().Deployments(metav1.NamespaceSystem)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := deps.GetScale(ctx, LBCName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: the Deployment %s/%s is gone, so the AWS Load Balancer Controller cannot run (a restart of the lab installs it again)", controllers.ErrBusy, metav1.NamespaceSystem, LBCName)
		}
		if err != nil || sc.Spec.Replicas == want {
			return err
		}
		sc.Spec.Replicas = want
		_, err = deps.UpdateScale(ctx, LBCName, sc, metav1.UpdateOptions{FieldManager: "ccmlab"})
		return err
	})
	if err != nil {
		return err
	}
	for {
		n, changed := s.lbcHooks.running()
		if on == (n > 0) {
			// What followLBC reads from the Deployment as well, said now
			// so that the switch's answer already shows it.
			s.Manager.SetAddon(controllers.AddonLBC, on)
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: the Pod of Deployment %s/%s has not %s (kubectl -n %[2]s get pods says why)", controllers.ErrBusy, metav1.NamespaceSystem, LBCName, map[bool]string{true: "started", false: "stopped"}[on])
		}
	}
}

// followLBC tells the Manager what the Deployment says of the add-on: on
// while it asks for a replica. A restart on the same data dir, or a
// student's kubectl scale, is then what the switch shows.
func (s *Sim) followLBC(ctx context.Context) error {
	f := informers.NewSharedInformerFactoryWithOptions(s.Client, 0, informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + LBCName }))
	report := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok || d.Name != LBCName {
			return
		}
		s.Manager.SetAddon(controllers.AddonLBC, d.DeletionTimestamp == nil && ptr.Deref(d.Spec.Replicas, 1) > 0)
	}
	if _, err := f.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    report,
		UpdateFunc: func(_, obj any) { report(obj) },
		DeleteFunc: func(any) { s.Manager.SetAddon(controllers.AddonLBC, false) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
	return nil
}

// lbcRuntime runs the controller's container.
type lbcRuntime struct{ s *Sim }

func (r lbcRuntime) Handles(pod *v1.Pod) bool { return isLBCContainer(pod.Spec.Containers[0]) }
func (r lbcRuntime) LogKey(pod *v1.Pod, container string) string {
	return kubelet.LogKey(pod, container)
}

func (r lbcRuntime) Run(ctx context.Context, pod *v1.Pod, c v1.Container) error {
	s := r.s
	key := r.LogKey(pod, c.Name)
	fail := func(err error) error {
		s.Logs.Append(key, time.Now(), "Error: "+err.Error())
		return err
	}
	if err := s.checkLBCPod(ctx, pod); err != nil {
		return fail(err)
	}
	// The Secret volume, as the kubelet mounts it.
	sec, err := s.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, lbcTLSSecret, metav1.GetOptions{})
	if err != nil {
		return fail(fmt.Errorf("mounting Secret %s/%s: %w", pod.Namespace, lbcTLSSecret, err))
	}
	creds, err := s.podCredentials(ctx, pod)
	if err != nil {
		return fail(err)
	}
	kube, err := creds("")
	if err != nil {
		return fail(err)
	}
	endpoint := ""
	if s.cfg.AWSAPI != nil {
		endpoint = s.cfg.AWSAPI()
	}
	if endpoint == "" || s.cfg.AWSKeys == nil {
		return fail(errors.New("the lab's AWS API is not up: the controller has no AWS endpoint"))
	}
	keys, err := s.cfg.AWSKeys.Issue(controllers.Caller(controllers.AddonLBC))
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	s.lbcHooks.add(ln)
	defer s.lbcHooks.remove(ln)
	args := append(slices.Clone(c.Command[min(1, len(c.Command)):]), c.Args...)
	err = awslbc.Run(ctx, awslbc.Config{
		Args: args, Kube: kube, Namespace: pod.Namespace,
		AWSEndpoint: endpoint, AccessKeyID: keys.AccessKeyID, SecretAccessKey: keys.SecretAccessKey,
		HTTPClient: &http.Client{Transport: awslbc.LoopbackTransport()},
		Webhook:    ln, WebhookCert: sec.Data[v1.TLSCertKey], WebhookKey: sec.Data[v1.TLSPrivateKeyKey],
		Log: &lineLog{append: func(line string) { s.Logs.Append(key, time.Now(), line) }},
	})
	if err != nil && ctx.Err() == nil {
		return fail(err)
	}
	return nil
}

// checkLBCPod refuses to run the controller for any Pod but one of the
// Deployment's: the lab runs the controller only as that Deployment.
func (s *Sim) checkLBCPod(ctx context.Context, pod *v1.Pod) error {
	refuse := func(why string) error {
		return fmt.Errorf("ccmlab runs the AWS Load Balancer Controller only as a Pod of Deployment %s/%s; Pod %s/%s %s, so its container runs nothing",
			metav1.NamespaceSystem, LBCName, pod.Namespace, pod.Name, why)
	}
	if !s.lbcOn() {
		return refuse("is in a lab without the lbc add-on (--addons lbc)")
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if pod.Namespace != metav1.NamespaceSystem || ref == nil || ref.Kind != "ReplicaSet" {
		return refuse("is not one of its Pods")
	}
	rs, err := s.Client.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ReplicaSet %s/%s: %w", pod.Namespace, ref.Name, err)
	}
	rsRef := metav1.GetControllerOfNoCopy(rs)
	if rs.UID != ref.UID || rsRef == nil || rsRef.Kind != "Deployment" || rsRef.Name != LBCName {
		return refuse("is not one of its Pods")
	}
	return nil
}

// lineLog turns the controller's writes into log lines.
type lineLog struct {
	mu     sync.Mutex
	buf    []byte
	append func(string)
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.append(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 { // a line without end: cut, bounded
		l.append(string(l.buf))
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

// runtimes is the kubelets' Runtime: the first that handles a Pod runs it.
type runtimes []kubelet.Runtime

func (rs runtimes) pick(pod *v1.Pod) kubelet.Runtime {
	for _, r := range rs {
		if r.Handles(pod) {
			return r
		}
	}
	return nil
}

func (rs runtimes) Handles(pod *v1.Pod) bool { return rs.pick(pod) != nil }

func (rs runtimes) Run(ctx context.Context, pod *v1.Pod, c v1.Container) error {
	return rs.pick(pod).Run(ctx, pod, c)
}

func (rs runtimes) LogKey(pod *v1.Pod, container string) string {
	if r := rs.pick(pod); r != nil {
		return r.LogKey(pod, container)
	}
	return kubelet.LogKey(pod, container)
}
