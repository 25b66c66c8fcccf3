package exercises

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// MysteryID is the diagnosis challenge's exercise (labapi).
const MysteryID = labapi.MysteryID

// MysteryService is the challenge's Service and Deployment, in the default
// namespace. The name says nothing about the cause.
const MysteryService = "shop"

// The challenge's causes. Each behaves as upstream does; see causes().
const (
	CauseNoServiceController = "no-service-controller"
	CauseClassUnhandled      = "class-unhandled"
	CauseIAMDeny             = "iam-deny"
	CauseThrottling          = "throttling"
	CauseNodesExcluded       = "nodes-excluded"
	CauseNoInitializedNode   = "no-initialized-node"
	CauseNodeGroupClosed     = "node-group-closed"
	CauseRBACMissing         = "rbac-missing"
)

// closerCaller is the caller the call log shows for the revocation of
// CauseNodeGroupClosed: what a colleague's AWS CLI would leave there. It
// is evidence to find (a call no controller made), not the cause's name.
const closerCaller = "aws-cli"

// Rows of the progress store that hold the challenge's state. They are
// not quiz questions, so nothing lists them; Reset (Store.Restart) clears
// them with the rest of the exercise's progress.
const (
	rowHiddenCause = "hidden-cause"
	rowNamedCause  = "named-cause"
	// hiddenKey is the progress store's exercise key of the hidden cause,
	// apart from the exercise's own progress.
	hiddenKey = MysteryID + "/hidden"
)

// mysteryThrottleQPS leaves the whole cloud API one call per 100 s: every
// sync of the Service needs several calls in a row, so none completes.
const mysteryThrottleQPS = 0.01

// cause is one thing that keeps a LoadBalancer Service from serving.
type cause struct {
	id    string
	label i18n.Text
	// why is told once the student has named a cause.
	why i18n.Text
	// applies, when set, says whether the lab can show the cause; a
	// random pick skips one that cannot (an explicit one still tries,
	// and its reset fails saying what is missing).
	applies func(ctx context.Context, s *Service) bool
}

