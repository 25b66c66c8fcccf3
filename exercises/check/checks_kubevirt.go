package check

import (
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
)

// Checks of the kubevirt hands-on's management side. The chapter's tenant
// cluster has its kubevirt-cloud-controller-manager "on the management
// cluster's side": a Deployment there, whose leader-election Lease and
// events are there too, while its controllers act on the tenant through a
// kubeconfig. The tenant's kubeconfig shows none of it; the management
// side is read through Env.Infra (`ccmlab kubectl --infra`).

// ccmLeaseName is the leader-election Lease of a CCM: cloud-provider's
// default --leader-elect-resource-name (k8s.io/cloud-provider v0.37.2
// options/options.go:130).
const ccmLeaseName = "cloud-controller-manager"

// ccmSuffix ends the name of a CCM's workload (<provider>-cloud-controller-manager).
const ccmSuffix = "-cloud-controller-manager"

// kubevirtKinds is this file's part of the kinds table (checks_extra.go).
func kubevirtKinds() map[string]checkKind {
	return map[string]checkKind{
		"ccmOutsideTenant": {eval: evalCCMOutsideTenant},
	}
}

// kubevirtAnswerKinds is this file's part of the answer kinds.
func kubevirtAnswerKinds() map[string]answerKind {
	return map[string]answerKind{
		"managementLeaseHolder": {values: answerManagementLeaseHolder},
	}
}

// noManagement is the verdict on a lab without a management side.
func noManagement() Outcome {
	return failf("このラボには管理クラスタがありません (--profile kubevirt で起動したラボにあります)。",
		"this lab has no management cluster (a lab started with --profile kubevirt has one).")
}

// managementCCM finds the CCM's Deployment on the management side.
func (e *evalCtx) managementCCM(ctx context.Context) (*appsv1.Deployment, error) {
	l, err := e.env.Infra.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range l.Items {
		if strings.HasSuffix(l.Items[i].Name, ccmSuffix) {
			return &l.Items[i], nil
		}
	}
	return nil, nil
}

// evalCCMOutsideTenant: the management side runs the CCM (its Deployment
// ready, its Lease held there) and the tenant has no CCM workload, Pod or
// Lease of its own.
func evalCCMOutsideTenant(ctx context.Context, e *evalCtx, _ format.CheckSpec) Outcome {
	if e.env.Infra == nil {
		return noManagement()
	}
	d, err := e.managementCCM(ctx)
	if err != nil {
		return errOutcome(err)
	}
	if d == nil {
		return failf("管理クラスタに CCM の Deployment (*%s) がありません。", "the management cluster has no CCM Deployment (*%s).", ccmSuffix)
	}
	if d.Status.ReadyReplicas < 1 {
		return failf("管理クラスタの Deployment %s/%s の CCM はまだ動いていません (READY 0)。", "the CCM of Deployment %s/%s in the management cluster is not running yet (READY 0).", d.Namespace, d.Name)
	}
	holders, err := leaseHolders(ctx, e.env.Infra.CoordinationV1().Leases(metav1.NamespaceAll))
	if err != nil {
		return errOutcome(err)
	}
	if len(holders) == 0 {
		return failf("管理クラスタの Lease %s を持つ CCM がまだいません。", "no CCM holds the Lease %s in the management cluster yet.", ccmLeaseName)
	}
	// The tenant: no CCM DaemonSet, Deployment or Pod, no CCM Lease.
	if ds, err := e.env.Client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err != nil {
		return errOutcome(err)
	} else if i := slices.IndexFunc(ds.Items, func(d appsv1.DaemonSet) bool { return strings.HasSuffix(d.Name, ccmSuffix) }); i >= 0 {
		return failf("テナントに CCM の DaemonSet %s/%s があります。", "the tenant has a CCM DaemonSet %s/%s.", ds.Items[i].Namespace, ds.Items[i].Name)
	}
	pods, err := e.env.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return errOutcome(err)
	}
	for _, p := range pods.Items {
		if strings.Contains(p.Name, ccmSuffix) {
			return failf("テナントに CCM の Pod %s/%s があります。", "the tenant has a CCM Pod %s/%s.", p.Namespace, p.Name)
		}
	}
	if th, err := leaseHolders(ctx, e.env.Client.CoordinationV1().Leases(metav1.NamespaceAll)); err != nil {
		return errOutcome(err)
	} else if len(th) > 0 {
		return failf("テナントに CCM の Lease %s があります (HOLDER %s)。", "the tenant has a CCM Lease %s (HOLDER %s).", ccmLeaseName, th[0])
	}
	// The holder is not named: the hands-on asks for it (managementLeaseHolder).
	return passf("CCM は管理クラスタの Deployment %s/%s で動き、その Lease も管理クラスタにあります。テナントには CCM の Pod も Lease もありません",
		"the CCM runs as Deployment %s/%s in the management cluster, its Lease is there too; the tenant has no CCM Pod and no CCM Lease", d.Namespace, d.Name)
}

// leaseHolders returns the holder identities of the CCM Leases l sees
// (every namespace), the ones with a holder only.
func leaseHolders(ctx context.Context, l coordinationv1client.LeaseInterface) ([]string, error) {
	list, err := l.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ccmLeaseName})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, le := range list.Items {
		// The name again: not every client honours the field selector
		// (client-go's fakes filter by labels only).
		if h := le.Spec.HolderIdentity; le.Name == ccmLeaseName && h != nil && *h != "" {
			out = append(out, *h)
		}
	}
	return out, nil
}

// answerManagementLeaseHolder: the HOLDER of the CCM's Lease in the
// management cluster, `<hostname>_<uuid>` as cloud-provider writes it
// (k8s.io/cloud-provider v0.37.2 app/controllermanager.go:236-241): read
// only there, so typing it shows the student looked.
func answerManagementLeaseHolder(ctx context.Context, e *evalCtx, _ format.AnswerSpec) ([]string, Outcome) {
	if e.env.Infra == nil {
		return nil, noManagement()
	}
	holders, err := leaseHolders(ctx, e.env.Infra.CoordinationV1().Leases(metav1.NamespaceAll))
	if err != nil {
		return nil, errOutcome(err)
	}
	if len(holders) == 0 {
		return nil, failf("管理クラスタの Lease %s を持つ CCM がまだいません。", "no CCM holds the Lease %s in the management cluster yet.", ccmLeaseName)
	}
	return holders, Outcome{}
}
