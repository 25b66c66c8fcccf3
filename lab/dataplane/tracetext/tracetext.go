package tracetext

import (
	"maps"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// Failure keys: why a packet went no further. Arguments are in braces in
// the texts. The reach keys (NotAnIP to NoRoute) say why an address
// cannot be reached; they are also a target's unhealthy reason, so they do
// not say "dropped" themselves (the status does).
const (
	NoTargets          = "fail.lb.no-targets"      // {lb}
	NoHealthyTargets   = "fail.lb.no-healthy"      // {lb} {targets}
	UnknownTarget      = "fail.target.unknown"     // {target}
	TargetNotRunning   = "fail.target.not-running" // {target} {state}
	InstanceNoNode     = "fail.instance.no-node"   // {instance}
	NoNodePort         = "fail.nodeport.none"      // {port}
	ExternalLocalDrop  = "fail.external-local"     // {node} {service}
	InternalLocalDrop  = "fail.internal-local"     // {node} {service}
	NoEndpoints        = "fail.no-endpoints"       // {service}
	NoPod              = "fail.no-pod"             // {ip}
	NotAnIP            = "fail.reach.not-ip"       // {ip}
	RouteBlackhole     = "fail.reach.blackhole"    // {cidr} {instance}
	RouteElsewhere     = "fail.reach.elsewhere"    // {cidr} {instance} {want}
	LBCannotReachPodIP = "fail.reach.lb-pod-ip"    // {ip}
	NoRoute            = "fail.reach.no-route"     // {ip} {node}
	NotListening       = "fail.not-listening"      // {error}
)

// Catalog returns a copy of the data plane's failure texts.
func Catalog() i18n.Catalog { return maps.Clone(catalog) }

// English renders a message in English, for Trace.Error.
func English(m i18n.Msg) string { return catalog.Text(m).EN }

// catalog holds the texts. Kubernetes and AWS names (externalTrafficPolicy,
// NodePort, kube-proxy, VPC route, blackhole, podCIDR, target states) stay
// as they are in both languages: they are what students read in real
// output. Arguments are names and numbers, except NotListening's error,
// which is the data plane's own English text, quoted as it is.
var catalog = i18n.Catalog{
	NoTargets: {
		JA: "ロードバランサー {lb} にはターゲットが 1 つも登録されていません",
		EN: "load balancer {lb}: no targets are registered with this load balancer"},
	NoHealthyTargets: {
		JA: "ロードバランサー {lb} に healthy なターゲットがありません: {targets}",
		EN: "load balancer {lb}: no healthy targets: {targets}"},
	UnknownTarget: {
		JA: "ターゲット {target} はこのクラウドのインスタンスではありません",
		EN: "target {target} is not an instance of this cloud"},
	TargetNotRunning: {
		JA: "ターゲット {target} は {state} なので、応答するものがいません",
		EN: "target {target} is {state}: nothing answers there"},
	InstanceNoNode: {
		JA: "インスタンス {instance} に対応する Node がありません。kubelet が登録していないので、そこには kube-proxy のルールもありません",
		EN: "instance {instance} has no Node: no kubelet registered it, so no kube-proxy rules exist there"},
	NoNodePort: {
		JA: "接続が拒否されました。NodePort {port} を持つ Service がないので、kube-proxy にはそのポートのルールがありません",
		EN: "connection refused: no Service has NodePort {port}, so kube-proxy has no rule for it"},
	ExternalLocalDrop: {
		JA: "破棄されました。ノード {node} には {service} の Ready なエンドポイントがなく、externalTrafficPolicy が Local なので他のノードへは転送しません",
		EN: "dropped: node {node} has no ready endpoint of {service}, and externalTrafficPolicy Local never forwards to another node"},
	InternalLocalDrop: {
		JA: "破棄されました。ノード {node} には {service} の Ready なエンドポイントがなく、internalTrafficPolicy が Local なので他のノードへは転送しません",
		EN: "dropped: node {node} has no ready endpoint of {service}, and internalTrafficPolicy Local never forwards to another node"},
	NoEndpoints: {
		JA: "{service} に Ready なエンドポイントがないので、kube-proxy が接続を拒否しました",
		EN: "{service} has no ready endpoints: kube-proxy rejects the connection"},
	NoPod: {
		JA: "接続が拒否されました。IP {ip} を持つ Pod がありません",
		EN: "connection refused: no Pod has IP {ip}"},
	NotAnIP: {
		JA: "「{ip}」は IP アドレスではありません",
		EN: "\"{ip}\" is not an IP address"},
	RouteBlackhole: {
		JA: "VPC ルート {cidr} -> {instance} は blackhole 状態です (インスタンスがもうありません)",
		EN: "VPC route {cidr} -> {instance} is a blackhole (the instance is gone)"},
	RouteElsewhere: {
		JA: "VPC ルート {cidr} の行き先は {instance} で、Pod が動いている {want} ではありません",
		EN: "VPC route {cidr} points to {instance}, not to {want} where the Pod runs"},
	LBCannotReachPodIP: {
		JA: "ロードバランサーは Pod IP {ip} に届きません。VPC のアドレスではなく、それを含む VPC ルートもありません (ip モードには、Amazon VPC CNI のように VPC から届く Pod IP が必要です)",
		EN: "the load balancer cannot reach Pod IP {ip}: it is not a VPC address and no VPC route covers it (ip mode needs Pod IPs the VPC can reach, as with Amazon VPC CNI)"},
	NoRoute: {
		JA: "{ip} を含む VPC ルートがありません。Route controller がノード {node} の podCIDR へのルートをまだ追加していません",
		EN: "no VPC route covers {ip}: the Route controller has not added one for node {node}'s podCIDR"},
	NotListening: {
		JA: "ロードバランサーかそのリスナーがなくなりかけています: {error}",
		EN: "the load balancer or its listener is going away: {error}"},
}