// causes lists the challenge's causes in the order the page offers them.
func causes() []cause {
	return append([]cause{
		{CauseNoServiceController,
			i18n.Text{JA: "Service controller が動いていない", EN: "No Service controller is running"},
			i18n.Text{JA: "Service controller が止まっていました。誰も Service を見ていないので、EXTERNAL-IP は <pending>、イベントも 1 つもありません。Service controller をオンにすると直ります。",
				EN: "The Service controller was off. Nobody watches the Service, so EXTERNAL-IP is <pending> and there is not a single event. Switching the Service controller on fixes it."}, nil},
		{CauseClassUnhandled,
			i18n.Text{JA: "誰も担当しない loadBalancerClass", EN: "A loadBalancerClass nobody handles"},
			i18n.Text{JA: "Service に loadBalancerClass service.k8s.aws/nlb が付いていました。Service controller はクラス付きの Service を無視し、そのクラスの担当 (ロードバランサー controller) は動いていませんでした。イベントはありません。クラス無しで Service を作り直す (クラスは後から変えられません) か、担当の controller を動かすと直ります。AWS Load Balancer Controller の NLB は既定で internal なので、外から届かせるには annotation aws-load-balancer-scheme: internet-facing も要ります。",
				EN: "The Service carried loadBalancerClass service.k8s.aws/nlb. The Service controller ignores Services with a class, and the controller for that class (the load balancer controller) was not running; there are no events. Creating the Service again without a class (a class cannot be changed), or running that controller, fixes it; the AWS Load Balancer Controller's NLB is internal by default, so reaching it from outside also takes the annotation aws-load-balancer-scheme: internet-facing."}, nil},
		{CauseIAMDeny,
			i18n.Text{JA: "IAM が CreateLoadBalancer を拒否している", EN: "IAM denies CreateLoadBalancer"},
			i18n.Text{JA: "CCM のロールに CreateLoadBalancer が許されていませんでした。SyncLoadBalancerFailed のイベントとクラウド API の呼び出しログに AccessDenied が出ます。拒否を外すと、controller が次の再試行 (間隔は 5 秒から倍々に最大 5 分) で作ります。",
				EN: "The CCM's role was not allowed CreateLoadBalancer. SyncLoadBalancerFailed events and the call log show AccessDenied. Once the deny is lifted the controller creates it on its next retry (5 s, doubling up to 5 minutes)."}, nil},
		{CauseThrottling,
			i18n.Text{JA: "クラウド API のレート制限 (スロットリング)", EN: "Cloud API rate limit (throttling)"},
			i18n.Text{JA: "クラウド API が 100 秒に 1 回しか呼べないほど絞られていました。SyncLoadBalancerFailed のイベントとクラウド API の呼び出しログに Throttling: Rate exceeded (EC2 の呼び出しなら RequestLimitExceeded) が出ます。制限を外すと、次の再試行で進みます。",
				EN: "The cloud API was throttled to one call per 100 s. SyncLoadBalancerFailed events and the call log show Throttling: Rate exceeded (RequestLimitExceeded for EC2's calls). Once the limit is lifted the next retry goes through."}, nil},
		{CauseNodesExcluded,
			i18n.Text{JA: "すべてのノードがロードバランサーから除外されている", EN: "Every node is excluded from load balancers"},
			i18n.Text{JA: "すべての Node に node.kubernetes.io/exclude-from-external-load-balancers が付いていました。Service controller は対象ノードが 0 台でも UnAvailableLoadBalancer のイベントを出したうえでロードバランサーを作るので、EXTERNAL-IP は入りますが、ターゲットがありません。ラベルを外すと、ノードの同期がターゲットを登録します。",
				EN: "Every Node carried node.kubernetes.io/exclude-from-external-load-balancers. With zero eligible nodes the Service controller records UnAvailableLoadBalancer and still ensures the load balancer, so EXTERNAL-IP appears, but the load balancer has no targets. Removing the label lets the node sync register targets."}, nil},
		{CauseNoInitializedNode,
			i18n.Text{JA: "初期化されたワーカーの Node が 1 台も無い", EN: "No worker Node has been initialized"},
			i18n.Text{JA: "Node controller が止まっていて、新しいワーカー VM の Node はどれも uninitialized の taint を持ち、providerID もありませんでした (コントロールプレーンの Node はラボの起動時に初期化済みですが、ロードバランサーから除外するラベルが付いています)。Service controller の対象ノードの条件 (stableNodeSetPredicates) は Ready も初期化も見ないので、ノードはあると判断してロードバランサーを作り、EXTERNAL-IP は入ります (UnAvailableLoadBalancer も出ません)。しかし AWS のプロバイダーは (cloud-provider-aws もラボのものも) providerID の無い Node をターゲットにしないので、ターゲットは 0 で、Pod も taint のせいで Pending です。Node controller をオンにすると直ります。",
				EN: "The Node controller was off: every new worker VM's Node kept the uninitialized taint and had no providerID (the control-plane Node was initialized when the lab started, but carries the label that excludes it from load balancers). The Service controller's node conditions (stableNodeSetPredicates) check neither Ready nor initialization, so to it there were nodes: it built the load balancer and EXTERNAL-IP appeared (no UnAvailableLoadBalancer either). But the AWS provider (cloud-provider-aws and the lab's alike) leaves Nodes without a providerID out of the targets, so the load balancer has none, and the Pods are Pending on the taint. Switching the Node controller on fixes it."}, nil},
		{CauseNodeGroupClosed,
			i18n.Text{JA: "ノードのセキュリティグループがロードバランサーを通さない", EN: "The nodes' security group does not admit the load balancer"},
			i18n.Text{JA: "cloud-provider-aws は Classic ELB 用のセキュリティグループ k8s-elb-<名前> を作り、ノードのセキュリティグループに「そのグループからの通信をすべて許す」ルールを足します。そのルールが AWS CLI で外されていました (クラウド API の呼び出しログの aws-cli の RevokeSecurityGroupIngress)。EXTERNAL-IP も EnsuredLoadBalancer のイベントも正常ですが、ELB のヘルスチェックも転送もノードで落とされ、インスタンスはすべて OutOfService です。ルールを戻す (aws ec2 authorize-security-group-ingress) か、Service の注釈を変えるなどして Service controller に EnsureLoadBalancer をもう一度呼ばせると、プロバイダーがルールを足し直します。",
				EN: "cloud-provider-aws makes a security group k8s-elb-<name> for a Classic ELB and adds to the nodes' security group a rule admitting all traffic from it. That rule had been taken away with the AWS CLI (aws-cli's RevokeSecurityGroupIngress in the call log). EXTERNAL-IP and the EnsuredLoadBalancer event look fine, but the nodes drop the ELB's health checks and traffic alike, and every instance is OutOfService. Putting the rule back (aws ec2 authorize-security-group-ingress), or making the Service controller call EnsureLoadBalancer again (change an annotation of the Service, say), has the provider add it again."},
			upstreamAWS},
		{CauseRBACMissing,
			i18n.Text{JA: "Service controller の RBAC にルールが足りない", EN: "A rule is missing from the Service controller's RBAC"},
			i18n.Text{JA: "CCM は --use-service-account-credentials=true で動くので、Service controller は ServiceAccount kube-system/service-controller として API を呼びます。その ClusterRole system:controller:service-controller から services/status の patch と update のルールが消されていました。Service controller は EnsuringLoadBalancer の直後、ロードバランサーを作る前に finalizer を付けようとして (status サブリソースへの patch) forbidden で失敗し、SyncLoadBalancerFailed のイベントにそのメッセージが出ます。クラウドには何も呼ばれません。ルールを戻すと、次の再試行で進みます。",
				EN: "The CCM runs with --use-service-account-credentials=true, so the Service controller calls the API as the ServiceAccount kube-system/service-controller. Its ClusterRole system:controller:service-controller had lost the rule granting patch and update on services/status. Right after EnsuringLoadBalancer, before any load balancer, the controller adds its finalizer through the status subresource, is told forbidden, and the SyncLoadBalancerFailed event carries that message; the cloud is never called. Putting the rule back lets the next retry go through."},
			ccmAsPod},
	}, lbcCauses()...) // mystery_lbc.go
}

