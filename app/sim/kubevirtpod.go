package sim

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/kubernetes/pkg/controller"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/kubevirt"
)

// The management cluster's nodes and the CCM's Pod. `kubectl --infra logs
// deploy/kubevirt-cloud-controller-manager` works as on a real management
// cluster: kubectl finds a Pod by the Deployment's selector (through its
// ReplicaSet, as the Deployment controller names them), the management
// apiserver asks the kubelet of the Pod's node for the container's log,
// and that kubelet answers with the CCM's own log lines. The lab plays the
// parts the management side has no process for: it keeps one Node per zone
// (infra-<zone>, where the VMIs of that zone run), the CCM Deployment's
// ReplicaSet and Pod on the first one (runInfraCCM, kubevirt.go), and that
// node's kubelet API, serving the one log it has: the CCM's (the
// CCM's klog lines, podlog.StaticKey(controlplane.ComponentCCM), which no
// tenant Pod shows in this profile).

const (
	// infraNodeNet is the management nodes' network: node i of the zones
	// has 192.168.100.(11+i), outside every range of the tenant (VPC
	// 10.0.0.0/16, Services 10.96.0.0/12) and of the management Services
	// (10.112.0.0/16).
	infraNodeNet = "192.168.100."
	// infraPodNet is the management cluster's Pod network: the CCM's Pod
	// on node i has 10.128.i.10.
	infraPodNet = "10.128."
	// infraKubeletPort is the management kubelets' port, the kubelet's
	// default (--port 10250).
	infraKubeletPort = 10250
)

// infraNode is one node of the management cluster.
type infraNode struct{ name, ip string }

// infraNodes are the management cluster's nodes, one per zone.
func (s *Sim) infraNodes() []infraNode {
	var out []infraNode
	for i, z := range s.Cloud.Config().Zones {
		out = append(out, infraNode{name: kubevirt.InfraNodeName(z), ip: infraNodeNet + strconv.Itoa(11+i)})
	}
	return out
}

// ensureInfraNodes creates the management nodes that do not exist, Ready,
// with their kubelet's port, as their kubelets would register them.
func (s *Sim) ensureInfraNodes(ctx context.Context, c kubernetes.Interface) error {
	now := metav1.Now()
	for _, n := range s.infraNodes() {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
			v1.LabelHostname: n.name, v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64",
		}}}
		got, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: "kubelet"})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return err
		}
		got.Status = v1.NodeStatus{
			Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: n.ip}, {Type: v1.NodeHostName, Address: n.name}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: infraKubeletPort}},
			Conditions:      []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
			NodeInfo:        v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"},
		}
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
			return err
		}
	}
	return nil
}

// ensureCCMPod plays the Deployment controller and a kubelet for d: one
// ReplicaSet <deployment>-<pod-template-hash> (the hash as the Deployment
// controller computes it, k8s.io/kubernetes v1.37.2
// pkg/controller/controller_utils.go:1395 ComputeHash), older ones and
// their Pods gone, and one Running Pod of it on the first management node.
// It returns the Pod's name: the CCM's hostname, which its leader election
// writes into the Lease's holder (cloud-provider app/controllermanager.go:236).
func (s *Sim) ensureCCMPod(ctx context.Context, c kubernetes.Interface, d *appsv1.Deployment) (string, error) {
	hash := controller.ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	rsName := d.Name + "-" + hash
	if err := s.deleteOldCCMPods(ctx, c, d, hash); err != nil {
		return "", err
	}
	podLabels := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}
	for k, v := range d.Spec.Template.Labels {
		podLabels[k] = v
	}
	tmpl := *d.Spec.Template.DeepCopy()
	tmpl.Labels = podLabels
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: d.Namespace, Labels: podLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: podLabels}, Template: tmpl},
	}
	got, err := c.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if apierrors.IsAlreadyExists(err) {
		got, err = c.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rsName, metav1.GetOptions{})
	}
	if err != nil {
		return "", err
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
		// Back to an earlier template: its ReplicaSet scales up again.
		got.Spec.Replicas = new(int32(1))
		if got, err = c.AppsV1().ReplicaSets(d.Namespace).Update(ctx, got, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			return "", err
		}
	}
	if got.Status.ReadyReplicas != 1 || got.Status.ObservedGeneration != got.Generation {
		got.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: got.Generation}
		if _, err := c.AppsV1().ReplicaSets(d.Namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil && !apierrors.IsConflict(err) {
			return "", err
		}
	}
	pods, err := c.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(podLabels).String()})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == v1.PodRunning {
			return p.Name, nil
		}
	}
	nodes := s.infraNodes()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: rsName + "-", Namespace: d.Namespace, Labels: podLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(got, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = nodes[0].name
	p, err := c.CoreV1().Pods(d.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		return "", err
	}
	now := metav1.Now()
	p.Status = v1.PodStatus{
		Phase: v1.PodRunning, HostIP: nodes[0].ip, PodIP: infraPodNet + "0.10", StartTime: &now,
		HostIPs: []v1.HostIP{{IP: nodes[0].ip}}, PodIPs: []v1.PodIP{{IP: infraPodNet + "0.10"}},
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: now},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: now},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now},
		},
		QOSClass: v1.PodQOSBestEffort,
	}
	for _, ct := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: ct.Name, Image: ct.Image, ImageID: ct.Image, Ready: true, Started: new(true),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if _, err := c.CoreV1().Pods(d.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return "", err
	}
	return p.Name, nil
}

