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
	// Security groups (AWS load balancers only): nothing admits the
	// packet, so AWS drops it without an answer. Like the reach keys they
	// are also a target's unhealthy reason.
	SGLoadBalancer = "fail.sg.lb"   // {lb} {groups} {port} {from}
	SGInstance     = "fail.sg.node" // {instance} {groups} {port} {from}
	// InternalFromOutside: an internal load balancer's addresses are
	// private, so a client outside the VPC has no path to it.
	InternalFromOutside = "fail.reach.internal-lb" // {lb} {from}
)

// Hop keys: what happened at a hop of a trace (Hop.DetailKey).
const (
	HopClient          = "hopd.client"           // {method} {path} {to}
	HopPicked          = "hopd.lb.picked"        // {port} {proto} {target} {tport} {health} {n} {state}
	HopPickedNLB       = "hopd.lb.picked-nlb"    // {port} {proto} {target} {tport} {health} {n} {state}
	HopPickedFailOpen  = "hopd.lb.failopen"      // {port} {proto} {target} {tport} {health} {n}
	HopArrives         = "hopd.node.arrives"     // {node} {port}
	HopNodePortCluster = "hopd.nodeport.cluster" // {port} {service} {sport} {policy} {n}
	HopNodePortLocal   = "hopd.nodeport.local"   // {port} {service} {sport} {policy} {n}
	HopDNATKept        = "hopd.dnat.kept"        // {from} {to} {client}
	HopDNATSNAT        = "hopd.dnat.snat"        // {from} {to} {client} {nip}
	HopLeaves          = "hopd.node.leaves"      // {node} {addr}
	HopClusterIPNone   = "hopd.clusterip.none"   // {addr} {service} {policy}
	HopClusterIPDNAT   = "hopd.clusterip.dnat"   // {addr} {service} {policy} {to} {client}
	HopForward         = "hopd.forward"          // {from} {to}
	HopPod             = "hopd.pod"              // {pod} {src}
)

// Via keys of an AWS load balancer's hop: what source address the
// instance sees, and the PROXY protocol header the Pod reads.
const (
	ViaELBProxy      = "via.elb.proxy"      // {src}
	ViaNLBClientIP   = "via.nlb.client-ip"  // {client}
	ViaNLBAddress    = "via.nlb.lb-ip"      // {src}
	ViaProxyProtocol = "via.proxy-protocol" // {client}
)