// CauseIDs lists the causes' ids.
func CauseIDs() []string {
	var ids []string
	for _, c := range causes() {
		ids = append(ids, c.id)
	}
	return ids
}

func causeIndex(id string) int {
	return slices.IndexFunc(causes(), func(c cause) bool { return c.id == id })
}

// A cause as the page lists it, and what the challenge's exercise adds
// (labapi).
type (
	CauseView   = labapi.CauseView
	MysteryView = labapi.MysteryView
)

// nudges say, for a cause named wrongly, what the lab would show if it
// were the cause and where to look: the student checks the evidence
// instead of trying the next cause in the list. A cause without its own
// nudge gets nudgeOther.
var nudges = map[string]i18n.Text{
	CauseNoServiceController: {JA: "Service controller が止まっていれば、controller のパネルでオフと表示され、Service にはイベントが 1 つもありません。両方を見比べてください。",
		EN: "If the Service controller were off, the controller panel would show it off and the Service would have no event at all. Compare both."},
	CauseClassUnhandled: {JA: "担当のいないクラスなら、kubectl get svc shop -o yaml の spec に loadBalancerClass があり、イベントはありません。spec を読んでください。",
		EN: "With a class nobody handles, kubectl get svc shop -o yaml shows a loadBalancerClass in the spec, and there are no events. Read the spec."},
	CauseIAMDeny: {JA: "IAM の拒否なら、SyncLoadBalancerFailed のイベントとクラウド API の呼び出しログの結果にエラーコードが出ます。どのコードが出ているか (出ていないか) を読んでください。",
		EN: "An IAM deny shows an error code in the SyncLoadBalancerFailed events and in the call log's results. Read which code is there, if any."},
	CauseThrottling: {JA: "スロットリングなら、クラウド API の呼び出しログに失敗した呼び出しが並び、障害のパネルに制限が出ます。クラウド API の呼び出しログのエラーコードと障害のパネルを見てください。",
		EN: "Throttling fills the call log with failed calls and shows a limit in the fault panel. Read the call log's error codes and the fault panel."},
	CauseNodesExcluded: {JA: "ノードが除外されていれば、kubectl get nodes --show-labels で全ノードにそのラベルが見え、UnAvailableLoadBalancer のイベントが出ます。ラベルとイベントを確かめてください。",
		EN: "If the nodes were excluded, kubectl get nodes --show-labels would show the label on every node, with an UnAvailableLoadBalancer event. Check the labels and the events."},
	CauseNoInitializedNode: {JA: "初期化されていないノードなら、Node に uninitialized の taint が残り、providerID がありません。kubectl describe node で taint と providerID を見てください。",
		EN: "Uninitialized nodes keep the uninitialized taint and have no providerID. Look at the taints and the providerID with kubectl describe node."},
	CauseNodeGroupClosed: {JA: "ノードのセキュリティグループが閉じていれば、aws elb describe-instance-health でインスタンスが OutOfService になり、aws ec2 describe-security-groups でノードのグループに ELB のグループを許すルールが見当たりません。両方を確かめてください。",
		EN: "If the nodes' security group were closed, aws elb describe-instance-health would show the instances OutOfService and aws ec2 describe-security-groups would show no rule in the nodes' group naming the ELB's group. Check both."},
	CauseRBACMissing: {JA: "RBAC が足りなければ、SyncLoadBalancerFailed のイベントに forbidden と、許されなかった ServiceAccount、動詞、リソースが出ます。イベントのメッセージを最後まで読んでください。",
		EN: "A missing RBAC rule shows in the SyncLoadBalancerFailed event as forbidden, naming the ServiceAccount, the verb and the resource it was refused. Read the event's message to the end."},
}

