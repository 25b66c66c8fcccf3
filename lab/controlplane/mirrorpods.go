package controlplane

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The control plane's components show in kube-system the way kubeadm's
// static Pods do: the control-plane node's kubelet (lab/kubelet) creates a
// mirror Pod for each manifest StaticPods returns. Their commands are the
// flags the lab really starts each component with.

// etcdImage is kubeadm's default etcd for Kubernetes v1.37
// (cmd/kubeadm/app/constants.DefaultEtcdVersion), the etcd the lab embeds.
const etcdImage = "registry.k8s.io/etcd:3.7.0-0"

// StaticPods returns the control plane's static Pod manifests: names
// without the "-<node>" suffix the kubelet adds, no node yet. Nil for a
// control plane started with APIServerOnly.
func (cp *ControlPlane) StaticPods() []*v1.Pod {
	if cp.cfg.APIServerOnly {
		return nil
	}
	version := KubernetesVersion()
	etcdURL := ""
	if cp.etcd != nil && len(cp.etcd.Config().ListenClientUrls) > 0 {
		etcdURL = cp.etcd.Config().ListenClientUrls[0].String()
	}
	etcdArgs := []string{
		"--name=ccmlab",
		"--data-dir=" + cp.cfg.DataDir + "/etcd",
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--auto-compaction-mode=periodic",
		"--auto-compaction-retention=5m",
	}
	return []*v1.Pod{
		StaticPod(ComponentEtcd, etcdImage, append([]string{"etcd"}, etcdArgs...), nil),
		StaticPod(ComponentAPIServer, "registry.k8s.io/kube-apiserver:"+version,
			append([]string{"kube-apiserver"}, cp.apiserverArgs(etcdURL)...), nil),
		StaticPod(ComponentControllerManager, "registry.k8s.io/kube-controller-manager:"+version,
			append([]string{"kube-controller-manager"}, cp.controllerManagerArgs()...), nil),
		StaticPod(ComponentScheduler, "registry.k8s.io/kube-scheduler:"+version,
			append([]string{"kube-scheduler"}, cp.schedulerArgs()...), nil),
	}
}

// StaticPod is a static Pod manifest for one component in kube-system,
// shaped like kubeadm's: host network, system-node-critical, labelled
// component=<name> and tier=control-plane.
func StaticPod(component, image string, command []string, tolerations []v1.Toleration) *v1.Pod {
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      component,
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{"component": component, "tier": "control-plane"},
		},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name:                     component,
				Image:                    image,
				ImagePullPolicy:          v1.PullIfNotPresent,
				Command:                  command,
				TerminationMessagePath:   v1.TerminationMessagePathDefault,
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
			}},
			HostNetwork:        true,
			PriorityClassName:  "system-node-critical",
			Priority:           ptr.To[int32](2000001000),
			RestartPolicy:      v1.RestartPolicyAlways,
			DNSPolicy:          v1.DNSClusterFirst,
			Tolerations:        tolerations,
			SecurityContext:    &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			EnableServiceLinks: ptr.To(true),
		},
	}
}

// KubernetesVersion is the embedded Kubernetes' version ("v1.37.2").
func KubernetesVersion() string {
	return kubernetesModuleVersion()
}
