package web

import (
	"encoding/json"
	"sort"
)

// Lang is a language the page speaks.
type Lang string

// The page's languages. Japanese comes first: the chapter the lab teaches
// is Japanese.
const (
	JA Lang = "ja"
	EN Lang = "en"
)

// Langs returns the supported languages.
func Langs() []Lang { return []Lang{JA, EN} }

func (l Lang) valid() bool { return l == JA || l == EN }

func langNames() []string { return []string{string(JA), string(EN)} }

// text is one string in both languages. A missing translation is an empty
// field, which TestCatalogComplete rejects.
type text struct{ ja, en string }

func (t text) in(l Lang) string {
	if l == JA {
		return t.ja
	}
	return t.en
}

// T returns key's text in l, or the key itself when there is none (the
// tests make sure that never ships).
func T(l Lang, key string) string {
	if t, ok := catalog[key]; ok {
		return t.in(l)
	}
	return key
}

// Strings is the whole catalog in one language, as the page's JS gets it.
func Strings(l Lang) map[string]string {
	out := make(map[string]string, len(catalog))
	for k, t := range catalog {
		out[k] = t.in(l)
	}
	return out
}

// stringsJSON is Strings(l) as JSON with sorted keys (encoding/json sorts
// map keys), with <, > and & escaped so it is safe inside a <script>.
func stringsJSON(l Lang) string {
	b, err := json.Marshal(Strings(l))
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return string(b)
}

