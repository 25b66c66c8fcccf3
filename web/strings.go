package web

import (
	"encoding/json"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

// Lang is a language the page speaks (internal/i18n's).
type Lang = i18n.Lang

// The page's languages. Japanese comes first: the chapter the lab teaches
// is Japanese.
const (
	JA = i18n.JA
	EN = i18n.EN
)

// Langs returns the supported languages.
func Langs() []Lang { return i18n.Langs() }

func langNames() []string { return []string{string(JA), string(EN)} }

// catalog is everything the page says: its own texts, the flow's
// (evidence and stuck details, which lab/flow sends as keys) and the data
// plane's (why a traced request failed, which lab/dataplane sends as
// keys). A key defined twice is a programming error, caught at start-up.
var catalog = func() i18n.Catalog {
	c, err := i18n.Merge(pageTexts, replayTexts, flowtext.Catalog(), tracetext.Catalog())
	if err != nil {
		panic("web: " + err.Error())
	}
	return c
}()

// T returns key's text in l, or the key itself when there is none (the
// tests make sure that never ships).
func T(l Lang, key string) string { return catalog.T(l, key) }

// Strings is the whole catalog in one language, as the page's JS gets it.
func Strings(l Lang) map[string]string { return catalog.In(l) }

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
func Keys() []string { return catalog.Keys() }

// pageTexts holds every text of the page itself. Placeholders in braces ({n},
// {name}) are filled in by the JS. Kubernetes and AWS names (kubectl
// columns, API actions, field paths) stay as they are in both languages:
// they are what students type and read in real output.
var pageTexts = i18n.Catalog{
	// --- page ---
	"app.title":      {JA: "ccmlab — cloud-controller-manager を観察するラボ", EN: "ccmlab — a lab for watching the cloud-controller-manager"},
	"app.tagline":    {JA: "EXTERNAL-IP を書くのは誰か、taint を外すのは誰か、クラウドに何を頼んだのか", EN: "Who writes EXTERNAL-IP, who removes the taint, and what the cloud was asked"},
	"app.noscript":   {JA: "このページは JavaScript でラボの状態をライブ表示します。JavaScript を有効にしてください。API は /api/state でも読めます。", EN: "This page shows the lab live with JavaScript. Please enable it. The raw state is also at /api/state."},
	"app.skip":       {JA: "6 ステップの図へ移動", EN: "Skip to the six-step diagram"},
	"app.profile":    {JA: "プロファイル: {name}", EN: "Profile: {name}"},
	"lang.label":     {JA: "言語", EN: "Language"},
	"lang.ja":        {JA: "日本語", EN: "日本語"},
	"lang.en":        {JA: "English", EN: "English"},
	"presenter.on":   {JA: "プレゼンターモード", EN: "Presenter mode"},
	"presenter.hint": {JA: "プロジェクター向け: 6 ステップと地図だけを大きな文字で表示し、キーボードショートカットを有効にします", EN: "For a projector: the six steps and the map only, in large type, with keyboard shortcuts"},
	"help.open":      {JA: "ショートカット", EN: "Shortcuts"},
	"help.title":     {JA: "キーボードショートカット (プレゼンターモード中)", EN: "Keyboard shortcuts (in presenter mode)"},
	"help.intro":     {JA: "入力欄にフォーカスがないときに使えます。プレゼンターモードを終えると無効になります。", EN: "They work when no input field has focus, and only in presenter mode."},
	"help.close":     {JA: "閉じる", EN: "Close"},
	"key.service":    {JA: "Service controller を切り替え", EN: "Toggle the Service controller"},
	"key.node":       {JA: "Node controller を切り替え", EN: "Toggle the Node controller"},
	"key.route":      {JA: "Route controller を切り替え", EN: "Toggle the Route controller"},
	"key.lifecycle":  {JA: "NodeLifecycle controller を切り替え", EN: "Toggle the NodeLifecycle controller"},
	"key.lbc":        {JA: "LB controller アドオンを切り替え", EN: "Toggle the LB controller add-on"},
	"key.deny":       {JA: "CreateLoadBalancer の拒否を切り替え", EN: "Toggle denying CreateLoadBalancer"},
	"key.throttle":   {JA: "スロットリングを切り替え", EN: "Toggle throttling"},
	"key.latency":    {JA: "遅延を切り替え", EN: "Toggle latency"},
	"key.stepmode":   {JA: "ステップモードを切り替え", EN: "Toggle step mode"},
	"key.next":       {JA: "次のクラウド呼び出しを進める", EN: "Let the next cloud call through"},
	"key.send":       {JA: "リクエストを送る", EN: "Send a request"},
	"key.pick":       {JA: "前 / 次の Service を選ぶ", EN: "Previous / next Service"},
	"key.presenter":  {JA: "プレゼンターモードを終える", EN: "Leave presenter mode"},
	"key.help":       {JA: "この一覧を開く", EN: "Open this list"},

	// --- connection ---
	"conn.connecting":   {JA: "接続中…", EN: "Connecting…"},
	"conn.live":         {JA: "ライブ", EN: "Live"},
	"conn.reconnecting": {JA: "再接続中… ({n} 回目、{s} 秒後)", EN: "Reconnecting… (attempt {n}, in {s}s)"},
	"conn.restarting":   {JA: "ラボが再起動中です。戻ったら自動でつなぎ直します", EN: "The lab is restarting; the page reconnects by itself"},
	"conn.stale":        {JA: "表示は最後に受け取った状態です", EN: "Showing the last state received"},
	"disk.full": {JA: "ラボのデータディレクトリのディスクがいっぱいです（{dir}）。ラボは動いていますが、空きができるまで変更は保存されず、インスタンスの操作は断られます。空きができれば自動で戻ります",
		EN: "The disk of the lab's data dir is full ({dir}). The lab keeps running, but until space is freed nothing new is saved and instance actions are refused. It recovers by itself once there is room"},
	"disk.etcdFull": {JA: "クラスタのデータベース (etcd) がいっぱいです (etcdserver: mvcc: database space exceeded)。ラボは動いていますが、空きができるまでクラスタへの書き込み (controller の切り替え、演習のリセット、kubectl apply など) は断られます。読み取りと、更新を伴わない削除 (finalizer も猶予期間もないもの) はできます。要らないオブジェクトを消すか、データディレクトリのディスクを空ければ、自動で戻ります",
		EN: "The cluster's database (etcd) is full (etcdserver: mvcc: database space exceeded). The lab keeps running, but until there is room writes to the cluster (controller switches, exercise resets, kubectl apply) are refused; reads still work, and so do deletions that need no update first (no finalizer, no grace period). Delete objects you no longer need, or free space on the data dir's disk, and it recovers by itself"},

	// --- regions ---
	"region.flow":     {JA: "LoadBalancer Service ができるまでの 6 ステップ", EN: "The six steps of a LoadBalancer Service"},
	"region.nodeinit": {JA: "ノードの初期化", EN: "Node initialization"},
	"region.control":  {JA: "コントロールプレーン", EN: "Control plane"},
	"region.cluster":  {JA: "クラスタ", EN: "Cluster"},
	"region.cloud":    {JA: "クラウド", EN: "Cloud"},

	"flow.strip": {JA: "6 ステップの進み具合 (各ステップの状態を記号と言葉で示します)", EN: "Progress of the six steps (each step's state as a glyph and a word)"},
	// The live map (static/js/map.js).
	"region.map":              {JA: "クラウドとクラスタの地図", EN: "Map of the cloud and the cluster"},
	"map.title":               {JA: "リージョン、ゾーンごとのインスタンスと Pod、LB とそのターゲット、ルートテーブル、CCM の controller の地図", EN: "Map: the region, instances and Pods per zone, load balancers and their targets, the route table, and the CCM controllers"},
	"map.legend":              {JA: "ノード: ✓ Ready ⚑ uninitialized taint あり ✗ NotReady ■ 停止 ✕ 終了 ◔ 起動中。LB の線: ✓ 正常 ✗ 異常 … 確認中。controller のクラウド呼び出しは、触れたものへ光る線で表示します。", EN: "Nodes: ✓ Ready ⚑ uninitialized taint ✗ NotReady ■ shut down ✕ gone ◔ booting. LB lines: ✓ healthy ✗ unhealthy … checking. A controller's cloud calls flash towards what they touch."},
	"map.text":                {JA: "地図の内容を文字で読む", EN: "The map as text"},
	"map.region":              {JA: "リージョン {region}", EN: "Region {region}"},
	"map.zone":                {JA: "ゾーン {zone}", EN: "Zone {zone}"},
	"map.state.launching":     {JA: "起動待ち", EN: "launching"},
	"map.state.booting":       {JA: "起動中 (Node はまだない)", EN: "booting (no Node yet)"},
	"map.state.uninitialized": {JA: "初期化待ち", EN: "uninitialized"},
	"map.state.ready":         {JA: "Ready (準備完了)", EN: "Ready"},
	"map.state.notready":      {JA: "NotReady (応答なし)", EN: "NotReady"},
	"map.state.shutdown":      {JA: "停止 (shutdown)", EN: "shut down"},
	"map.state.gone":          {JA: "終了 (消えた)", EN: "gone"},
	"map.taint":               {JA: "uninitialized taint あり", EN: "uninitialized taint"},
	"map.controlPlane":        {JA: "コントロールプレーン", EN: "control plane"},
	"map.pods":                {JA: "Pod {n} 個", EN: "{n} Pods"},
	"map.pods.none":           {JA: "Pod なし", EN: "no Pods"},
	"map.unscheduled":         {JA: "置き場所のない Pod {n} 個", EN: "{n} Pods not scheduled"},
	"map.lb.targets":          {JA: "ターゲット {n} 個 / 正常 {h}", EN: "{n} targets, {h} healthy"},
	"map.routes":              {JA: "ルートテーブル (Pod CIDR → インスタンス)", EN: "Route table (Pod CIDR → instance)"},
	"map.text.lb":             {JA: "ロードバランサー {name}", EN: "Load balancer {name}"},

	// --- control plane ---
	"cp.apiserver":            {JA: "すべてのオブジェクトの窓口。controller はここを watch します", EN: "The front door for every object; controllers watch it"},
	"cp.etcd":                 {JA: "クラスタの状態を保存します", EN: "Stores the cluster's state"},
	"cp.kcm":                  {JA: "--cloud-provider=external: クラウドの仕事はしません", EN: "--cloud-provider=external: leaves cloud work to the CCM"},
	"cp.scheduler":            {JA: "Pod をノードに割り当てます。Pod が許容 (toleration) しない NoSchedule か NoExecute の taint があるノードには置きません", EN: "Places Pods on nodes, never on one with a NoSchedule or NoExecute taint the Pod does not tolerate"},
	"cp.ccm":                  {JA: "cloud-controller-manager (CCM)", EN: "cloud-controller-manager (CCM)"},
	"cp.ccm.desc":             {JA: "クラウドの API を呼ぶ controller の集まり。1 つずつ止められます", EN: "The controllers that call the cloud's API; switch each one on or off"},
	"cp.running":              {JA: "稼働中", EN: "running"},
	"cp.unknown":              {JA: "不明 (切断中)", EN: "unknown (disconnected)"},
	"ctrl.on":                 {JA: "ON", EN: "ON"},
	"ctrl.off":                {JA: "OFF", EN: "OFF"},
	"ctrl.stopped":            {JA: "停止中: 新しい変化に誰も反応しません", EN: "Stopped: nobody reacts to new changes"},
	"ctrl.busy":               {JA: "切り替え中…", EN: "Switching…"},
	"ctrl.toggle":             {JA: "{name} を ON/OFF", EN: "Switch {name} on or off"},
	"ctrl.absent":             {JA: "このプロファイルには {name} がありません", EN: "This profile has no {name}"},
	"ctrl.node":               {JA: "Node controller", EN: "Node controller"},
	"ctrl.node.desc":          {JA: "新しいノードをクラウドに問い合わせ、providerID・アドレス・ゾーンを書いて uninitialized taint を外す", EN: "Asks the cloud about each new node, writes providerID, addresses and zone, removes the uninitialized taint"},
	"ctrl.nodelifecycle":      {JA: "NodeLifecycle controller", EN: "NodeLifecycle controller"},
	"ctrl.nodelifecycle.desc": {JA: "応答しないノードの VM をクラウドに確かめ、消えていれば Node を削除、止まっていれば shutdown taint を付ける", EN: "Checks the VM of an unresponsive node: deletes the Node if the VM is gone, adds the shutdown taint if it is stopped"},
	"ctrl.route":              {JA: "Route controller", EN: "Route controller"},
	"ctrl.route.desc":         {JA: "各ノードの Pod CIDR への経路をクラウドのルートテーブルに書く", EN: "Writes a route to each node's Pod CIDR into the cloud's route table"},
	"ctrl.service":            {JA: "Service controller", EN: "Service controller"},
	"ctrl.service.desc":       {JA: "type: LoadBalancer の Service を見て LB を作り、ターゲットを登録し、status に書き戻す", EN: "Creates a load balancer for each type: LoadBalancer Service, registers targets, writes the status back"},
	"ctrl.lbc":                {JA: "LB controller (アドオン)", EN: "LB controller (add-on)"},
	"ctrl.lbc.desc":           {JA: "loadBalancerClass service.k8s.aws/nlb の Service を担当し、Pod の IP を直接ターゲットにできる", EN: "Handles Services with loadBalancerClass service.k8s.aws/nlb and can target Pod IPs directly"},
	"dep.service":             {JA: "{n} 個の Service が LB を待っています (EXTERNAL-IP <pending>)", EN: "{n} Service(s) wait for a load balancer (EXTERNAL-IP <pending>)"},
	"dep.node":                {JA: "{n} 台のノードに uninitialized taint が残っています。Pod は置かれません", EN: "{n} node(s) keep the uninitialized taint; no Pod lands there"},
	"dep.route":               {JA: "{n} 台のノードの Pod CIDR に経路がありません", EN: "{n} node(s) have no route to their Pod CIDR"},
	"dep.nodelifecycle":       {JA: "{n} 台の NotReady ノードが片付けられずに残っています", EN: "{n} NotReady node(s) are left as they are"},
	"dep.lbc":                 {JA: "{n} 個のクラス付き Service が待っています", EN: "{n} Service(s) with a class are waiting"},
	"dep.none":                {JA: "今は困っているものはありません", EN: "Nothing is waiting on it right now"},

	// --- cluster ---
	"nodes.title":        {JA: "ノード", EN: "Nodes"},
	"nodes.empty":        {JA: "ノードはまだありません", EN: "No nodes yet"},
	"col.name":           {JA: "NAME", EN: "NAME"},
	"col.status":         {JA: "STATUS", EN: "STATUS"},
	"col.taints":         {JA: "TAINTS", EN: "TAINTS"},
	"col.providerID":     {JA: "PROVIDER-ID", EN: "PROVIDER-ID"},
	"col.zone":           {JA: "ZONE", EN: "ZONE"},
	"col.instanceType":   {JA: "INSTANCE-TYPE", EN: "INSTANCE-TYPE"},
	"col.podCIDR":        {JA: "POD-CIDR", EN: "POD-CIDR"},
	"col.pods":           {JA: "PODS", EN: "PODS"},
	"col.type":           {JA: "TYPE", EN: "TYPE"},
	"col.clusterIP":      {JA: "CLUSTER-IP", EN: "CLUSTER-IP"},
	"col.externalIP":     {JA: "EXTERNAL-IP", EN: "EXTERNAL-IP"},
	"col.ports":          {JA: "PORT(S)", EN: "PORT(S)"},
	"col.id":             {JA: "ID", EN: "ID"},
	"col.state":          {JA: "STATE", EN: "STATE"},
	"col.privateIP":      {JA: "PRIVATE-IP", EN: "PRIVATE-IP"},
	"col.actions":        {JA: "操作", EN: "ACTIONS"},
	"col.destination":    {JA: "DESTINATION", EN: "DESTINATION"},
	"col.target":         {JA: "TARGET", EN: "TARGET"},
	"col.seq":            {JA: "#", EN: "#"},
	"col.time":           {JA: "TIME", EN: "TIME"},
	"col.caller":         {JA: "CALLER", EN: "CALLER"},
	"col.action":         {JA: "ACTION", EN: "ACTION"},
	"col.request":        {JA: "REQUEST", EN: "REQUEST"},
	"col.result":         {JA: "RESULT", EN: "RESULT"},
	"col.duration":       {JA: "DURATION", EN: "DURATION"},
	"col.reason":         {JA: "REASON", EN: "REASON"},
	"col.object":         {JA: "OBJECT", EN: "OBJECT"},
	"col.message":        {JA: "MESSAGE", EN: "MESSAGE"},
	"col.from":           {JA: "FROM", EN: "FROM"},
	"node.notready":      {JA: "NotReady (応答なし)", EN: "NotReady"},
	"node.unknown":       {JA: "Unknown", EN: "Unknown"},
	"taint.uninit.short": {JA: "初期化待ち", EN: "waiting for the cloud"},
	// The taint as the kubelet registers a node with it, for the replay of
	// a node's initialization (the page holds no Kubernetes key itself).
	"taint.uninit.full":    {JA: flow.UninitializedTaint, EN: flow.UninitializedTaint},
	"taint.shutdown.short": {JA: "VM 停止中", EN: "VM stopped"},
	"none":                 {JA: "<none>", EN: "<none>"},
	"pods.pending":         {JA: "ノードが決まらない Pod", EN: "Pods without a node"},
	"pods.pending.none":    {JA: "なし", EN: "none"},
	"services.title":       {JA: "Service", EN: "Services"},
	"services.empty":       {JA: "Service はまだありません", EN: "No Services yet"},
	"services.pending":     {JA: "status.loadBalancer.ingress が空 (書く担当がまだ書いていない)", EN: "status.loadBalancer.ingress is empty (nobody has written it yet)"},
	"events.title":         {JA: "イベント (新しい順)", EN: "Events (newest first)"},
	"events.empty":         {JA: "イベントはまだありません", EN: "No events yet"},

	// --- cloud ---
	"cloud.region":           {JA: "リージョン {name}", EN: "Region {name}"},
	"instances.title":        {JA: "インスタンス (VM)", EN: "Instances (VMs)"},
	"instances.empty":        {JA: "インスタンスはありません", EN: "No instances"},
	"action.launch":          {JA: "インスタンスを起動", EN: "Launch an instance"},
	"action.launched":        {JA: "{id} を起動しました。ノードの初期化を追います", EN: "Launched {id}; following its node's initialization"},
	"action.stop":            {JA: "停止", EN: "Stop"},
	"action.start":           {JA: "開始", EN: "Start"},
	"action.terminate":       {JA: "削除", EN: "Terminate"},
	"action.stop.label":      {JA: "{id} を停止", EN: "Stop {id}"},
	"action.start.label":     {JA: "{id} を開始", EN: "Start {id}"},
	"action.terminate.label": {JA: "{id} を削除 (terminate)", EN: "Terminate {id}"},
	"action.failed":          {JA: "失敗しました: {msg}", EN: "That failed: {msg}"},
	"action.offline":         {JA: "ラボにつながっていません", EN: "The lab is not reachable"},
	"lbs.title":              {JA: "ロードバランサー", EN: "Load balancers"},
	"lbs.empty":              {JA: "ロードバランサーはまだありません", EN: "No load balancers yet"},
	"lb.for":                 {JA: "Service {name} 用", EN: "for Service {name}"},
	"lb.listeners":           {JA: "リスナー", EN: "Listeners"},
	"lb.kind.classic":        {JA: "Classic ELB (クラシックロードバランサー)", EN: "Classic ELB"},
	"lb.kind.network":        {JA: "NLB (ネットワークロードバランサー)", EN: "NLB (Network Load Balancer)"},
	"lb.curl":                {JA: "手元で試す:", EN: "Try it locally:"},
	"lb.targets":             {JA: "ターゲット ({mode} モード)", EN: "Targets ({mode} mode)"},
	"lb.notargets":           {JA: "ターゲットはまだ登録されていません", EN: "No targets registered yet"},
	"lb.healthcheck":         {JA: "ヘルスチェック {proto}:{port}", EN: "Health check {proto}:{port}"},
	"lb.nohealthcheck":       {JA: "ヘルスチェックは未設定", EN: "No health check yet"},
	"health.initial":         {JA: "確認中", EN: "checking"},
	"health.healthy":         {JA: "正常", EN: "healthy"},
	"health.unhealthy":       {JA: "異常", EN: "unhealthy"},
	"health.unused":          {JA: "未使用", EN: "unused"},
	"routes.title":           {JA: "ルートテーブル", EN: "Route table"},
	"routes.empty":           {JA: "経路はまだありません", EN: "No routes yet"},
	"calls.title":            {JA: "クラウド API の呼び出しログ (新しい順)", EN: "Cloud API call log (newest first)"},
	"calls.empty":            {JA: "呼び出しはまだありません", EN: "No calls yet"},
	"calls.summary":          {JA: "{n} 件 / エラー {e} 件 / スロットリング {t} 件", EN: "{n} calls / {e} errors / {t} throttled"},
	"call.error":             {JA: "エラー", EN: "ERROR"},
	"call.throttled":         {JA: "スロットリング", EN: "THROTTLED"},
	"call.waiting":           {JA: "保留中", EN: "HELD"},
	"call.running":           {JA: "実行中", EN: "RUNNING"},
	"faults.title":           {JA: "障害を起こす", EN: "Inject faults"},
	"fault.deny":             {JA: "CreateLoadBalancer を拒否 (IAM の権限不足)", EN: "Deny CreateLoadBalancer (missing IAM permission)"},
	"fault.throttle":         {JA: "スロットリング (毎秒 1 回まで)", EN: "Throttle (1 call per second)"},
	"fault.latency":          {JA: "遅延 2 秒", EN: "2 s latency"},
	"fault.current":          {JA: "いまの設定: {text}", EN: "In effect: {text}"},
	"fault.none":             {JA: "障害なし", EN: "no faults"},
	"stepmode.title":         {JA: "ステップモード", EN: "Step mode"},
	"stepmode.switch":        {JA: "クラウド呼び出しを 1 件ずつ止める", EN: "Hold every cloud call"},
	"stepmode.next":          {JA: "次のクラウド呼び出しへ", EN: "Next cloud call"},
	"stepmode.waiting":       {JA: "{n} 件が待っています", EN: "{n} call(s) waiting"},
	"stepmode.none":          {JA: "待っている呼び出しはありません", EN: "No call is waiting"},
	"stepmode.off":           {JA: "オフ: 呼び出しはすぐに処理されます", EN: "Off: calls go through at once"},

	// --- LB flow ---
	"flow.pick":                    {JA: "Service", EN: "Service"},
	"flow.none":                    {JA: "type: LoadBalancer の Service はまだありません。kubectl で作ると、ここで 6 ステップを追えます:", EN: "No type: LoadBalancer Service yet. Create one with kubectl and follow its six steps here:"},
	"flow.stepOf":                  {JA: "ステップ {n} / 6 完了", EN: "Step {n} of 6 done"},
	"flow.handler":                 {JA: "担当: {name}", EN: "Handled by: {name}"},
	"flow.handler.none":            {JA: "担当: なし", EN: "Handled by: nobody"},
	"flow.send":                    {JA: "リクエストを送る", EN: "Send a request"},
	"flow.send.kind":               {JA: "リクエストの入り口", EN: "Where the request enters"},
	"flow.kind.loadbalancer":       {JA: "ロードバランサー経由", EN: "via the load balancer"},
	"flow.kind.nodeport":           {JA: "NodePort 経由", EN: "via a NodePort"},
	"flow.kind.clusterip":          {JA: "ClusterIP 経由 (クラスタ内から)", EN: "via the ClusterIP (from inside)"},
	"flow.send.wait":               {JA: "LB ができると送れます", EN: "Possible once the load balancer exists"},
	"flow.sending":                 {JA: "送信中…", EN: "Sending…"},
	"flow.moved":                   {JA: "ステップ {n}: {title}", EN: "Step {n}: {title}"},
	"status.done":                  {JA: "完了", EN: "done"},
	"status.current":               {JA: "いまここ", EN: "now"},
	"status.stuck":                 {JA: "止まっている", EN: "stuck"},
	"status.pending":               {JA: "まだ", EN: "not yet"},
	"stuck.title":                  {JA: "ここで止まっています", EN: "Stuck here"},
	"stuck.detail":                 {JA: "詳細", EN: "Details"},
	"step.apply":                   {JA: "Service を保存", EN: "Service stored"},
	"step.apply.desc":              {JA: "apiserver に保存され、ClusterIP と NodePort が決まる。status は空なので EXTERNAL-IP は <pending>", EN: "The apiserver stores it; ClusterIP and NodePort are allocated. The status is empty, so EXTERNAL-IP is <pending>"},
	"step.notice":                  {JA: "controller が気づく", EN: "A controller notices"},
	"step.notice.desc":             {JA: "担当の controller (Service controller、loadBalancerClass があればそのクラスのアドオン) が watch で見つけ、イベントを記録してから (Service controller なら EnsuringLoadBalancer) finalizer を付ける", EN: "The controller in charge (the Service controller, or the add-on of the Service's loadBalancerClass) sees it through its watch, records an event (EnsuringLoadBalancer from the Service controller), then adds a finalizer"},
	"step.create":                  {JA: "LB を作る", EN: "LB created"},
	"step.create.desc":             {JA: "クラウドの API で LB を作る (呼び出しログの CreateLoadBalancer。cloud-provider-aws なら Classic ELB は elb の、NLB は elbv2 の CreateLoadBalancer)", EN: "The cloud API creates the load balancer (CreateLoadBalancer in the call log; with cloud-provider-aws, elb's for a Classic ELB, elbv2's for an NLB)"},
	"step.targets":                 {JA: "ターゲット登録", EN: "Targets registered"},
	"step.targets.desc":            {JA: "各ノードの NodePort (ip モードなら Pod の IP) をターゲットにし、ヘルスチェックを設定する (RegisterTargets と ConfigureHealthCheck。Classic ELB なら RegisterInstancesWithLoadBalancer と ConfigureHealthCheck、NLB なら CreateTargetGroup、RegisterTargets、CreateListener)", EN: "Each node's NodePort (or Pod IPs in ip mode) becomes a target; the health check is set (RegisterTargets and ConfigureHealthCheck; on a Classic ELB RegisterInstancesWithLoadBalancer and ConfigureHealthCheck, on an NLB CreateTargetGroup, RegisterTargets and CreateListener)"},
	"step.status":                  {JA: "status を書き戻す", EN: "Status written"},
	"step.status.desc":             {JA: "status.loadBalancer.ingress に DNS 名か IP を書く。ここで初めて EXTERNAL-IP が埋まる (EnsuredLoadBalancer)", EN: "The DNS name or IP goes into status.loadBalancer.ingress; only now is EXTERNAL-IP filled (EnsuredLoadBalancer)"},
	"step.traffic":                 {JA: "通信が届く", EN: "Traffic flows"},
	"step.traffic.desc":            {JA: "instance ターゲットなら client → LB → node:NodePort → DNAT → Pod (Pod が別ノードなら 1 ホップ増える)。ip ターゲットなら client → LB → Pod", EN: "Instance targets: client → LB → node:NodePort → DNAT → Pod, one hop more when the Pod is on another node. IP targets: client → LB → Pod"},
	"reason.no-service-controller": {JA: "Service controller が動いていません。この Service を見ている担当がいないので、status.loadBalancer は空のまま、EXTERNAL-IP は <pending> のままです。", EN: "No Service controller is running. Nobody watches this Service, so status.loadBalancer stays empty and EXTERNAL-IP stays <pending>."},
	"reason.class-unhandled":       {JA: "この Service の loadBalancerClass を担当する controller がいません。Service controller はクラス付きの Service を無視します。", EN: "No controller handles this Service's loadBalancerClass. The Service controller ignores Services that name a class."},
	"reason.cloud-error":           {JA: "クラウドの API がエラーを返しました。controller は時間をおいてやり直します。呼び出しログの赤い行と SyncLoadBalancerFailed イベントを見てください。", EN: "The cloud API returned an error. The controller will retry after a while. Look at the red rows of the call log and the SyncLoadBalancerFailed event."},
	"reason.no-eligible-nodes":     {JA: "Service controller がロードバランサーに渡せるノードがありません。どのノードも削除中か、ラベル node.kubernetes.io/exclude-from-external-load-balancers か taint ToBeDeletedByClusterAutoscaler で除外されています (Ready かどうかは見ません)。ロードバランサーは作られ EXTERNAL-IP も入りますが、ターゲットは無く、イベント UnAvailableLoadBalancer が記録されます。", EN: "The Service controller has no node to give the load balancer: every node is being deleted or excluded by the label node.kubernetes.io/exclude-from-external-load-balancers or the ToBeDeletedByClusterAutoscaler taint (readiness is not checked). The load balancer is still created and EXTERNAL-IP appears, but there are no targets, and the event UnAvailableLoadBalancer is recorded."},
	"reason.no-node-controller":    {JA: "Node controller が動いていません。Node は Ready でも uninitialized taint が外れず、Pod は Pending のままです。", EN: "No Node controller is running. The Node is Ready, but the uninitialized taint stays and Pods stay Pending."},
	"reason.instance-not-running":  {JA: "VM が動いていません (停止か削除)。kubelet も止まっています。", EN: "The VM is not running (stopped or terminated), so its kubelet is down too."},
	"reason.no-endpoints":          {JA: "Service に Ready な Pod がありません。LB はできていても、リクエストの届け先がありません。", EN: "The Service has no ready Pod. The load balancer exists, but a request would find nobody to answer."},
	"reason.unknown":               {JA: "次のステップに進めません。", EN: "The next step cannot happen."},
	// During the diagnosis challenge the box says what is seen, so that
	// it does not name the hidden cause; causes that look alike read alike.
	"symptom.no-service-controller": {JA: "この Service にはイベントも status もまだありません。何もこの Service に手を付けていません。", EN: "This Service has no event and no status yet: nothing has acted on it."},
	"symptom.class-unhandled":       {JA: "この Service にはイベントも status もまだありません。何もこの Service に手を付けていません。", EN: "This Service has no event and no status yet: nothing has acted on it."},
	"symptom.cloud-error":           {JA: "ロードバランサーを作る途中で失敗しています。Service のイベントとコールログを読んでください。", EN: "Making the load balancer fails along the way. Read the Service's events and the call log."},
	"symptom.no-eligible-nodes":     {JA: "ロードバランサーはありますが、ターゲットがありません。", EN: "The load balancer exists, but it has no targets."},
	"symptom.no-node-controller":    {JA: "この Node にはまだ Pod を置けません。", EN: "Pods cannot be placed on this Node yet."},
	"symptom.instance-not-running":  {JA: "この Node の VM が応答しません。", EN: "This Node's VM does not answer."},
	"symptom.no-endpoints":          {JA: "ロードバランサーの後ろで答える Pod がありません。", EN: "No Pod answers behind the load balancer."},
	"symptom.unknown":               {JA: "次のステップに進みません。", EN: "The next step does not happen."},

	// --- diagram and trace ---
	"dg.title":      {JA: "Service から LB、そしてパケットが Pod に届くまでの図", EN: "Diagram: from the Service to the load balancer, and a packet to a Pod"},
	"dg.control":    {JA: "制御の流れ: 誰が何を書いたか", EN: "Control path: who wrote what"},
	"dg.data":       {JA: "データの流れ: リクエストが通った道", EN: "Data path: where a request went"},
	"dg.service":    {JA: "Service", EN: "Service"},
	"dg.controller": {JA: "controller", EN: "controller"},
	"dg.lb":         {JA: "クラウドの LB", EN: "Cloud LB"},
	"dg.targets":    {JA: "ターゲット", EN: "Targets"},
	"dg.status":     {JA: "EXTERNAL-IP", EN: "EXTERNAL-IP"},
	"dg.nobody":     {JA: "担当なし", EN: "nobody"},
	"dg.nolb":       {JA: "まだない", EN: "none yet"},
	"dg.ntargets":   {JA: "{n} 台 / 正常 {h}", EN: "{n}, {h} healthy"},
	"dg.template":   {JA: "リクエストを送ると、実際に通った道をここでたどります", EN: "Send a request to follow the way it really takes"},
	"hop.client":    {JA: "client", EN: "client"},
	"hop.lb":        {JA: "LB", EN: "LB"},
	"hop.node":      {JA: "ノード", EN: "node"},
	"hop.nodeport":  {JA: "NodePort", EN: "NodePort"},
	"hop.dnat":      {JA: "DNAT", EN: "DNAT"},
	"hop.forward":   {JA: "別ノードへ", EN: "to another node"},
	"hop.pod":       {JA: "Pod", EN: "Pod"},
	"hop.via":       {JA: "{what}。{via}", EN: "{what}; {via}"},
	"trace.title":   {JA: "最後のリクエスト", EN: "Last request"},
	"trace.answer":  {JA: "応答 {status}", EN: "Answered {status}"},
	"trace.failed":  {JA: "届きませんでした ({status}): {error}", EN: "Did not get through ({status}): {error}"},
	"trace.pod":     {JA: "Pod {pod} (ノード {node}) が受け取り", EN: "Pod {pod} on node {node} received it"},
	"trace.extra":   {JA: "Pod が別のノードにいたので 1 ホップ余分にかかりました", EN: "The Pod was on another node: one extra hop"},
	"trace.noextra": {JA: "余分なホップはありません", EN: "No extra hop"},
	"trace.source":  {JA: "Pod から見た送信元: {ip} (externalTrafficPolicy: {policy})", EN: "Source seen by the Pod: {ip} (externalTrafficPolicy: {policy})"},
	"trace.none":    {JA: "まだリクエストを送っていません", EN: "No request sent yet"},

	// --- node init ---
	"nodeinit.pick":            {JA: "ノード", EN: "Node"},
	"nodeinit.none":            {JA: "ノードはまだありません。「インスタンスを起動」で VM を増やせます", EN: "No node yet. \"Launch an instance\" adds a VM"},
	"nodeinit.facts":           {JA: "providerID {pid} / ゾーン {zone} / {type} / Pod CIDR {cidr}", EN: "providerID {pid} / zone {zone} / {type} / Pod CIDR {cidr}"},
	"nodeinit.taint":           {JA: "taint", EN: "taint"},
	"taint.present":            {JA: "付いている: Pod は置かれない", EN: "present: no Pod is placed here"},
	"taint.removed":            {JA: "外れた: Pod を置ける", EN: "removed: Pods may land here"},
	"taint.notyet":             {JA: "Node はまだ登録されていません", EN: "The Node is not registered yet"},
	"nodestep.launched":        {JA: "VM 起動", EN: "VM launched"},
	"nodestep.launched.desc":   {JA: "クラウドで VM が動き始める", EN: "The cloud starts the VM"},
	"nodestep.registered":      {JA: "Node 登録", EN: "Node registered"},
	"nodestep.registered.desc": {JA: "kubelet が uninitialized taint 付きで Node を登録する", EN: "The kubelet registers the Node with the uninitialized taint"},
	"nodestep.queried":         {JA: "クラウドに問い合わせ", EN: "Cloud queried"},
	"nodestep.queried.desc":    {JA: "Node controller が VM のことをクラウドの API で調べる", EN: "The Node controller asks the cloud API about the VM"},
	"nodestep.written":         {JA: "情報を書き込み", EN: "Details written"},
	"nodestep.written.desc":    {JA: "providerID と region/zone/instance-type の label を Node に書く (アドレスはこの直後に status へ)", EN: "providerID and the region/zone/instance-type labels go onto the Node (the addresses follow, in its status)"},
	"nodestep.untainted":       {JA: "taint を外す", EN: "Taint removed"},
	"nodestep.untainted.desc":  {JA: "uninitialized taint が外れ、scheduler がこのノードを使えるようになる", EN: "The uninitialized taint goes; the scheduler may now use the node"},
	"nodestep.scheduled":       {JA: "最初の Pod", EN: "First Pod"},
	"nodestep.scheduled.desc":  {JA: "このノードに最初の Pod が置かれる", EN: "The first Pod is placed on the node"},

	// --- exercises ---
	"ex.toggle":            {JA: "演習", EN: "Exercises"},
	"ex.title":             {JA: "演習", EN: "Exercises"},
	"ex.intro":             {JA: "章の内容をラボで試し、ラボの状態でチェックします。", EN: "Do the chapter in the lab; the lab's own state says whether you got it."},
	"ex.list":              {JA: "演習の一覧", EN: "Exercise list"},
	"ex.loading":           {JA: "演習を読み込み中…", EN: "Loading the exercises…"},
	"ex.none":              {JA: "このラボでは演習を使えません: {msg}", EN: "Exercises are not available in this lab: {msg}"},
	"ex.pick":              {JA: "{n}. {title}", EN: "{n}. {title}"},
	"ex.badge":             {JA: "{p}/{n} ステップ", EN: "{p}/{n} steps"},
	"ex.badge.quiz":        {JA: "クイズ {p}/{n}", EN: "quiz {p}/{n}"},
	"ex.badge.done":        {JA: "✓ 完了", EN: "✓ done"},
	"ex.badge.off":         {JA: "このラボでは不可", EN: "not in this lab"},
	"ex.unavailable":       {JA: "このラボでは実行できません: {msg}", EN: "This lab cannot run it: {msg}"},
	"ex.restart":           {JA: "ラボを --profile {profile} --addons {addons} で起動し直す", EN: "Restart the lab with --profile {profile} --addons {addons}"},
	"ex.restart.confirm":   {JA: "もう一度押すと起動し直す", EN: "Press again to restart"},
	"ex.restart.armed":     {JA: "起動し直すと、クラスターとクラウドは新しく作られ ({profile}、アドオン {addons})、いまの状態はデータディレクトリの .previous に移ります。演習の進み具合は残ります。もう一度押すと実行します。", EN: "A restart builds a new cluster and cloud ({profile}, add-ons {addons}) and moves the present state to the data dir's .previous; exercise progress is kept. Press again to do it."},
	"ex.restarting":        {JA: "ラボを {profile} で起動し直しています… 準備ができるとページを読み込み直します。", EN: "Restarting the lab with {profile}… the page reloads once it is ready."},
	"ex.reset.failed":      {JA: "前回のリセットは失敗しました ({msg})。進み具合は最初に戻してあります。もう一度リセットしてください。", EN: "The last reset failed ({msg}). Progress is back at the start: reset again."},
	"ex.reset.resumed":     {JA: "ラボがリセットの途中で止まったので、次の起動時にリセットを最後まで済ませました。", EN: "The lab stopped in the middle of the reset; the reset was finished when the lab started again."},
	"ex.check":             {JA: "今すぐチェック", EN: "Check now"},
	"ex.checking":          {JA: "チェック中…", EN: "Checking…"},
	"ex.reset":             {JA: "演習をリセット", EN: "Reset exercise"},
	"ex.reset.confirm":     {JA: "もう一度押すとリセット", EN: "Press again to reset"},
	"ex.reset.armed":       {JA: "リセットすると、ラボがこの演習の開始状態に戻り、進み具合も消えます。もう一度押すと実行します。", EN: "Reset puts the lab back to this exercise's start and clears its progress. Press again to do it."},
	"ex.resetting":         {JA: "リセット中… (ラボが落ち着くまで最大 1 分)", EN: "Resetting… (up to a minute while the lab settles)"},
	"ex.reset.done":        {JA: "リセットしました。最初のステップから始めてください。", EN: "Reset done. Start from the first step."},
	"ex.setup":             {JA: "開始状態とリセット", EN: "Starting state and reset"},
	"ex.progress":          {JA: "{p} / {n} ステップ完了", EN: "{p} of {n} steps passed"},
	"ex.checked":           {JA: "チェックしました: {p} / {n} ステップ完了", EN: "Checked: {p} of {n} steps passed"},
	"ex.alldone":           {JA: "すべてのステップを完了しました!", EN: "Every step passed!"},
	"ex.failed":            {JA: "失敗しました: {msg}", EN: "That failed: {msg}"},
	"ex.step":              {JA: "ステップ {n}", EN: "Step {n}"},
	"ex.status.passed":     {JA: "✓ 合格", EN: "✓ passed"},
	"ex.status.failed":     {JA: "✗ まだ", EN: "✗ not yet"},
	"ex.status.current":    {JA: "▶ いまここ", EN: "▶ now"},
	"ex.status.locked":     {JA: "🔒 前のステップが先", EN: "🔒 after the earlier steps"},
	"ex.commands":          {JA: "試すコマンド", EN: "Commands to try"},
	"ex.cmd.copy":          {JA: "コンソールに入れる: {cmd}", EN: "Put into the console: {cmd}"},
	"ex.cmd.terminal":      {JA: "端末用", EN: "terminal"},
	"ex.cmd.terminal.hint": {JA: "パイプや sleep を使うので端末で実行します。コンソールでは kubectl の部分だけ使えます", EN: "Uses pipes or sleep: run it in a terminal. The console runs only the kubectl part"},
	"ex.checks":            {JA: "チェックの結果", EN: "Check results"},
	"ex.checks.what":       {JA: "チェックする内容: {list}", EN: "Checked: {list}"},
	"ex.check.pass":        {JA: "✓", EN: "✓"},
	"ex.check.fail":        {JA: "✗", EN: "✗"},
	"ex.hint":              {JA: "ヒントを見る ({n}/{m})", EN: "Show a hint ({n}/{m})"},
	"ex.hints":             {JA: "ヒント", EN: "Hints"},
	"ex.explanation":       {JA: "解説", EN: "Why it works"},
	"ex.attempts":          {JA: "チェック {n} 回", EN: "{n} check(s)"},
	"ex.quiz":              {JA: "クイズ", EN: "Quiz"},
	"ex.quiz.correct":      {JA: "✓ 正解", EN: "✓ Correct"},
	"ex.quiz.wrong":        {JA: "✗ 不正解。最初の答えが記録されます。下の理由を読んでください", EN: "✗ Not quite. The first answer is what counts: read the reasoning below"},
	"ex.meta.minutes":      {JA: "目安 {n} 分", EN: "about {n} min"},
	"ex.meta.profiles":     {JA: "プロファイル: {list}", EN: "profile: {list}"},
	"ex.meta.requires":     {JA: "必要なもの: {list}", EN: "needs: {list}"},
	"ex.meta.pace":         {JA: "授業のペース: クラウド呼び出しごとに {d} の遅延 (いまは {now}。障害パネルで変えられます)", EN: "classroom pace: {d} per cloud call (now {now}; change it in the fault panel)"},
	"mx.title":             {JA: "診断チャレンジ", EN: "Diagnosis challenge"},
	"mx.service":           {JA: "調べる Service: {svc}", EN: "Service to diagnose: {svc}"},
	"mx.pick":              {JA: "原因を 1 つ選んでください。正しい原因を答えるまで終わりません。外れた答えは回数に数えられます。", EN: "Pick one cause. Only the right cause ends the diagnosis; every wrong answer is counted."},
	"mx.nudge":             {JA: "手がかり: {text}", EN: "A nudge: {text}"},
	"mx.misses":            {JA: "外れた答え: {n} 回", EN: "Wrong answers: {n}"},
	"mx.name":              {JA: "この原因で答える", EN: "Name this cause"},
	"mx.named.right":       {JA: "✓ 正解です。", EN: "✓ Right."},
	"mx.named.wrong":       {JA: "✗ 外れです。", EN: "✗ Not this one."},
	"mx.answer":            {JA: "あなたの答え: {c}", EN: "Your answer: {c}"},
	"mx.cause":             {JA: "本当の原因: {c}", EN: "The real cause: {c}"},
	"mx.plant":             {JA: "講師用: 次のリセットで仕込む原因", EN: "For the instructor: the cause the next reset plants"},
	"mx.plant.random":      {JA: "ランダム", EN: "random"},
	"ex.answer.submit":     {JA: "答える", EN: "Answer"},
	"ex.answer.right":      {JA: "✓ 正解: {v}", EN: "✓ Right: {v}"},
	"ex.answer.wrong":      {JA: "✗ {v} はラボの値と違います", EN: "✗ {v} is not what the lab says"},
	"ex.solution":          {JA: "解答 (コマンド)", EN: "Solution"},
	"ex.solution.show":     {JA: "解答を見る (ヒントをすべて読んでから)", EN: "Show the solution (after every hint)"},
	"ex.auto":              {JA: "ステップ「{step}」に合格しました", EN: "Step \"{step}\" passed"},
	"ex.quiz.chosen":       {JA: "あなたの答え", EN: "your answer"},
	"ex.ending":            {JA: "終わりに: この演習で見たこと", EN: "Wrapping up: what you saw"},

	// --- console ---
	"console.title":   {JA: "kubectl コンソール", EN: "kubectl console"},
	"console.intro":   {JA: "ラボのクラスタに kubectl を実行できます (kubectl のみ、シェルは通しません)。↑↓ で履歴をたどれます。", EN: "Runs kubectl against the lab's cluster (kubectl only, no shell). ↑ and ↓ walk the history."},
	"console.input":   {JA: "kubectl コマンド", EN: "kubectl command"},
	"console.output":  {JA: "コンソールの出力", EN: "Console output"},
	"console.help":    {JA: "例: kubectl get svc / kubectl describe svc web。Enter で実行。", EN: "For example: kubectl get svc / kubectl describe svc web. Enter runs it."},
	"console.run":     {JA: "実行", EN: "Run"},
	"console.clear":   {JA: "消去", EN: "Clear"},
	"console.running": {JA: "実行中…", EN: "Running…"},
	"console.refused": {JA: "実行しませんでした: {msg}", EN: "Not run: {msg}"},
	"console.exit":    {JA: "終了コード {n}", EN: "exit code {n}"},
	"console.timeout": {JA: "時間切れで止めました", EN: "stopped: it took too long"},
	"console.cut":     {JA: "出力が長すぎるため途中で切りました", EN: "the output was cut: too long"},
	"console.empty":   {JA: "(出力なし)", EN: "(no output)"},
	"console.error":   {JA: "コンソールを使えません: {msg}", EN: "The console is not available: {msg}"},

	// --- times ---
	"time.after": {JA: "+{s} 秒", EN: "+{s}s"},
}
