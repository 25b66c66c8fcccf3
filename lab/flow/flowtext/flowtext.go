package flowtext

import (
	"maps"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// Evidence keys: what proved a step. Arguments are in braces in the texts.
const (
	ServiceStored    = "ev.service.stored"  // {ip} {ports}
	Event            = "ev.event"           // {reason} {source}
	Finalizer        = "ev.finalizer"       // {name}
	Call             = "ev.call"            // {action} {caller}
	CallAPI          = "ev.call.api"        // {api} {action} {caller}
	LBExists         = "ev.lb.exists"       // {name}
	Targets          = "ev.targets"         // {n} {mode} {proto} {port}
	TargetsAWS       = "ev.targets.aws"     // {n} {hc} {api} {actions}
	Ingress          = "ev.ingress"         // {ingress}
	IngressEvent     = "ev.ingress.event"   // {ingress} {reason}
	Answered         = "ev.answered"        // {id} {status}
	InstanceLaunched = "ev.instance"        // {id} {type} {zone}
	NodeRegistered   = "ev.node.registered" // (none)
	QueryImplied     = "ev.query.implied"   // (none)
	NodeWritten      = "ev.node.written"    // {pid} {zone} {type}
	TaintRemoved     = "ev.taint.removed"   // {taint}
	PodScheduled     = "ev.pod.scheduled"   // {pod}
)

// Stuck detail keys: the specifics beside a stuck reason (the reason code
// itself is translated by the page as reason.<code>).
const (
	StuckNoServiceController = "stuck.no-service-controller" // (none)
	StuckAddonOff            = "stuck.addon-off"             // {class}
	StuckClassUnknown        = "stuck.class-unknown"         // {class}
	StuckNoEndpoints         = "stuck.no-endpoints"          // (none)
	StuckCloudRefused        = "stuck.cloud-refused"         // {action} {error}
	StuckFailedEvent         = "stuck.failed-event"          // {reason} {message}
	StuckNoEligibleNodes     = "stuck.no-eligible-nodes"     // (none)
	StuckInstanceNotRunning  = "stuck.instance-not-running"  // {id} {state}
	StuckNoNodeController    = "stuck.no-node-controller"    // (none)
)

// Catalog returns a copy of the flow's texts.
func Catalog() i18n.Catalog { return maps.Clone(catalog) }

// Text is a message in both languages, its placeholders filled.
func Text(m i18n.Msg) i18n.Text { return catalog.Text(m) }

// English renders a message in English, for the API's plain evidence and
// message fields.
func English(m i18n.Msg) string { return catalog.Text(m).EN }

// catalog holds the flow's texts. Kubernetes and AWS names (Event
// reasons, API actions, field paths, providerID, taint keys) stay as they
// are in both languages: they are what students read in real output.
// Arguments are names and numbers, never sentences, except the cloud's and
// the controller's own error text, which the page quotes as it is (like
// kubectl describe and the AWS console do).
var catalog = i18n.Catalog{
	ServiceStored:    {JA: "apiserver に保存済み (ClusterIP {ip}、ポート {ports})", EN: "Service stored (ClusterIP {ip}, ports {ports})"},
	Event:            {JA: "{source} がイベント {reason} を記録", EN: "event {reason} from {source}"},
	Finalizer:        {JA: "finalizer {name} が付いた", EN: "finalizer {name}"},
	Call:             {JA: "{caller} が {action} を呼んだ", EN: "call {action} by {caller}"},
	CallAPI:          {JA: "{caller} が {api} の {action} を呼んだ", EN: "call {api} {action} by {caller}"},
	LBExists:         {JA: "ロードバランサー {name} がクラウドにある", EN: "load balancer {name} exists"},
	Targets:          {JA: "{mode} ターゲット {n} 個、ヘルスチェック {proto}:{port}", EN: "{n} {mode} targets, health check {proto}:{port}"},
	TargetsAWS:       {JA: "インスタンス {n} 台が登録され、ヘルスチェックは {hc} ({api} の {actions})", EN: "{n} instances registered, health check {hc} ({api} {actions})"},
	Ingress:          {JA: "status.loadBalancer.ingress に {ingress} が書かれた", EN: "status.loadBalancer.ingress = {ingress}"},
	IngressEvent:     {JA: "status.loadBalancer.ingress に {ingress} が書かれた (イベント {reason})", EN: "status.loadBalancer.ingress = {ingress} (event {reason})"},
	Answered:         {JA: "リクエスト {id} に {status} で応答があった", EN: "request {id} answered {status}"},
	InstanceLaunched: {JA: "インスタンス {id} が起動 ({type}、{zone})", EN: "instance {id} ({type}, {zone})"},
	NodeRegistered:   {JA: "kubelet が uninitialized taint 付きで Node を登録した", EN: "Node registered by the kubelet with the uninitialized taint"},
	QueryImplied:     {JA: "providerID が書かれているので、問い合わせは済んでいる", EN: "implied by the providerID"},
	NodeWritten:      {JA: "providerID {pid}、ゾーン {zone}、インスタンスタイプ {type} が書かれた", EN: "providerID {pid}, zone {zone}, instance-type {type}"},
	TaintRemoved:     {JA: "taint {taint} が外れた", EN: "taint {taint} removed"},
	PodScheduled:     {JA: "Pod {pod} がこのノードに置かれた", EN: "Pod {pod} scheduled here"},

	StuckNoServiceController: {JA: "Service controller が動いていないので、この Service を見ている者がいません。status.loadBalancer は空のままです", EN: "no Service controller is running, so nobody watches this Service: status.loadBalancer stays empty"},
	StuckAddonOff:            {JA: "loadBalancerClass {class}: load-balancer-controller アドオンが動いておらず、Service controller はクラス付きの Service を扱いません", EN: "loadBalancerClass {class}: the load-balancer-controller add-on is not running, and the Service controller ignores Services with a class"},
	StuckClassUnknown:        {JA: "loadBalancerClass {class}: このクラスを扱う controller がこのクラスタにはありません", EN: "loadBalancerClass {class}: no controller in this cluster handles that class"},
	StuckNoEndpoints:         {JA: "Service に Ready なエンドポイントがないので、リクエストを受け取る Pod がありません", EN: "the Service has no ready endpoints, so a request would find no Pod"},
	StuckCloudRefused:        {JA: "クラウドが {action} を拒否しました。クラウドの応答: {error}", EN: "the cloud refused {action}: {error}"},
	StuckFailedEvent:         {JA: "イベント {reason} が記録されました。controller のメッセージ: {message}", EN: "{reason}: {message}"},
	StuckNoEligibleNodes:     {JA: "Service controller がロードバランサーに渡せるノードが 1 台もありません (どのノードも削除中か、node.kubernetes.io/exclude-from-external-load-balancers のラベルか ToBeDeletedByClusterAutoscaler の taint で除外されています。Ready かどうかは見ません)。それでもロードバランサーは作られ EXTERNAL-IP も入りますが、ターゲットは無く、Service にはイベント UnAvailableLoadBalancer が付きます", EN: "the Service controller has no node to give the load balancer: every node is being deleted or excluded by the label node.kubernetes.io/exclude-from-external-load-balancers or the ToBeDeletedByClusterAutoscaler taint (readiness is not checked). The load balancer is still ensured and EXTERNAL-IP appears, but it has no targets, and the Service gets the event UnAvailableLoadBalancer"},
	StuckInstanceNotRunning:  {JA: "インスタンス {id} の状態は {state} です", EN: "instance {id} is {state}"},
	StuckNoNodeController:    {JA: "Node controller が動いていません。Node は Ready でも taint が残ったままで、Pod は Pending のままです", EN: "no Node controller is running: the Node stays Ready but tainted, and Pods stay Pending"},
}