var nudgeOther = i18n.Text{JA: "その原因なら何が見えるはずかを考え、イベント、クラウド API の呼び出しログ、パネル、Node と Pod で確かめてください。",
	EN: "Think about what that cause would show, then check it in the events, the call log, the panels, the Nodes and the Pods."}

// Mystery returns the challenge's view in lang.
func (s *Service) Mystery(ctx context.Context, lang string) (MysteryView, error) {
	lang, err := normLang(lang)
	if err != nil {
		return MysteryView{}, err
	}
	v := MysteryView{Service: format.Namespace + "/" + MysteryService, Causes: []CauseView{}}
	for _, c := range causes() {
		v.Causes = append(v.Causes, CauseView{ID: c.id, Label: c.label})
	}
	answers, err := s.cfg.Store.Answers(ctx, MysteryID)
	if err != nil {
		return MysteryView{}, err
	}
	named, ok := answers[rowNamedCause]
	if !ok || named.Attempts == 0 {
		return v, nil
	}
	// Only the first answer counts, as the exercise says: it ends the
	// diagnosis, right or wrong, and the hidden cause is shown.
	all := causes()
	if named.FirstChoice >= 0 && named.FirstChoice < len(all) {
		v.Answer = all[named.FirstChoice].id
	}
	v.Correct = ptr.To(named.FirstCorrect)
	v.Misses = named.Wrong
	if !named.FirstCorrect {
		n, ok := nudges[v.Answer]
		if !ok {
			n, ok = lbcNudges()[v.Answer]
		}
		if !ok {
			n = nudgeOther
		}
		v.Nudge = n.In(i18n.Lang(lang))
	}
	v.Named = true
	hiddenRows, err := s.cfg.Store.Answers(ctx, hiddenKey)
	if err != nil {
		return MysteryView{}, err
	}
	if hidden, ok := hiddenRows[rowHiddenCause]; ok && hidden.Choice >= 0 && hidden.Choice < len(all) {
		v.Cause = all[hidden.Choice].id
		v.Why = all[hidden.Choice].why.In(i18n.Lang(lang))
	}
	return v, nil
}

