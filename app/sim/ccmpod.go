package sim

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// upstreamNames are the CCM's names for the lab's controllers: the aliases
// k8s.io/cloud-provider accepts in --controllers (names.CCMControllerAliases).
var upstreamNames = map[string]string{
	profile.Node:          "cloud-node",
	profile.NodeLifecycle: "cloud-node-lifecycle",
	profile.Route:         "route",
	profile.Service:       "service",
}

// controllersFlag writes the switches in upstream notation: "*" for the
// defaults, "-name" for each one switched off ("*,-service").
func controllersFlag(p profile.Profile, status map[string]bool) string {
	parts := []string{"*"}
	for _, c := range p.Controllers {
		if !status[c] {
			parts = append(parts, "-"+upstreamNames[c])
		}
	}
	return strings.Join(parts, ",")
}

// ccmStaticPod is the CCM's manifest as the controllers run now. Its
// command is what a cloud-controller-manager started for this lab would be
// given; its tolerations are those of upstream CCM manifests, which let it
// run on a node the CCM has not initialized yet and on control-plane nodes.
func ccmStaticPod(p profile.Profile, clusterCIDR string, status map[string]bool) kubelet.StaticPod {
	cmd := []string{
		"cloud-controller-manager",
		"--cloud-provider=" + p.ProviderName,
		"--controllers=" + controllersFlag(p, status),
	}
	if p.Has(profile.Route) {
		cmd = append(cmd, "--allocate-node-cidrs=true", "--configure-cloud-routes=true", "--cluster-cidr="+clusterCIDR)
	} else {
		cmd = append(cmd, "--configure-cloud-routes=false")
	}
	cmd = append(cmd, "--leader-elect=false", "--use-service-account-credentials=true", "--v=2")
	tolerations := []v1.Toleration{
		{Key: kube.UninitializedTaint().Key, Value: "true", Effect: v1.TaintEffectNoSchedule},
		{Key: kubelet.LabelControlPlane, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	}
	pod := controlplane.StaticPod(controlplane.ComponentCCM, "ccmlab/cloud-controller-manager:"+controlplane.KubernetesVersion(), cmd, tolerations)
	pod.Labels["k8s-app"] = controlplane.ComponentCCM
	running := false
	for _, on := range status {
		running = running || on
	}
	return kubelet.StaticPod{Pod: pod, Stopped: !running}
}