// Keys returns every key of the catalog, sorted.
func Keys() []string {
	keys := make([]string, 0, len(catalog))
	for k := range catalog {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// catalog holds every text of the page. Placeholders in braces ({n},
// {name}) are filled in by the JS. Kubernetes and AWS names (kubectl
// columns, API actions, field paths) stay as they are in both languages:
// they are what students type and read in real output.
var catalog = map[string]text{
	// --- page ---
	"app.title":      {"ccmlab — cloud-controller-manager を観察するラボ", "ccmlab — a lab for watching the cloud-controller-manager"},
	"app.tagline":    {"EXTERNAL-IP を書くのは誰か、taint を外すのは誰か、クラウドに何を頼んだのか", "Who writes EXTERNAL-IP, who removes the taint, and what the cloud was asked"},
	"app.noscript":   {"このページは JavaScript でラボの状態をライブ表示します。JavaScript を有効にしてください。API は /api/state でも読めます。", "This page shows the lab live with JavaScript. Please enable it. The raw state is also at /api/state."},
	"app.skip":       {"6 ステップの図へ移動", "Skip to the six-step diagram"},
	"app.profile":    {"プロファイル: {name}", "Profile: {name}"},
	"lang.label":     {"言語", "Language"},
	"lang.ja":        {"日本語", "日本語"},
	"lang.en":        {"English", "English"},
	"presenter.on":   {"プレゼンターモード", "Presenter mode"},
	"presenter.hint": {"大きな文字で図を全幅に表示し、キーボードショートカットを有効にします", "Large type, the diagram full width, and keyboard shortcuts"},
	"help.open":      {"ショートカット", "Shortcuts"},
	"help.title":     {"キーボードショートカット (プレゼンターモード中)", "Keyboard shortcuts (in presenter mode)"},
	"help.intro":     {"入力欄にフォーカスがないときに使えます。プレゼンターモードを終えると無効になります。", "They work when no input field has focus, and only in presenter mode."},
	"help.close":     {"閉じる", "Close"},
	"key.service":    {"Service controller を切り替え", "Toggle the Service controller"},
	"key.node":       {"Node controller を切り替え", "Toggle the Node controller"},
	"key.route":      {"Route controller を切り替え", "Toggle the Route controller"},
	"key.lifecycle":  {"NodeLifecycle controller を切り替え", "Toggle the NodeLifecycle controller"},
	"key.lbc":        {"LB controller アドオンを切り替え", "Toggle the LB controller add-on"},
	"key.deny":       {"CreateLoadBalancer の拒否を切り替え", "Toggle denying CreateLoadBalancer"},
	"key.throttle":   {"スロットリングを切り替え", "Toggle throttling"},
	"key.latency":    {"遅延を切り替え", "Toggle latency"},
	"key.stepmode":   {"ステップモードを切り替え", "Toggle step mode"},
	"key.next":       {"次のクラウド呼び出しを進める", "Let the next cloud call through"},
	"key.send":       {"リクエストを送る", "Send a request"},
	"key.pick":       {"前 / 次の Service を選ぶ", "Previous / next Service"},
	"key.presenter":  {"プレゼンターモードを終える", "Leave presenter mode"},
	"key.help":       {"この一覧を開く", "Open this list"},

	// --- connection ---
	"conn.connecting":   {"接続中…", "Connecting…"},
	"conn.live":         {"ライブ", "Live"},
	"conn.reconnecting": {"再接続中… ({n} 回目、{s} 秒後)", "Reconnecting… (attempt {n}, in {s}s)"},
	"conn.restarting":   {"ラボが再起動中です。戻ったら自動でつなぎ直します", "The lab is restarting; the page reconnects by itself"},
	"conn.stale":        {"表示は最後に受け取った状態です", "Showing the last state received"},

	// --- regions ---
	"region.flow":     {"LoadBalancer Service ができるまでの 6 ステップ", "The six steps of a LoadBalancer Service"},
	"region.nodeinit": {"ノードの初期化", "Node initialization"},
	"region.control":  {"コントロールプレーン", "Control plane"},
	"region.cluster":  {"クラスタ", "Cluster"},
	"region.cloud":    {"クラウド", "Cloud"},

	// --- control plane ---
	"cp.apiserver":            {"すべてのオブジェクトの窓口。controller はここを watch します", "The front door for every object; controllers watch it"},
	"cp.etcd":                 {"クラスタの状態を保存します", "Stores the cluster's state"},
	"cp.kcm":                  {"--cloud-provider=external: クラウドの仕事はしません", "--cloud-provider=external: leaves cloud work to the CCM"},
	"cp.scheduler":            {"Pod をノードに割り当てます。taint の付いたノードは避けます", "Places Pods on nodes, avoiding tainted ones"},
	"cp.ccm":                  {"cloud-controller-manager (CCM)", "cloud-controller-manager (CCM)"},
	"cp.ccm.desc":             {"クラウドの API を呼ぶ controller の集まり。1 つずつ止められます", "The controllers that call the cloud's API; switch each one on or off"},
	"cp.running":              {"稼働中", "running"},
	"cp.unknown":              {"不明 (切断中)", "unknown (disconnected)"},
	"ctrl.on":                 {"ON", "ON"},
	"ctrl.off":                {"OFF", "OFF"},
	"ctrl.stopped":            {"停止中: 新しい変化に誰も反応しません", "Stopped: nobody reacts to new changes"},
	"ctrl.busy":               {"切り替え中…", "Switching…"},
	"ctrl.toggle":             {"{name} を ON/OFF", "Switch {name} on or off"},
	"ctrl.absent":             {"このプロファイルには {name} がありません", "This profile has no {name}"},
	"ctrl.node":               {"Node controller", "Node controller"},
	"ctrl.node.desc":          {"新しいノードをクラウドに問い合わせ、providerID・アドレス・ゾーンを書いて uninitialized taint を外す", "Asks the cloud about each new node, writes providerID, addresses and zone, removes the uninitialized taint"},
	"ctrl.nodelifecycle":      {"NodeLifecycle controller", "NodeLifecycle controller"},
	"ctrl.nodelifecycle.desc": {"応答しないノードの VM をクラウドに確かめ、消えていれば Node を削除、止まっていれば shutdown taint を付ける", "Checks the VM of an unresponsive node: deletes the Node if the VM is gone, adds the shutdown taint if it is stopped"},
	"ctrl.route":              {"Route controller", "Route controller"},
	"ctrl.route.desc":         {"各ノードの Pod CIDR への経路をクラウドのルートテーブルに書く", "Writes a route to each node's Pod CIDR into the cloud's route table"},
	"ctrl.service":            {"Service controller", "Service controller"},
	"ctrl.service.desc":       {"type: LoadBalancer の Service を見て LB を作り、ターゲットを登録し、status に書き戻す", "Creates a load balancer for each type: LoadBalancer Service, registers targets, writes the status back"},
	"ctrl.lbc":                {"LB controller (アドオン)", "LB controller (add-on)"},
	"ctrl.lbc.desc":           {"loadBalancerClass service.k8s.aws/nlb の Service を担当し、Pod の IP を直接ターゲットにできる", "Handles Services with loadBalancerClass service.k8s.aws/nlb and can target Pod IPs directly"},
	"dep.service":             {"{n} 個の Service が LB を待っています (EXTERNAL-IP <pending>)", "{n} Service(s) wait for a load balancer (EXTERNAL-IP <pending>)"},
	"dep.node":                {"{n} 台のノードに uninitialized taint が残っています。Pod は置かれません", "{n} node(s) keep the uninitialized taint; no Pod lands there"},
	"dep.route":               {"{n} 台のノードの Pod CIDR に経路がありません", "{n} node(s) have no route to their Pod CIDR"},
	"dep.nodelifecycle":       {"{n} 台の NotReady ノードが片付けられずに残っています", "{n} NotReady node(s) are left as they are"},
	"dep.lbc":                 {"{n} 個のクラス付き Service が待っています", "{n} Service(s) with a class are waiting"},
	"dep.none":                {"今は困っているものはありません", "Nothing is waiting on it right now"},

	// --- cluster ---
	"nodes.title":          {"ノード", "Nodes"},
	"nodes.empty":          {"ノードはまだありません", "No nodes yet"},
	"col.name":             {"NAME", "NAME"},
	"col.status":           {"STATUS", "STATUS"},
	"col.taints":           {"TAINTS", "TAINTS"},
	"col.providerID":       {"PROVIDER-ID", "PROVIDER-ID"},
	"col.zone":             {"ZONE", "ZONE"},
	"col.instanceType":     {"INSTANCE-TYPE", "INSTANCE-TYPE"},
	"col.podCIDR":          {"POD-CIDR", "POD-CIDR"},
	"col.pods":             {"PODS", "PODS"},
	"col.type":             {"TYPE", "TYPE"},
	"col.clusterIP":        {"CLUSTER-IP", "CLUSTER-IP"},
	"col.externalIP":       {"EXTERNAL-IP", "EXTERNAL-IP"},
	"col.ports":            {"PORT(S)", "PORT(S)"},
	"col.id":               {"ID", "ID"},
	"col.state":            {"STATE", "STATE"},
	"col.privateIP":        {"PRIVATE-IP", "PRIVATE-IP"},
	"col.actions":          {"操作", "ACTIONS"},
	"col.destination":      {"DESTINATION", "DESTINATION"},
	"col.target":           {"TARGET", "TARGET"},
	"col.seq":              {"#", "#"},
	"col.time":             {"TIME", "TIME"},
	"col.caller":           {"CALLER", "CALLER"},
	"col.action":           {"ACTION", "ACTION"},
	"col.request":          {"REQUEST", "REQUEST"},
	"col.result":           {"RESULT", "RESULT"},
	"col.duration":         {"DURATION", "DURATION"},
	"col.reason":           {"REASON", "REASON"},
	"col.object":           {"OBJECT", "OBJECT"},
	"col.message":          {"MESSAGE", "MESSAGE"},
	"col.from":             {"FROM", "FROM"},
	"node.notready":        {"NotReady", "NotReady"},
	"node.unknown":         {"Unknown", "Unknown"},
	"taint.uninit.short":   {"初期化待ち", "waiting for the cloud"},
	"taint.shutdown.short": {"VM 停止中", "VM stopped"},
	"none":                 {"<none>", "<none>"},
	"pods.pending":         {"ノードが決まらない Pod", "Pods without a node"},
	"pods.pending.none":    {"なし", "none"},
	"services.title":       {"Service", "Services"},
	"services.empty":       {"Service はまだありません", "No Services yet"},
	"services.pending":     {"status.loadBalancer.ingress が空 (書く担当がまだ書いていない)", "status.loadBalancer.ingress is empty (nobody has written it yet)"},
	"events.title":         {"イベント (新しい順)", "Events (newest first)"},
	"events.empty":         {"イベントはまだありません", "No events yet"},

	// --- cloud ---
	"cloud.region":           {"リージョン {name}", "Region {name}"},
	"instances.title":        {"インスタンス (VM)", "Instances (VMs)"},
	"instances.empty":        {"インスタンスはありません", "No instances"},
	"action.launch":          {"インスタンスを起動", "Launch an instance"},
	"action.launched":        {"{id} を起動しました。ノードの初期化を追います", "Launched {id}; following its node's initialization"},
	"action.stop":            {"停止", "Stop"},
	"action.start":           {"開始", "Start"},
	"action.terminate":       {"削除", "Terminate"},
	"action.stop.label":      {"{id} を停止", "Stop {id}"},
	"action.start.label":     {"{id} を開始", "Start {id}"},
	"action.terminate.label": {"{id} を削除 (terminate)", "Terminate {id}"},
	"action.failed":          {"失敗しました: {msg}", "That failed: {msg}"},
	"action.offline":         {"ラボにつながっていません", "The lab is not reachable"},
	"lbs.title":              {"ロードバランサー", "Load balancers"},
	"lbs.empty":              {"ロードバランサーはまだありません", "No load balancers yet"},
	"lb.for":                 {"Service {name} 用", "for Service {name}"},
	"lb.listeners":           {"リスナー", "Listeners"},
	"lb.curl":                {"手元で試す:", "Try it locally:"},
	"lb.targets":             {"ターゲット ({mode} モード)", "Targets ({mode} mode)"},
	"lb.notargets":           {"ターゲットはまだ登録されていません", "No targets registered yet"},
	"lb.healthcheck":         {"ヘルスチェック {proto}:{port}", "Health check {proto}:{port}"},
	"lb.nohealthcheck":       {"ヘルスチェックは未設定", "No health check yet"},
	"health.initial":         {"確認中", "checking"},
	"health.healthy":         {"正常", "healthy"},
	"health.unhealthy":       {"異常", "unhealthy"},
	"health.unused":          {"未使用", "unused"},
	"routes.title":           {"ルートテーブル", "Route table"},
	"routes.empty":           {"経路はまだありません", "No routes yet"},
	"calls.title":            {"クラウド API の呼び出しログ (新しい順)", "Cloud API call log (newest first)"},
	"calls.empty":            {"呼び出しはまだありません", "No calls yet"},
	"calls.summary":          {"{n} 件 / エラー {e} 件 / スロットリング {t} 件", "{n} calls / {e} errors / {t} throttled"},
	"call.error":             {"エラー", "ERROR"},
	"call.throttled":         {"スロットリング", "THROTTLED"},
	"call.waiting":           {"保留中", "HELD"},
	"call.running":           {"実行中", "RUNNING"},
	"faults.title":           {"障害を起こす", "Inject faults"},
	"fault.deny":             {"CreateLoadBalancer を拒否 (IAM の権限不足)", "Deny CreateLoadBalancer (missing IAM permission)"},
	"fault.throttle":         {"スロットリング (毎秒 1 回まで)", "Throttle (1 call per second)"},
	"fault.latency":          {"遅延 2 秒", "2 s latency"},
	"fault.current":          {"いまの設定: {text}", "In effect: {text}"},
	"fault.none":             {"障害なし", "no faults"},
	"stepmode.title":         {"ステップモード", "Step mode"},
	"stepmode.switch":        {"クラウド呼び出しを 1 件ずつ止める", "Hold every cloud call"},
	"stepmode.next":          {"次のクラウド呼び出しへ", "Next cloud call"},
	"stepmode.waiting":       {"{n} 件が待っています", "{n} call(s) waiting"},
	"stepmode.none":          {"待っている呼び出しはありません", "No call is waiting"},
	"stepmode.off":           {"オフ: 呼び出しはすぐに処理されます", "Off: calls go through at once"},

	// --- LB flow ---
	"flow.pick":                    {"Service", "Service"},
	"flow.none":                    {"type: LoadBalancer の Service はまだありません。kubectl で作ると、ここで 6 ステップを追えます:", "No type: LoadBalancer Service yet. Create one with kubectl and follow its six steps here:"},
	"flow.stepOf":                  {"ステップ {n} / 6 完了", "Step {n} of 6 done"},
	"flow.handler":                 {"担当: {name}", "Handled by: {name}"},
	"flow.handler.none":            {"担当: なし", "Handled by: nobody"},
	"flow.send":                    {"リクエストを送る", "Send a request"},
	"flow.send.wait":               {"LB ができると送れます", "Possible once the load balancer exists"},
	"flow.sending":                 {"送信中…", "Sending…"},
	"flow.moved":                   {"ステップ {n}: {title}", "Step {n}: {title}"},
	"status.done":                  {"完了", "done"},
	"status.current":               {"いまここ", "now"},
	"status.stuck":                 {"止まっている", "stuck"},
	"status.pending":               {"まだ", "not yet"},
	"stuck.title":                  {"ここで止まっています", "Stuck here"},
	"stuck.detail":                 {"詳細", "Details"},
	"step.apply":                   {"Service を保存", "Service stored"},
	"step.apply.desc":              {"apiserver に保存され、ClusterIP と NodePort が決まる。status は空なので EXTERNAL-IP は <pending>", "The apiserver stores it; ClusterIP and NodePort are allocated. The status is empty, so EXTERNAL-IP is <pending>"},
	"step.notice":                  {"controller が気づく", "A controller notices"},
	"step.notice.desc":             {"Service controller が watch で見つけ、finalizer を付けて EnsuringLoadBalancer を記録する", "The Service controller sees it through its watch, adds a finalizer, records EnsuringLoadBalancer"},
	"step.create":                  {"LB を作る", "LB created"},
	"step.create.desc":             {"クラウドの API で LB を作る (呼び出しログの CreateLoadBalancer)", "The cloud API creates the load balancer (CreateLoadBalancer in the call log)"},
	"step.targets":                 {"ターゲット登録", "Targets registered"},
	"step.targets.desc":            {"各ノードの NodePort (ip モードなら Pod の IP) をターゲットにし、ヘルスチェックを設定する", "Each node's NodePort (or Pod IPs in ip mode) becomes a target; the health check is set"},
	"step.status":                  {"status を書き戻す", "Status written"},
	"step.status.desc":             {"status.loadBalancer.ingress に DNS 名か IP を書く。ここで初めて EXTERNAL-IP が埋まる (EnsuredLoadBalancer)", "The DNS name or IP goes into status.loadBalancer.ingress; only now is EXTERNAL-IP filled (EnsuredLoadBalancer)"},
	"step.traffic":                 {"通信が届く", "Traffic flows"},
	"step.traffic.desc":            {"client → LB → node:NodePort → DNAT → Pod。Pod が別ノードなら 1 ホップ増える", "client → LB → node:NodePort → DNAT → Pod, one hop more when the Pod is on another node"},
	"reason.no-service-controller": {"Service controller が動いていません。この Service を見ている担当がいないので、status.loadBalancer は空のまま、EXTERNAL-IP は <pending> のままです。", "No Service controller is running. Nobody watches this Service, so status.loadBalancer stays empty and EXTERNAL-IP stays <pending>."},
	"reason.class-unhandled":       {"この Service の loadBalancerClass を担当する controller がいません。Service controller はクラス付きの Service を無視します。", "No controller handles this Service's loadBalancerClass. The Service controller ignores Services that name a class."},
	"reason.cloud-error":           {"クラウドの API がエラーを返しました。controller は時間をおいてやり直します。呼び出しログの赤い行と SyncLoadBalancerFailed イベントを見てください。", "The cloud API returned an error. The controller will retry after a while. Look at the red rows of the call log and the SyncLoadBalancerFailed event."},
	"reason.no-eligible-nodes":     {"ターゲットにできるノードがありません (Ready で初期化済みのノードがない)。", "No node can be a target (none is Ready and initialized)."},
	"reason.no-node-controller":    {"Node controller が動いていません。Node は Ready でも uninitialized taint が外れず、Pod は Pending のままです。", "No Node controller is running. The Node is Ready, but the uninitialized taint stays and Pods stay Pending."},
	"reason.instance-not-running":  {"VM が動いていません (停止か削除)。kubelet も止まっています。", "The VM is not running (stopped or terminated), so its kubelet is down too."},
	"reason.no-endpoints":          {"Service に Ready な Pod がありません。LB はできていても、リクエストの届け先がありません。", "The Service has no ready Pod. The load balancer exists, but a request would find nobody to answer."},
	"reason.unknown":               {"次のステップに進めません。", "The next step cannot happen."},

	// --- diagram and trace ---
	"dg.title":      {"Service から LB、そしてパケットが Pod に届くまでの図", "Diagram: from the Service to the load balancer, and a packet to a Pod"},
	"dg.control":    {"制御の流れ: 誰が何を書いたか", "Control path: who wrote what"},
	"dg.data":       {"データの流れ: リクエストが通った道", "Data path: where a request went"},
	"dg.service":    {"Service", "Service"},
	"dg.controller": {"controller", "controller"},
	"dg.lb":         {"クラウドの LB", "Cloud LB"},
	"dg.targets":    {"ターゲット", "Targets"},
	"dg.status":     {"EXTERNAL-IP", "EXTERNAL-IP"},
	"dg.nobody":     {"担当なし", "nobody"},
	"dg.nolb":       {"まだない", "none yet"},
	"dg.ntargets":   {"{n} 台 / 正常 {h}", "{n}, {h} healthy"},
	"dg.template":   {"リクエストを送ると、実際に通った道をここでたどります", "Send a request to follow the way it really takes"},
	"hop.client":    {"client", "client"},
	"hop.lb":        {"LB", "LB"},
	"hop.node":      {"ノード", "node"},
	"hop.nodeport":  {"NodePort", "NodePort"},
	"hop.dnat":      {"DNAT", "DNAT"},
	"hop.forward":   {"別ノードへ", "to another node"},
	"hop.pod":       {"Pod", "Pod"},
	"trace.title":   {"最後のリクエスト", "Last request"},
	"trace.answer":  {"応答 {status}", "Answered {status}"},
	"trace.failed":  {"届きませんでした ({status}): {error}", "Did not get through ({status}): {error}"},
	"trace.pod":     {"Pod {pod} (ノード {node}) が受け取り", "Pod {pod} on node {node} received it"},
	"trace.extra":   {"Pod が別のノードにいたので 1 ホップ余分にかかりました", "The Pod was on another node: one extra hop"},
	"trace.noextra": {"余分なホップはありません", "No extra hop"},
	"trace.source":  {"Pod から見た送信元: {ip} (externalTrafficPolicy: {policy})", "Source seen by the Pod: {ip} (externalTrafficPolicy: {policy})"},
	"trace.none":    {"まだリクエストを送っていません", "No request sent yet"},

	// --- node init ---
	"nodeinit.pick":            {"ノード", "Node"},
	"nodeinit.none":            {"ノードはまだありません。「インスタンスを起動」で VM を増やせます", "No node yet. \"Launch an instance\" adds a VM"},
	"nodeinit.facts":           {"providerID {pid} / ゾーン {zone} / {type} / Pod CIDR {cidr}", "providerID {pid} / zone {zone} / {type} / Pod CIDR {cidr}"},
	"nodeinit.taint":           {"taint", "taint"},
	"taint.present":            {"付いている: Pod は置かれない", "present: no Pod is placed here"},
	"taint.removed":            {"外れた: Pod を置ける", "removed: Pods may land here"},
	"taint.notyet":             {"Node はまだ登録されていません", "The Node is not registered yet"},
	"nodestep.launched":        {"VM 起動", "VM launched"},
	"nodestep.launched.desc":   {"クラウドで VM が動き始める", "The cloud starts the VM"},
	"nodestep.registered":      {"Node 登録", "Node registered"},
	"nodestep.registered.desc": {"kubelet が uninitialized taint 付きで Node を登録する", "The kubelet registers the Node with the uninitialized taint"},
	"nodestep.queried":         {"クラウドに問い合わせ", "Cloud queried"},
	"nodestep.queried.desc":    {"Node controller が VM のことをクラウドの API で調べる", "The Node controller asks the cloud API about the VM"},
	"nodestep.written":         {"情報を書き込み", "Details written"},
	"nodestep.written.desc":    {"providerID・アドレス・region/zone/instance-type の label を Node に書く", "providerID, addresses and region/zone/instance-type labels go onto the Node"},
	"nodestep.untainted":       {"taint を外す", "Taint removed"},
	"nodestep.untainted.desc":  {"uninitialized taint が外れ、scheduler がこのノードを使えるようになる", "The uninitialized taint goes; the scheduler may now use the node"},
	"nodestep.scheduled":       {"最初の Pod", "First Pod"},
	"nodestep.scheduled.desc":  {"このノードに最初の Pod が置かれる", "The first Pod is placed on the node"},

	// --- exercises ---
	"ex.toggle":            {"演習", "Exercises"},
	"ex.title":             {"演習", "Exercises"},
	"ex.intro":             {"章の内容をラボで試し、ラボの状態でチェックします。", "Do the chapter in the lab; the lab's own state says whether you got it."},
	"ex.list":              {"演習の一覧", "Exercise list"},
	"ex.loading":           {"演習を読み込み中…", "Loading the exercises…"},
	"ex.none":              {"このラボでは演習を使えません: {msg}", "Exercises are not available in this lab: {msg}"},
	"ex.pick":              {"{n}. {title}", "{n}. {title}"},
	"ex.badge":             {"{p}/{n} ステップ", "{p}/{n} steps"},
	"ex.badge.quiz":        {"クイズ {p}/{n}", "quiz {p}/{n}"},
	"ex.badge.done":        {"✓ 完了", "✓ done"},
	"ex.badge.off":         {"このラボでは不可", "not in this lab"},
	"ex.unavailable":       {"このラボでは実行できません: {msg}", "This lab cannot run it: {msg}"},
	"ex.check":             {"今すぐチェック", "Check now"},
	"ex.checking":          {"チェック中…", "Checking…"},
	"ex.reset":             {"演習をリセット", "Reset exercise"},
	"ex.reset.confirm":     {"もう一度押すとリセット", "Press again to reset"},
	"ex.reset.armed":       {"リセットすると、ラボがこの演習の開始状態に戻り、進み具合も消えます。もう一度押すと実行します。", "Reset puts the lab back to this exercise's start and clears its progress. Press again to do it."},
	"ex.resetting":         {"リセット中… (ラボが落ち着くまで最大 1 分)", "Resetting… (up to a minute while the lab settles)"},
	"ex.reset.done":        {"リセットしました。最初のステップから始めてください。", "Reset done. Start from the first step."},
	"ex.setup":             {"開始状態とリセット", "Starting state and reset"},
	"ex.progress":          {"{p} / {n} ステップ完了", "{p} of {n} steps passed"},
	"ex.checked":           {"チェックしました: {p} / {n} ステップ完了", "Checked: {p} of {n} steps passed"},
	"ex.alldone":           {"すべてのステップを完了しました!", "Every step passed!"},
	"ex.failed":            {"失敗しました: {msg}", "That failed: {msg}"},
	"ex.step":              {"ステップ {n}", "Step {n}"},
	"ex.status.passed":     {"✓ 合格", "✓ passed"},
	"ex.status.failed":     {"✗ まだ", "✗ not yet"},
	"ex.status.current":    {"▶ いまここ", "▶ now"},
	"ex.status.locked":     {"🔒 前のステップが先", "🔒 after the earlier steps"},
	"ex.commands":          {"試すコマンド", "Commands to try"},
	"ex.cmd.copy":          {"コンソールに入れる: {cmd}", "Put into the console: {cmd}"},
	"ex.cmd.terminal":      {"端末用", "terminal"},
	"ex.cmd.terminal.hint": {"パイプや sleep を使うので端末で実行します。コンソールでは kubectl の部分だけ使えます", "Uses pipes or sleep: run it in a terminal. The console runs only the kubectl part"},
	"ex.checks":            {"チェックの結果", "Check results"},
	"ex.checks.what":       {"チェックする内容: {list}", "Checked: {list}"},
	"ex.check.pass":        {"✓", "✓"},
	"ex.check.fail":        {"✗", "✗"},
	"ex.hint":              {"ヒントを見る ({n}/{m})", "Show a hint ({n}/{m})"},
	"ex.hints":             {"ヒント", "Hints"},
	"ex.explanation":       {"解説", "Why it works"},
	"ex.attempts":          {"チェック {n} 回", "{n} check(s)"},
	"ex.quiz":              {"クイズ", "Quiz"},
	"ex.quiz.correct":      {"✓ 正解", "✓ Correct"},
	"ex.quiz.wrong":        {"✗ 不正解。ほかの選択肢も試せます", "✗ Not quite. Try another choice"},
	"ex.quiz.chosen":       {"あなたの答え", "your answer"},

	// --- console ---
	"console.title":   {"kubectl コンソール", "kubectl console"},
	"console.intro":   {"ラボのクラスタに kubectl を実行できます (kubectl のみ、シェルは通しません)。↑↓ で履歴をたどれます。", "Runs kubectl against the lab's cluster (kubectl only, no shell). ↑ and ↓ walk the history."},
	"console.input":   {"kubectl コマンド", "kubectl command"},
	"console.output":  {"コンソールの出力", "Console output"},
	"console.help":    {"例: kubectl get svc / kubectl describe svc web。Enter で実行。", "For example: kubectl get svc / kubectl describe svc web. Enter runs it."},
	"console.run":     {"実行", "Run"},
	"console.clear":   {"消去", "Clear"},
	"console.running": {"実行中…", "Running…"},
	"console.refused": {"実行しませんでした: {msg}", "Not run: {msg}"},
	"console.exit":    {"終了コード {n}", "exit code {n}"},
	"console.timeout": {"時間切れで止めました", "stopped: it took too long"},
	"console.cut":     {"出力が長すぎるため途中で切りました", "the output was cut: too long"},
	"console.empty":   {"(出力なし)", "(no output)"},
	"console.error":   {"コンソールを使えません: {msg}", "The console is not available: {msg}"},

	// --- times ---
	"time.after": {"+{s} 秒", "+{s}s"},
}