// NameCause records the student's diagnosis. Only the first answer
// counts, as the exercise says: it ends the diagnosis, right or wrong (a
// wrong one is counted and answered with a nudge toward the evidence and
// the hidden cause), and further answers are refused until a reset.
func (s *Service) NameCause(ctx context.Context, id, causeID, lang string) (MysteryView, error) {
	if _, err := s.get(id); err != nil {
		return MysteryView{}, err
	}
	if id != MysteryID {
		return MysteryView{}, fmt.Errorf("%w: exercise %s has no cause to name (only %s does)", ErrBadInput, id, MysteryID)
	}
	if _, err := normLang(lang); err != nil {
		return MysteryView{}, err
	}
	i := causeIndex(causeID)
	if i < 0 {
		return MysteryView{}, fmt.Errorf("%w: unknown cause %q (valid: %s)", ErrBadInput, causeID, strings.Join(CauseIDs(), ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	answers, err := s.cfg.Store.Answers(ctx, MysteryID)
	if err != nil {
		return MysteryView{}, err
	}
	hiddenRows, err := s.cfg.Store.Answers(ctx, hiddenKey)
	if err != nil {
		return MysteryView{}, err
	}
	hidden, ok := hiddenRows[rowHiddenCause]
	if _, started, err := s.cfg.Store.Started(ctx, MysteryID); err != nil || !started {
		ok = false
	}
	if !ok {
		return MysteryView{}, fmt.Errorf("%w: reset %s first: no cause is hidden yet", ErrUnavailable, MysteryID)
	}
	if named, ok := answers[rowNamedCause]; ok && named.Attempts > 0 {
		return MysteryView{}, errText(ErrNotCurrent,
			fmt.Sprintf("数えるのは最初の答えだけで、それはもう出ています (%s)。新しい問題はリセットから", causes()[named.FirstChoice].id),
			fmt.Sprintf("only the first answer counts and it was given (%s); reset for a new challenge", causes()[named.FirstChoice].id))
	}
	if _, err := s.cfg.Store.RecordAnswer(ctx, MysteryID, rowNamedCause, i, i == hidden.Choice, s.cfg.Now()); err != nil {
		return MysteryView{}, err
	}
	return s.Mystery(ctx, lang)
}

// validateMysteryCause refuses an unknown cause before anything changes.
func validateMysteryCause(causeID string) error {
	if causeID != "" && causeIndex(causeID) < 0 {
		return fmt.Errorf("%w: unknown cause %q (valid: %s)", ErrBadInput, causeID, strings.Join(CauseIDs(), ", "))
	}
	return nil
}

// plantMystery runs after the generic reset settled the lab (faults
// cleared, Service and Deployment shop gone, switches at their defaults):
// it picks the cause (random when none is given), plants it, creates the
// Deployment and the Service, and returns once the symptom shows. Call
// with mu.
func (s *Service) plantMystery(ctx context.Context, causeID string) error {
	env := s.cfg.Env
	if causeID == "" {
		var ids []string
		for _, c := range causes() {
			if c.applies == nil || c.applies(ctx, s) {
				ids = append(ids, c.id)
			}
		}
		causeID = ids[rand.IntN(len(ids))]
	}
	idx := causeIndex(causeID)
	if idx < 0 {
		return validateMysteryCause(causeID)
	}
	// Workers serve load balancers; the control-plane node, as kubeadm
	// leaves it, is excluded from them (and so never a target, whatever
	// the cause). A previous round, or the student, may have changed either.
	if err := s.updateNodes(ctx, func(n *corev1.Node) bool {
		_, ok := n.Labels[corev1.LabelNodeExcludeBalancers]
		if isControlPlaneNode(n) {
			if ok {
				return false
			}
			n.Labels[corev1.LabelNodeExcludeBalancers] = ""
			return true
		}
		if !ok {
			return false
		}
		delete(n.Labels, corev1.LabelNodeExcludeBalancers)
		return true
	}); err != nil {
		return fmt.Errorf("removing exclude labels: %w", err)
	}
	// The hidden cause lives under its own key: the reset clears the
	// exercise's progress (and so the named cause) after this hook.
	if _, err := s.cfg.Store.RecordAnswer(ctx, hiddenKey, rowHiddenCause, idx, false, s.cfg.Now()); err != nil {
		return err
	}

	// The cause, before the Service exists, so the controllers meet the
	// Service in the broken lab.
	var class *string
	// The causes of mystery_lbc.go plant there; err says one could not.
	_, class, err := s.plantLBCCause(ctx, causeID)
	switch causeID {
	case CauseNoServiceController:
		err = env.Controllers.Disable(profile.Service)
	case CauseClassUnhandled:
		class = ptr.To(ccmnames.LBCClass)
		if _, ok := env.Controllers.Status()[ccmnames.AddonLBC]; ok {
			err = env.Controllers.Disable(ccmnames.AddonLBC)
		}
	case CauseIAMDeny:
		err = env.Cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}, Latency: env.Cloud.Faults().Latency})
	case CauseThrottling:
		err = env.Cloud.SetFaults(cloud.Faults{QPS: mysteryThrottleQPS, Burst: 1, Latency: env.Cloud.Faults().Latency})
	case CauseNodesExcluded:
		err = s.updateNodes(ctx, func(n *corev1.Node) bool {
			if n.Labels[corev1.LabelNodeExcludeBalancers] == "true" {
				return false
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[corev1.LabelNodeExcludeBalancers] = "true"
			return true
		})
	case CauseNoInitializedNode:
		err = s.freshUninitializedNodes(ctx, s.cfg.Nodes)
	case CauseRBACMissing:
		err = s.removeServiceStatusRule(ctx) // rbac.go
	}
	if err != nil {
		return fmt.Errorf("planting %s: %w", causeID, err)
	}
	if err := s.createMysteryObjects(ctx, class, causeID); err != nil {
		return err
	}
	if causeID == CauseNodeGroupClosed {
		// After the provider has built everything, as a change made later
		// by someone else would.
		if err := s.closeNodeGroup(ctx); err != nil {
			return fmt.Errorf("planting %s: %w", causeID, err)
		}
	}
	// Return once the symptom shows, so the student starts from it.
	return s.waitFor(ctx, "the symptom of "+causeID, func() (bool, string, error) { return s.mysterySymptom(ctx, causeID) })
}

func (s *Service) createMysteryObjects(ctx context.Context, class *string, causeID string) error {
	cs := s.cfg.Env.Client
	labels := map[string]string{"app": MysteryService}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: MysteryService, Namespace: format.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "nginx", Image: "nginx:1.29", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(format.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Deployment %s: %w", MysteryService, err)
	}
	typ, annotations := mysteryShopSpec(causeID) // mystery_lbc.go
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: MysteryService, Namespace: format.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Type:              typ,
			LoadBalancerClass: class,
			Selector:          labels,
			Ports:             []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := cs.CoreV1().Services(format.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service %s: %w", MysteryService, err)
	}
	if typ != corev1.ServiceTypeLoadBalancer {
		return s.makeShopLoadBalancer(ctx)
	}
	return nil
}

// mysterySymptom: the broken state the cause leads to has shown.
func (s *Service) mysterySymptom(ctx context.Context, causeID string) (bool, string, error) {
	cs := s.cfg.Env.Client
	svc, err := cs.CoreV1().Services(format.Namespace).Get(ctx, MysteryService, metav1.GetOptions{})
	if err != nil {
		return false, "", ignoreNotFound(err)
	}
	ingress := len(svc.Status.LoadBalancer.Ingress) > 0
	reasons := map[string]string{}
	evs, err := cs.CoreV1().Events(format.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(svc.UID)})
	if err != nil {
		return false, "", err
	}
	for _, e := range evs.Items {
		reasons[e.Reason] += e.Message + "\n"
	}
	if handled, ok, why := s.lbcSymptom(svc, reasons, causeID); handled { // mystery_lbc.go
		return ok, why, nil
	}
	switch causeID {
	case CauseIAMDeny:
		// ELB answers AccessDenied, EC2 UnauthorizedOperation (the upstream
		// provider's calls); the lab's own API AccessDenied.
		failed := reasons["SyncLoadBalancerFailed"]
		return strings.Contains(failed, cloud.ErrAccessDenied) || strings.Contains(failed, cloud.ErrUnauthorizedOperation), "no AccessDenied event yet", nil
	case CauseThrottling:
		failed := reasons["SyncLoadBalancerFailed"]
		return strings.Contains(failed, cloud.ErrThrottling) || strings.Contains(failed, cloud.ErrRequestLimitExceeded), "no Throttling event yet", nil
	case CauseNodesExcluded:
		_, warned := reasons["UnAvailableLoadBalancer"]
		return ingress && warned, "no EXTERNAL-IP or UnAvailableLoadBalancer event yet", nil
	case CauseRBACMissing:
		failed := reasons["SyncLoadBalancerFailed"]
		return strings.Contains(failed, "forbidden"), "no forbidden event yet", nil
	case CauseNodeGroupClosed:
		if !ingress {
			return false, "no EXTERNAL-IP yet", nil
		}
		lb, ok := s.cfg.Env.Cloud.LookupLoadBalancer(cloudprovider.DefaultLoadBalancerName(svc))
		if !ok || len(lb.Targets) == 0 {
			return false, "the load balancer has no targets yet", nil
		}
		for _, t := range lb.Targets {
			if t.Health == cloud.TargetHealthy {
				return false, "a target is still healthy", nil
			}
		}
		return true, "", nil
	case CauseNoInitializedNode:
		if !ingress {
			return false, "no EXTERNAL-IP yet", nil
		}
		// The lab's provider's load balancer, or the upstream provider's
		// Classic ELB or NLB.
		name := cloudprovider.DefaultLoadBalancerName(svc)
		lb, ok := s.cfg.Env.Cloud.LookupLoadBalancer(name)
		return ok && len(lb.Targets) == 0, "the load balancer still has targets", nil
	}
	return !ingress, "", nil
}