// deleteOldCCMPods scales the Deployment's ReplicaSets but the one of
// hash ("" for all) to zero and deletes their Pods, as a rollout (or a
// scale to zero) ends them; like the Deployment controller it keeps the
// newest old ReplicaSets, as many as spec.revisionHistoryLimit (10 by
// default), and deletes older ones (sync.go cleanupDeployment).
func (s *Sim) deleteOldCCMPods(ctx context.Context, c kubernetes.Interface, d *appsv1.Deployment, hash string) error {
	rss, err := c.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()})
	if err != nil {
		return err
	}
	old := slices.DeleteFunc(rss.Items, func(rs appsv1.ReplicaSet) bool {
		return hash != "" && rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash
	})
	// Newest first.
	slices.SortFunc(old, func(a, b appsv1.ReplicaSet) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	keep := int32(10)
	if d.Spec.RevisionHistoryLimit != nil {
		keep = *d.Spec.RevisionHistoryLimit
	}
	for i, rs := range old {
		// No garbage collector runs on the management side: the Pods go
		// here.
		if err := c.CoreV1().Pods(d.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))},
			metav1.ListOptions{LabelSelector: appsv1.DefaultDeploymentUniqueLabelKey + "=" + rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if hash != "" && int32(i) >= keep {
			if err := c.AppsV1().ReplicaSets(d.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas == 0 && rs.Status.Replicas == 0 {
			continue
		}
		rs.Spec.Replicas = new(int32(0))
		up, err := c.AppsV1().ReplicaSets(d.Namespace).Update(ctx, &rs, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue
			}
			return err
		}
		up.Status = appsv1.ReplicaSetStatus{ObservedGeneration: up.Generation}
		if _, err := c.AppsV1().ReplicaSets(d.Namespace).UpdateStatus(ctx, up, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// infraKubelet is the kubelet API of the management nodes: the apiserver
// reaches it through the egress proxy (DialCluster at a node's
// InternalIP:10250) with its kubelet client certificate, and it serves
// the containerLogs of the CCM's Pod. Like the tenant's kubelets
// (lab/kubelet server.go) it shows a certificate from the lab's CA for the
// nodes' names and IPs and answers only clients with one from that CA.
type infraKubelet struct {
	s     *Sim
	ln    net.Listener
	srv   *http.Server
	nodes []infraNode
	infra kubernetes.Interface
}

// newInfraKubelet listens on loopback; nil when the lab keeps no logs or
// has no CA (no kubectl logs anywhere, then).
func newInfraKubelet(s *Sim) (*infraKubelet, error) {
	if s.Logs == nil || len(s.cfg.CACertPEM) == 0 {
		return nil, nil
	}
	c, err := kubernetes.NewForConfig(s.cfg.Infra)
	if err != nil {
		return nil, err
	}
	k := &infraKubelet{s: s, nodes: s.infraNodes(), infra: c}
	cert, pool, err := k.serving()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the management kubelets' API: %w", err)
	}
	k.ln = tls.NewListener(ln, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.containerLogs)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	k.srv, err = httpguard.NewServer(httpguard.ServerConfig{
		Handler: mux,
		// `kubectl logs -f` writes for as long as kubectl reads (as the
		// tenant's kubelets, lab/kubelet server.go).
		Timeouts: httpguard.Timeouts{WriteTimeout: httpguard.Never},
		ErrorLog: slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	})
	if err != nil {
		k.ln.Close()
		return nil, err
	}
	return k, nil
}

// serving signs the nodes' serving certificate with the lab's CA.
func (k *infraKubelet) serving() (*tls.Certificate, *x509.CertPool, error) {
	certs, err := certutil.ParseCertsPEM(k.s.cfg.CACertPEM)
	if err != nil || len(certs) == 0 {
		return nil, nil, fmt.Errorf("the management kubelets: CA certificate: %v", err)
	}
	anyKey, err := keyutil.ParsePrivateKeyPEM(k.s.cfg.CAKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("the management kubelets: CA key: %w", err)
	}
	caKey, ok := anyKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the management kubelets: the CA key cannot sign")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + k.nodes[0].name, Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range k.nodes {
		tmpl.DNSNames = append(tmpl.DNSNames, n.name)
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(n.ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, certs[0], key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(certs[0])
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool, nil
}

// run serves until ctx ends.
func (k *infraKubelet) run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := k.srv.Shutdown(sctx); err != nil {
			_ = k.srv.Close()
		}
	}()
	if err := k.srv.Serve(k.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// dialer puts the management nodes' kubelet port in front of next (the
// tenant's cluster network).
func (k *infraKubelet) dialer(next func(context.Context, string) (net.Conn, error)) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return next(ctx, addr)
		}
		for _, n := range k.nodes {
			if n.ip != host {
				continue
			}
			if port != strconv.Itoa(infraKubeletPort) {
				return nil, fmt.Errorf("dial %s: connection refused (only the kubelet port %d is served)", addr, infraKubeletPort)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", k.ln.Addr().String())
		}
		return next(ctx, addr)
	}
}

// containerLogs serves the CCM's log for its Pod on the management side.
func (k *infraKubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod, err := k.infra.CoreV1().Pods(ns).Get(r.Context(), name, metav1.GetOptions{})
	if err != nil || pod.Labels["app"] != InfraCCMName {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", ns, name), http.StatusNotFound)
		return
	}
	if container != InfraCCMName {
		http.Error(w, fmt.Sprintf("container %s is not valid for pod %s", container, name), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	if q.Get("previous") == "true" {
		// The CCM's lines of every process are one log (the tenant's CCM
		// Pod keeps them the same way).
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
		return
	}
	o, err := podlog.ParseQuery(q, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	_ = k.s.Logs.Read(r.Context(), podlog.StaticKey(controlplane.ComponentCCM), o, w, flush)
}
