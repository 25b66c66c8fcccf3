package classroom

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/ccmlab/ccmlab/internal/labapi"
)

// What one lab may use (docs/classroom.md, docs/security.md).
const (
	// DefaultLabMemory is ccmlab serve's own default memory limit: an idle
	// lab's Go runtime holds about 150 MB and its RSS (the binary's text
	// included, shared between labs) is about 370 MB.
	DefaultLabMemory = 1 << 30
	// DefaultLabOpenFiles: an idle lab holds about 160 descriptors, 140
	// of them loopback sockets of its own control plane; its load
	// balancers add at most labapi.DefaultListenerSockets. 4,096 leaves a
	// busy lab room and stops a runaway one long before the host's own
	// limits.
	DefaultLabOpenFiles = 4096
	// minLabMemory and minLabOpenFiles are the least a lab starts with
	// (app.MinMemoryLimit, app.MinOpenFiles: the lab checks them again).
	minLabMemory    = 256 << 20
	minLabOpenFiles = 1024
	// labMemoryRequest is a lab Pod's memory request: an idle lab's RSS
	// with room (the scheduler places labs by it).
	labMemoryRequest = 512 << 20
)

// goMemory is a lab Pod's Go soft limit: seven eighths of its container's
// limit. The cgroup counts all the container's memory, the binary's text
// among it, and the Go runtime only its own; the runtime collects harder
// before the kernel's OOM killer would end the lab.
func goMemory(container int64) int64 { return container / 8 * 7 }

// podResources are a lab Pod's requests and limits: memory as the class
// gives it, half a core requested (an idle lab takes a few percent of one)
// and no CPU limit (throttling a lab's start would only slow it).
func (o LabOptions) podResources() *corev1ac.ResourceRequirementsApplyConfiguration {
	return corev1ac.ResourceRequirements().
		WithRequests(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: *resource.NewQuantity(min(labMemoryRequest, o.Memory), resource.BinarySI),
		}).
		WithLimits(corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(o.Memory, resource.BinarySI)})
}

// Describe says what one lab may use, for the instructor: on the local
// backend memory is the lab's Go soft limit, on the kubernetes backend its
// container's limit.
func (o LabOptions) Describe(backend string) string {
	mem := resource.NewQuantity(o.Memory, resource.BinarySI).String()
	if backend == BackendKubernetes {
		mem += fmt.Sprintf(" (container limit; Go soft limit %s)", resource.NewQuantity(goMemory(o.Memory), resource.BinarySI))
	} else {
		mem += " (Go soft limit)"
	}
	return fmt.Sprintf("memory %s, %d open files, %d load balancer listener sockets (cloud quota), etcd %s (backend quota)",
		mem, o.OpenFiles, labapi.DefaultListenerSockets, resource.NewQuantity(labapi.DefaultEtcdQuotaBytes, resource.BinarySI))
}

// LabLimits says what one lab of the class may use (the class's defaults
// applied).
func (c *Classroom) LabLimits() string { return c.cfg.Lab.Describe(c.cfg.Backend) }