// freshUninitializedNodes replaces every VM with n new ones that no Node
// controller has touched: the Node controller goes off, new instances
// register tainted and without providerID, the old instances are
// terminated and the node-lifecycle controller deletes their Nodes.
func (s *Service) freshUninitializedNodes(ctx context.Context, n int) error {
	env := s.cfg.Env
	if err := env.Controllers.Disable(profile.Node); err != nil {
		return err
	}
	old := runningInstances(env.Cloud)
	var fresh []string
	for range n {
		inst, err := env.Cloud.RunInstance(cloud.WithCaller(ctx, ResetCaller), cloud.RunInstanceInput{})
		if err != nil {
			return fmt.Errorf("launching an instance: %w", err)
		}
		fresh = append(fresh, inst.PrivateDNSName)
	}
	nodes := env.Client.CoreV1().Nodes()
	if err := s.waitFor(ctx, "the new VMs' Nodes to register", func() (bool, string, error) {
		for _, name := range fresh {
			node, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && !kube.NodeReady(node)) {
				return false, "node " + name + " not Ready yet", nil
			}
			if err != nil {
				return false, "", err
			}
		}
		return true, "", nil
	}); err != nil {
		return err
	}
	for _, inst := range old {
		if _, err := env.Cloud.TerminateInstance(cloud.WithImmediateTransition(cloud.WithCaller(ctx, ResetCaller)), inst.ID); err != nil && !cloud.IsCode(err, cloud.ErrInstanceNotFound) {
			return fmt.Errorf("terminating %s: %w", inst.ID, err)
		}
	}
	if !env.Controllers.Status()[profile.NodeLifecycle] {
		return errors.New("the node-lifecycle controller is off: the old VMs' Nodes would stay")
	}
	return s.waitFor(ctx, "the old VMs' Nodes to be deleted", func() (bool, string, error) {
		for _, inst := range old {
			_, err := nodes.Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
			if err == nil {
				return false, "node " + inst.PrivateDNSName + " still there", nil
			}
			if !apierrors.IsNotFound(err) {
				return false, "", err
			}
		}
		return true, "", nil
	})
}

