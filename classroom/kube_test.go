//go:build !unit

package classroom

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

var (
	nodesOnce sync.Once
	nodesErr  error
)

// schedulableNodes starts the lab's simulated side once for the package:
// its kubelets register Nodes, its CCM initializes them (so the scheduler
// places Pods on them) and they report bound Pods Running and Ready,
// without running containers.
func schedulableNodes(t *testing.T) {
	t.Helper()
	cptest.Need(t)
	nodesOnce.Do(func() {
		p, _ := profile.Get("aws")
		_, nodesErr = apptest.Start(env, sim.Config{Profile: p, Nodes: 1, Controllers: p.DefaultOn})
	})
	if nodesErr != nil {
		t.Fatal(nodesErr)
	}
}

// TestKubeClass runs a class of two on the kubernetes backend against the
// test control plane: every object created with the class's labels and
// hardened, the Pods Running, a restarted portal keeping tokens and
// objects, and classroom delete removing everything, the namespace too.
func TestKubeClass(t *testing.T) {
	schedulableNodes(t)
	ctx := env.Ctx
	const ns = "class-k8s"
	students := []string{"alice", "bob"}
	newClass := func(dataDir string) *Classroom {
		t.Helper()
		c, err := New(Config{
			Students: students, DataDir: dataDir, Backend: BackendKubernetes,
			Lab:  LabOptions{Nodes: 1},
			Kube: KubeOptions{RestConfig: env.Config, Namespace: ns, Image: "ccmlab:test", Storage: StorageEmptyDir},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	run := func(c *Classroom) (stop func()) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return cptest.Start(t, func(ctx context.Context) error { return c.Run(ctx, ln) })
	}
	c := newClass(t.TempDir())
	stop := run(c)
	defer stop()
	cl := env.Client

	eventually(t, 2*time.Minute, "every lab's Pod Running and the portal calling it ready", func() (bool, string) {
		for _, s := range students {
			pods, err := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelPartOf + "=ccmlab-classroom," + LabelStudent + "=" + s})
			if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
				return false, fmt.Sprintf("%s's Pods: %v %d", s, err, len(pods.Items))
			}
			if state, addr := c.backend.Status(s); state != stateReady || addr != ObjectName(s)+"."+ns+".svc:80" {
				return false, s + " is " + state + " at " + addr
			}
		}
		return true, ""
	})

	namespace, err := cl.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || namespace.Labels[LabelManagedBy] != "ccmlab-classroom" {
		t.Fatalf("the namespace the class created: %v %v", err, namespace.GetLabels())
	}
	uids := map[string]string{}
	for _, s := range students {
		name := ObjectName(s)
		want := map[string]string{LabelPartOf: "ccmlab-classroom", LabelStudent: s}
		hasLabels := func(kind string, l map[string]string) {
			t.Helper()
			for k, v := range want {
				if l[k] != v {
					t.Errorf("%s %s: label %s=%q, want %q (labels %v)", kind, name, k, l[k], v, l)
				}
			}
		}
		sec, err := cl.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hasLabels("Secret", sec.Labels)
		if string(sec.Data["token"]) != c.StudentToken(s) {
			t.Errorf("%s's Secret does not hold their token", s)
		}
		svc, err := cl.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hasLabels("Service", svc.Labels)
		dep, err := cl.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hasLabels("Deployment", dep.Labels)
		hasLabels("Pod template", dep.Spec.Template.Labels)
		uids[s] = string(dep.UID)
		checkHardened(t, dep)
		if v := dep.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].EmptyDir == nil {
			t.Errorf("%s: volumes %+v, want one emptyDir (--storage emptydir)", name, v)
		}
		if _, err := cl.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a PVC with --storage emptydir: %v", name, err)
		}
	}

	t.Run("a restarted portal keeps tokens and objects", func(t *testing.T) {
		stop()
		// A portal whose data dir is gone (a Pod restarted with an
		// emptyDir) reads the tokens back from the cluster.
		c2 := newClass(t.TempDir())
		for _, s := range students {
			if c2.StudentToken(s) != c.StudentToken(s) {
				t.Errorf("%s's token changed across a restart", s)
			}
		}
		if c2.InstructorToken() != c.InstructorToken() {
			t.Error("the generated instructor token changed across a restart")
		}
		stop2 := run(c2)
		defer stop2()
		eventually(t, time.Minute, "the labs ready again", func() (bool, string) {
			for _, s := range students {
				if state, _ := c2.backend.Status(s); state != stateReady {
					return false, s + " is " + state
				}
			}
			return true, ""
		})
		for _, s := range students {
			dep, err := cl.AppsV1().Deployments(ns).Get(ctx, ObjectName(s), metav1.GetOptions{})
			if err != nil || string(dep.UID) != uids[s] || dep.Generation != 1 {
				t.Errorf("%s's Deployment was replaced or changed: %v uid %s generation %d", s, err, dep.UID, dep.Generation)
			}
		}
		stop2()
	})

	t.Run("classroom delete removes everything it created", func(t *testing.T) {
		var out bytes.Buffer
		if err := DeleteClass(ctx, KubeOptions{RestConfig: env.Config, Namespace: ns}, &out, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, s := range students {
			for _, kind := range []string{"deployment", "service", "secret"} {
				if line := "removed " + kind + "/" + ObjectName(s) + "\n"; !strings.Contains(out.String(), line) {
					t.Errorf("the output lacks %q:\n%s", line, out.String())
				}
			}
		}
		for _, line := range []string{"removed secret/" + instructorSecret + "\n", "removed namespace/" + ns} {
			if !strings.Contains(out.String(), line) {
				t.Errorf("the output lacks %q:\n%s", line, out.String())
			}
		}
		assertClassGone(t, ns)
		eventually(t, 2*time.Minute, "the namespace is gone", func() (bool, string) {
			_, err := cl.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

func checkHardened(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	spec := dep.Spec.Template.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.FSGroup == nil || psc.SeccompProfile == nil {
		t.Errorf("%s: pod securityContext %+v", dep.Name, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: the lab gets an API token it does not need", dep.Name)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", dep.Name, len(spec.Containers))
	}
	sc := spec.Containers[0].SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("%s: container securityContext %+v", dep.Name, sc)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("%s: want one replica, Recreate (etcd owns the volume)", dep.Name)
	}
	if spec.Containers[0].ReadinessProbe == nil || spec.Containers[0].Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: no readiness probe or memory limit", dep.Name)
	}
}

// assertClassGone checks that nothing labelled by the class is left in ns.
func assertClassGone(t *testing.T, ns string) {
	t.Helper()
	ctx, cl := env.Ctx, env.Client
	sel := metav1.ListOptions{LabelSelector: classSelector()}
	eventually(t, 2*time.Minute, "nothing of the class left", func() (bool, string) {
		deps, err1 := cl.AppsV1().Deployments(ns).List(ctx, sel)
		svcs, err2 := cl.CoreV1().Services(ns).List(ctx, sel)
		secs, err3 := cl.CoreV1().Secrets(ns).List(ctx, sel)
		pvcs, err4 := cl.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
		pods, err5 := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelStudent})
		rs, err6 := cl.AppsV1().ReplicaSets(ns).List(ctx, sel)
		for _, err := range []error{err1, err2, err3, err4, err5, err6} {
			if err != nil {
				return false, err.Error()
			}
		}
		n := len(deps.Items) + len(svcs.Items) + len(secs.Items) + len(pvcs.Items) + len(pods.Items) + len(rs.Items)
		return n == 0, fmt.Sprintf("%d deployments, %d services, %d secrets, %d pvcs, %d pods, %d replicasets",
			len(deps.Items), len(svcs.Items), len(secs.Items), len(pvcs.Items), len(pods.Items), len(rs.Items))
	})
}

// TestKubePortalManifest applies deploy/classroom.yaml and runs the
// backend as the portal's ServiceAccount: its Role is enough to create a
// class (with PVCs, the default storage) and follow its Pods, and
// classroom delete leaves the portal's own objects alone.
func TestKubePortalManifest(t *testing.T) {
	schedulableNodes(t)
	ctx, cl := env.Ctx, env.Client
	b, err := os.ReadFile(filepath.Join("..", "deploy", "classroom.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ns, sa string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("deploy/classroom.yaml: %v in\n%s", err, doc)
		}
		if err := create(ctx, obj); err != nil {
			t.Fatalf("applying %T: %v", obj, err)
		}
		if a, ok := obj.(*corev1.ServiceAccount); ok {
			ns, sa = a.Namespace, a.Name
		}
	}
	if sa == "" {
		t.Fatal("deploy/classroom.yaml has no ServiceAccount")
	}
	asPortal := rest.CopyConfig(env.Config)
	asPortal.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}

	c, err := New(Config{
		Students: []string{"carol"}, DataDir: t.TempDir(), Backend: BackendKubernetes, Token: "instructor-token",
		Kube: KubeOptions{RestConfig: asPortal, Namespace: ns, Image: "ccmlab:test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.cfg.Out = &out
	stop := cptest.Start(t, func(ctx context.Context) error { return c.Run(ctx, ln) })
	defer stop()
	name := ObjectName("carol")
	eventually(t, time.Minute, "carol's objects, her PVC among them", func() (bool, string) {
		pvc, err := cl.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = cl.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Labels[LabelStudent] == "carol", fmt.Sprint(err)
	})
	// Nothing provisions the PVC here, so carol's Pod waits; the portal
	// (following Pods with its Role) says so.
	eventually(t, time.Minute, "carol's lab starting", func() (bool, string) {
		state, _ := c.backend.Status("carol")
		return state == stateStarting, state
	})
	stop()
	if !strings.Contains(out.String(), "ccmlab classroom is ready") {
		t.Errorf("the portal did not start as its ServiceAccount:\n%s", out.String())
	}

	var del bytes.Buffer
	if err := DeleteClass(ctx, KubeOptions{RestConfig: env.Config, Namespace: ns}, &del, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(del.String(), "removed persistentvolumeclaim/"+name+"\n") || strings.Contains(del.String(), "namespace/") {
		t.Errorf("delete said:\n%s", del.String())
	}
	assertClassGone(t, ns)
	if _, err := cl.AppsV1().Deployments(ns).Get(ctx, "ccmlab-classroom-portal", metav1.GetOptions{}); err != nil {
		t.Errorf("classroom delete took the portal's own Deployment: %v", err)
	}
	if _, err := cl.CoreV1().Secrets(ns).Get(ctx, "ccmlab-classroom-portal", metav1.GetOptions{}); err != nil {
		t.Errorf("classroom delete took the portal's own Secret: %v", err)
	}
}

// create creates one object of deploy/classroom.yaml.
func create(ctx context.Context, obj runtime.Object) error {
	cl, o := env.Client, metav1.CreateOptions{}
	var err error
	switch x := obj.(type) {
	case *corev1.Namespace:
		_, err = cl.CoreV1().Namespaces().Create(ctx, x, o)
	case *corev1.ServiceAccount:
		_, err = cl.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, o)
	case *corev1.Secret:
		_, err = cl.CoreV1().Secrets(x.Namespace).Create(ctx, x, o)
	case *corev1.Service:
		_, err = cl.CoreV1().Services(x.Namespace).Create(ctx, x, o)
	case *rbacv1.Role:
		_, err = cl.RbacV1().Roles(x.Namespace).Create(ctx, x, o)
	case *rbacv1.RoleBinding:
		_, err = cl.RbacV1().RoleBindings(x.Namespace).Create(ctx, x, o)
	case *appsv1.Deployment:
		_, err = cl.AppsV1().Deployments(x.Namespace).Create(ctx, x, o)
	default:
		return fmt.Errorf("the test does not create a %T", obj)
	}
	return err
}