// Via keys: how a packet for a Pod IP travels on (Hop.ViaKey); when it
// cannot, the hop's via is one of the reach keys above.
const (
	ViaVPC     = "via.vpc"     // {ip}
	ViaRoute   = "via.route"   // {cidr} {instance}
	ViaOverlay = "via.overlay" // {node}
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
	HopClient: {
		JA: "{method} {path} を {to} へ送った",
		EN: "{method} {path} to {to}"},
	HopPicked: {
		JA: "リスナー {port}/{proto} がターゲット {target}:{tport} ({health}) へ送る。{state} のターゲット {n} 個の間でラウンドロビン",
		EN: "listener {port}/{proto} sends to target {target}:{tport} ({health}), round-robin over {n} {state} target(s)"},
	HopPickedNLB: {
		JA: "リスナー {port}/{proto} がターゲット {target}:{tport} ({health}) へ送る。{state} のターゲット {n} 個から選ぶ (本物の NLB は接続のフロー (プロトコル、送信元と宛先のアドレスとポート) のハッシュで選び、ラボは順番に選びます)",
		EN: "listener {port}/{proto} sends to target {target}:{tport} ({health}), one of {n} {state} target(s) (a real NLB picks by a hash of the connection's flow: protocol, source and destination addresses and ports; the lab takes them in turn)"},
	HopPickedFailOpen: {
		JA: "リスナー {port}/{proto} がターゲット {target}:{tport} ({health}) へ送る。{n} 個のターゲットがどれもヘルスチェックに落ちているので、NLB はフェールオープンし、状態にかかわらず全部へ送ります",
		EN: "listener {port}/{proto} sends to target {target}:{tport} ({health}): all {n} targets fail their health checks, so the NLB fails open and sends to every one of them"},
	HopArrives: {
		JA: "ノード {node} のポート {port} に届いた",
		EN: "arrives at node {node} on port {port}"},
	HopNodePortCluster: {
		JA: "kube-proxy: NodePort {port} は Service {service} のポート {sport} (externalTrafficPolicy: {policy})。使えるエンドポイントはクラスタ全体で {n} 個",
		EN: "kube-proxy: NodePort {port} is Service {service} port {sport} (externalTrafficPolicy: {policy}); {n} usable endpoint(s) in the cluster"},
	HopNodePortLocal: {
		JA: "kube-proxy: NodePort {port} は Service {service} のポート {sport} (externalTrafficPolicy: {policy})。使えるエンドポイントはこのノードに {n} 個",
		EN: "kube-proxy: NodePort {port} is Service {service} port {sport} (externalTrafficPolicy: {policy}); {n} usable endpoint(s) on this node"},
	HopDNATKept: {
		JA: "DNAT {from} -> {to}。送信元 {client} はそのまま (externalTrafficPolicy: Local)",
		EN: "DNAT {from} -> {to}; source {client} kept (externalTrafficPolicy: Local)"},
	HopDNATSNAT: {
		JA: "DNAT {from} -> {to}。送信元も {client} -> {nip} に SNAT (masquerade。応答がこのノードを通って戻るように)",
		EN: "DNAT {from} -> {to}; SNAT source {client} -> {nip} (masquerade, so the reply returns through this node)"},
	HopLeaves: {
		JA: "ノード {node} から ClusterIP {addr} へ出た",
		EN: "leaves node {node} for ClusterIP {addr}"},
	HopClusterIPNone: {
		JA: "kube-proxy: ClusterIP {addr} は Service {service} (internalTrafficPolicy: {policy})。使えるエンドポイントがない",
		EN: "kube-proxy: ClusterIP {addr} is Service {service} (internalTrafficPolicy: {policy}); no usable endpoint"},
	HopClusterIPDNAT: {
		JA: "kube-proxy: ClusterIP {addr} は Service {service} (internalTrafficPolicy: {policy})。宛先を {to} に DNAT、送信元 {client} はそのまま",
		EN: "kube-proxy: ClusterIP {addr} is Service {service} (internalTrafficPolicy: {policy}); DNAT to {to}, source {client} kept"},
	HopForward: {
		JA: "余分なホップ: {from} から、Pod のいる {to} へ",
		EN: "extra hop: {from} -> {to}, where the Pod runs"},
	HopPod: {
		JA: "Pod {pod} が送信元 {src} からのリクエストを受け取った",
		EN: "Pod {pod} receives it from source {src}"},
	ViaVPC: {
		JA: "{ip} は VPC のアドレスなので、VPC がそのまま届ける",
		EN: "{ip} is a VPC address, so the VPC delivers it directly"},
	ViaRoute: {
		JA: "VPC ルート {cidr} -> {instance} を通る",
		EN: "via VPC route {cidr} -> {instance}"},
	ViaOverlay: {
		JA: "オーバーレイネットワークを通ってノード {node} へ",
		EN: "through the overlay network to node {node}"},
	InternalFromOutside: {
		JA: "届きません。ロードバランサー {lb} は internal で、DNS 名が指すのは VPC のプライベートアドレスだけです。VPC の外のクライアント {from} からそこへ向かう経路はありません",
		EN: "unreachable: load balancer {lb} is internal, and its DNS name points only at private addresses in the VPC, which client {from} outside the VPC has no path to"},
	SGLoadBalancer: {
		JA: "ロードバランサー {lb} のセキュリティグループ {groups} に、{from} からの tcp/{port} を許可するインバウンドルールがありません",
		EN: "security groups {groups} of load balancer {lb} have no inbound rule admitting tcp/{port} from {from}"},
	SGInstance: {
		JA: "インスタンス {instance} のセキュリティグループ {groups} に、{from} からの tcp/{port} を許可するインバウンドルールがありません",
		EN: "security groups {groups} of instance {instance} have no inbound rule admitting tcp/{port} from {from}"},
	ViaELBProxy: {
		JA: "Classic ELB は TCP をプロキシするので、VPC 内の自分のアドレス {src} から新しい接続を張る (クライアントの IP はここで消える)",
		EN: "a Classic ELB proxies TCP: it opens a new connection from its own VPC address {src} (the client's IP ends here)"},
	ViaNLBClientIP: {
		JA: "NLB は instance ターゲットへクライアントの IP {client} を送信元のまま届ける (クライアント IP の保持)",
		EN: "the NLB keeps the client's IP {client} as the source for instance targets (client IP preservation)"},
	ViaNLBAddress: {
		JA: "クライアント IP の保持がオフなので、送信元は NLB の VPC 内のアドレス {src} になる",
		EN: "client IP preservation is off: the source is the NLB's VPC address {src}"},
	ViaProxyProtocol: {
		JA: "ロードバランサーが先頭に付けた PROXY ヘッダー (プロキシプロトコル) が、クライアント {client} を伝える",
		EN: "the PROXY protocol header the load balancer sent first names the client {client}"},
	NotListening: {
		JA: "ロードバランサーかそのリスナーがなくなりかけています: {error}",
		EN: "the load balancer or its listener is going away: {error}"},
}