// CauseNamed reports whether the student has given mystery-pending's
// diagnosis (the first answer, which is final) and whether it was right
// (check.CauseNamer).
func (s *Service) CauseNamed(ctx context.Context) (named, correct bool, err error) {
	answers, err := s.cfg.Store.Answers(ctx, MysteryID)
	if err != nil {
		return false, false, err
	}
	a, ok := answers[rowNamedCause]
	return ok && a.Attempts > 0, ok && a.FirstCorrect, nil
}

// closeNodeGroup waits until cloud-provider-aws has built shop's Classic
// ELB, its security group and the rule on the nodes' group that admits
// it, then revokes that rule as a colleague's AWS CLI would.
func (s *Service) closeNodeGroup(ctx context.Context) error {
	c := s.cfg.Env.Cloud
	var nodeGroup string
	var perms []cloud.IPPermission
	if err := s.waitFor(ctx, "shop's ELB and the nodes' rule for it", func() (bool, string, error) {
		svc, err := s.cfg.Env.Client.CoreV1().Services(format.Namespace).Get(ctx, MysteryService, metav1.GetOptions{})
		if err != nil {
			return false, "", ignoreNotFound(err)
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, "no EXTERNAL-IP yet", nil
		}
		lb, ok := c.LookupLoadBalancer(cloudprovider.DefaultLoadBalancerName(svc))
		if !ok || lb.Kind != cloud.LBKindClassic || len(lb.SecurityGroups) == 0 {
			return false, "no Classic ELB with a security group (this cause needs the aws profile's cloud-provider-aws)", nil
		}
		groups := c.NodeSecurityGroups()
		if len(groups) == 0 {
			return false, "no nodes' security group", nil
		}
		nodeGroup, perms = groups[0], nil
		for _, g := range c.SecurityGroupViews() {
			if g.ID != nodeGroup {
				continue
			}
			for _, p := range g.Ingress {
				for _, id := range p.GroupIDs {
					if slices.Contains(lb.SecurityGroups, id) {
						perms = append(perms, cloud.IPPermission{Protocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort, GroupIDs: []string{id}})
					}
				}
			}
		}
		return len(perms) > 0, "no rule for the ELB's group on the nodes' group yet", nil
	}); err != nil {
		return err
	}
	return c.RevokeIngress(cloud.WithCaller(ctx, closerCaller), nodeGroup, perms)
}

// upstreamAWS: the profile's load balancers are cloud-provider-aws's
// Classic ELBs with security groups (the aws and vpc-cni profiles, whose
// default provider is the upstream one).
func upstreamAWS(_ context.Context, s *Service) bool {
	n := s.cfg.Env.Profile.Name
	return n == "aws" || n == "vpc-cni"
}

// ccmAsPod: the CCM runs as the DaemonSet Pod in kube-system, with a
// ServiceAccount per controller, so RBAC is what limits it.
func ccmAsPod(ctx context.Context, s *Service) bool {
	_, err := check.CCMDaemonSet(ctx, s.cfg.Env.Client)
	return err == nil
}
