//go:build !unit

package controlplane_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// acceptCounter is a port of "another lab" on 127.0.0.1: it counts every
// connection that reaches it.
type acceptCounter struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func listenCounting(t *testing.T) *acceptCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &acceptCounter{ln: ln}
	a.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.accepted.Add(1)
			c.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); a.wg.Wait() })
	return a
}

// Every address a student can write into the apiserver (a CRD's conversion
// webhook, an admission webhook by URL or by Service, an APIService) that
// is not the lab's own is refused by the lab's dialer, with an error that
// says so in the failing request, and no connection reaches the port of
// "another lab". The count is read after the failing request returned.
func TestNothingLeavesLoopback(t *testing.T) {
	cptest.Need(t)
	other := listenCounting(t)
	port := other.ln.Addr().(*net.TCPAddr).Port
	noConnection := func(t *testing.T) {
		t.Helper()
		if n := other.accepted.Load(); n != 0 {
			t.Fatalf("%d connections reached 127.0.0.1:%d", n, port)
		}
	}
	for i, target := range []struct {
		name string
		host string
		port int
	}{
		{"another port on 127.0.0.1", "127.0.0.1", port},
		{"a host name", "localhost", port}, // resolved, it would reach the counter
		{"the metadata service", "169.254.169.254", 80},
	} {
		addr := net.JoinHostPort(target.host, strconv.Itoa(target.port))
		refused := "dial refused by the lab: " + addr + " is not an address of this lab"
		t.Run(target.name, func(t *testing.T) {
			t.Run("CRD conversion webhook", func(t *testing.T) {
				msg := conversionWebhookError(t, i, "https://"+addr+"/convert")
				for _, want := range []string{"conversion webhook for", refused} {
					if !strings.Contains(msg, want) {
						t.Errorf("creating a custom resource failed with %q, want it to say %q", msg, want)
					}
				}
				noConnection(t)
			})
			for _, tc := range []struct {
				name     string
				mutating bool
				client   admissionregistrationv1.WebhookClientConfig
			}{
				{"validating webhook by URL", false, admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + "/validate")}},
				{"mutating webhook by URL", true, admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + "/mutate")}},
				{"validating webhook by Service", false, admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
					Namespace: "default", Name: externalName(t, fmt.Sprintf("vwh-%d", i), target.host), Port: ptr.To(int32(target.port)),
				}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					msg := admissionWebhookError(t, fmt.Sprintf("%d-%s", i, strings.ReplaceAll(tc.name, " ", "-")), tc.mutating, tc.client)
					if !strings.Contains(msg, refused) {
						t.Errorf("creating a ConfigMap failed with %q, want it to say %q", msg, refused)
					}
					noConnection(t)
				})
			}
			t.Run("APIService", func(t *testing.T) {
				svc := externalName(t, fmt.Sprintf("apisvc-%d", i), target.host)
				msg := apiServiceError(t, fmt.Sprintf("api%d.ccmlab.test", i), svc, int32(target.port))
				if !strings.Contains(msg, refused) {
					t.Errorf("the APIService's availability says %q, want it to say %q", msg, refused)
				}
				noConnection(t)
			})
		})
	}
	noConnection(t)
}

// externalName creates a Service of type ExternalName pointing at host: what
// a Service-referenced webhook or an APIService resolves to.
func externalName(t *testing.T, name, host string) string {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: host},
	}
	if _, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// conversionWebhookError creates a CRD with versions v1 (stored) and v2
// converted by a webhook at url, creates a v2 object and returns the error
// it failed with.
func conversionWebhookError(t *testing.T, i int, url string) string {
	t.Helper()
	ctx := context.Background()
	group := fmt.Sprintf("conv%d.ccmlab.test", i)
	openAPI := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr.To(true),
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: openAPI},
				{Name: "v2", Served: true, Schema: openAPI},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "widgets"}).Namespace("default")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v2", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
	}}
	var msg string
	// Until the CRD is established its resource is not served (404).
	testutil.EventuallyCtx(t, time.Minute, "the v2 create to be refused", func(ctx context.Context) (bool, error) {
		_, err := widgets.Create(ctx, obj, metav1.CreateOptions{})
		switch {
		case err == nil:
			t.Fatal("a v2 Widget was created: its conversion webhook was answered")
		case apierrors.IsNotFound(err):
			return false, err
		}
		msg = err.Error()
		return true, nil
	})
	return msg
}

// admissionWebhookError registers a webhook on ConfigMaps carrying a label
// of its own, creates such a ConfigMap (dry run: the webhook is called, nothing
// is stored) until the webhook is in force, and returns the error.
func admissionWebhookError(t *testing.T, name string, mutating bool, client admissionregistrationv1.WebhookClientConfig) string {
	t.Helper()
	ctx := context.Background()
	name = strings.ToLower(name)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"ccmlab.test/webhook": name}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	regs := env.Client.AdmissionregistrationV1()
	if mutating {
		wh := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "mutate.ccmlab.test", ClientConfig: client, Rules: rules, ObjectSelector: selector,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To(int32(5)),
			}},
		}
		if _, err := regs.MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = regs.MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	} else {
		wh := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "validate.ccmlab.test", ClientConfig: client, Rules: rules, ObjectSelector: selector,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To(int32(5)),
			}},
		}
		if _, err := regs.ValidatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = regs.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: selector.MatchLabels}}
	var msg string
	// The apiserver picks the configuration up from its informer.
	testutil.EventuallyCtx(t, time.Minute, "the webhook to be called", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, fmt.Errorf("the ConfigMap was admitted")
		}
		msg = err.Error()
		return true, nil
	})
	if !strings.Contains(msg, "failed calling webhook") {
		t.Errorf("creating a ConfigMap failed with %q, not by its webhook", msg)
	}
	return msg
}

// apiServiceError registers group/v1alpha1 as served by service and
// returns what its Available condition says once the aggregator has tried
// it; a request to the group must fail too.
func apiServiceError(t *testing.T, group, service string, port int32) string {
	t.Helper()
	ctx := context.Background()
	agg, err := aggregatorclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apiSvc := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1." + group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: group, Version: "v1alpha1",
			Service:               &apiregistrationv1.ServiceReference{Namespace: "default", Name: service, Port: &port},
			InsecureSkipTLSVerify: true, GroupPriorityMinimum: 1000, VersionPriority: 15,
		},
	}
	if _, err := agg.ApiregistrationV1().APIServices().Create(ctx, apiSvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agg.ApiregistrationV1().APIServices().Delete(context.Background(), apiSvc.Name, metav1.DeleteOptions{})
	})
	var msg string
	testutil.EventuallyCtx(t, time.Minute, "the APIService to be found unavailable", func(ctx context.Context) (bool, error) {
		got, err := agg.ApiregistrationV1().APIServices().Get(ctx, apiSvc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiregistrationv1.Available && c.Status == apiregistrationv1.ConditionFalse && c.Reason == "FailedDiscoveryCheck" {
				msg = c.Message
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	if err := env.Client.Discovery().RESTClient().Get().AbsPath("/apis", group, "v1alpha1").Do(ctx).Error(); err == nil {
		t.Errorf("GET /apis/%s/v1alpha1 succeeded", group)
	}
	return msg
}
