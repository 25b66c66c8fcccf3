package console

import (
	"regexp"
	"strings"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// The console's policy is an allowlist: the subcommands below, and on each
// only the flags listed for it (plus globalFlags). Everything else kubectl
// knows, and every flag a future kubectl adds, is refused. The reasons
// further down only make a refusal readable; they grant nothing.

// globalFlags may be set on every allowed subcommand.
func globalFlags() []string {
	return []string{"namespace", "help", "request-timeout", "v"}
}

// allowedCommands maps each subcommand path the console runs to the flags
// it may set. Parents of these paths (create, create service, rollout,
// set) are allowed with the global flags only: they print their help.
// TestAllowlistMatchesTree checks that every name here exists in
// kubectl's tree.
func allowedCommands() map[string][]string {
	printing := []string{"output", "allow-missing-template-keys", "show-managed-fields"}
	creating := append([]string{"dry-run", "field-manager", "save-config", "validate"}, printing...)
	service := append([]string{"tcp"}, creating...)
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	labelling := with(printing, "all", "all-namespaces", "dry-run", "field-manager", "field-selector", "list", "overwrite", "resource-version", "selector")
	return map[string][]string{
		"get": with(printing, "all-namespaces", "chunk-size", "field-selector", "ignore-not-found", "label-columns",
			"no-headers", "raw", "selector", "server-print", "show-kind", "show-labels", "sort-by", "subresource"),
		"describe":      {"all-namespaces", "chunk-size", "selector", "show-events"},
		"explain":       {"api-version", "max-depth", "output", "recursive"},
		"api-resources": {"api-group", "cached", "categories", "namespaced", "no-headers", "output", "sort-by", "verbs"},
		"api-versions":  {},
		"version":       {"client", "output"},
		"events":        with(printing, "all-namespaces", "chunk-size", "for", "no-headers", "types"),
		"logs": {"all-containers", "all-pods", "container", "follow", "ignore-errors", "limit-bytes", "max-log-requests",
			"pod-running-timeout", "prefix", "previous", "selector", "since", "since-time", "tail", "timestamps"},
		"wait":                        with(printing, "all", "all-namespaces", "field-selector", "for", "selector", "timeout"),
		"create deployment":           with(creating, "image", "port", "replicas"),
		"create service clusterip":    with(service, "clusterip"),
		"create service loadbalancer": service,
		"create service nodeport":     with(service, "node-port"),
		"create service externalname": with(service, "external-name"),
		"create namespace":            creating,
		"create configmap":            with(creating, "append-hash", "from-literal"),
		"create secret generic":       with(creating, "append-hash", "from-literal", "type"),
		"create job":                  with(creating, "from", "image"),
		"expose": with(printing, "cluster-ip", "dry-run", "external-ip", "field-manager", "labels", "load-balancer-ip", "name",
			"override-type", "overrides", "port", "protocol", "save-config", "selector", "session-affinity", "target-port", "type"),
		"run": with(printing, "annotations", "command", "dry-run", "env", "field-manager", "image", "image-pull-policy", "labels",
			"override-type", "overrides", "port", "restart", "save-config"),
		"delete": {"all", "all-namespaces", "cascade", "dry-run", "field-selector", "force", "grace-period", "ignore-not-found",
			"now", "output", "selector", "timeout", "wait"},
		"scale":           with(printing, "all", "current-replicas", "dry-run", "replicas", "resource-version", "selector", "timeout"),
		"label":           labelling,
		"annotate":        labelling,
		"patch":           with(printing, "dry-run", "field-manager", "patch", "subresource", "type"),
		"taint":           with(printing, "all", "dry-run", "field-manager", "overwrite", "selector", "validate"),
		"cordon":          {"dry-run", "selector"},
		"uncordon":        {"dry-run", "selector"},
		"rollout status":  {"revision", "selector", "timeout", "watch"},
		"rollout restart": with(printing, "field-manager", "selector"),
		"rollout pause":   with(printing, "field-manager", "selector"),
		"rollout resume":  with(printing, "field-manager", "selector"),
		"rollout history": with(printing, "revision", "selector"),
		"rollout undo":    with(printing, "dry-run", "selector", "to-revision"),
		"set image":       with(printing, "all", "dry-run", "field-manager", "selector"),
		"set env": with(printing, "all", "containers", "dry-run", "env", "field-manager", "from", "keys", "list", "overwrite",
			"prefix", "resolve", "selector"),
		"set resources": with(printing, "all", "containers", "dry-run", "field-manager", "limits", "requests", "selector"),
	}
}

// outputFormats are the -o values the console allows: the printers that
// take their template inline. Every *-file form reads a file and is
// refused, and so is everything not listed.
func outputFormats() (exact, inline []string) {
	return []string{"json", "yaml", "kyaml", "wide", "name", "plaintext", "plaintext-openapiv2"},
		[]string{"jsonpath=", "jsonpath-as-json=", "custom-columns=", "go-template="}
}

// rawPath is what `kubectl get --raw` may request: the API's own paths
// (discovery, objects and lists, their status and scale subresources) and
// the health, version and OpenAPI documents; never a proxy, exec, attach,
// portforward or log subresource, never anything outside these roots.
// Segments are names as Kubernetes writes them: no dots alone, no
// percent-escapes, no colons (service proxies name "svc:port").
var rawPath = regexp.MustCompile(`^(` +
	`/version|/healthz|/livez|/readyz` +
	`|/(healthz|livez|readyz)(/[a-z0-9-]+)+` +
	`|/openapi/v2|/openapi/v3(/` + seg + `)*` +
	`|/api|/api/v1|/apis|/apis/` + seg + `|/apis/` + seg + `/` + seg +
	`|(/api/v1|/apis/` + seg + `/` + seg + `)(/namespaces/` + seg + `)?/` + seg + `(/` + seg + `(/(status|scale))?)?` +
	`)(\?[A-Za-z0-9=&._,-]*)?$`)

const seg = `[A-Za-z0-9_-][A-Za-z0-9._-]*`

// rawAllowed is rawPath, and no segment anywhere may name a subresource
// that reaches past the API (under /namespaces/<ns>/ the regexp cannot
// tell a resource type from a namespace's subresource; old API servers
// served /api/v1/proxy/...).
func rawAllowed(p string) bool {
	if !rawPath.MatchString(p) {
		return false
	}
	path, _, _ := strings.Cut(p, "?")
	for s := range strings.SplitSeq(path, "/") {
		switch s {
		case "proxy", "exec", "attach", "portforward", "log", "eviction", "token", "binding", "ephemeralcontainers", "resize", "finalize":
			return false
		}
	}
	return true
}

// commandReasons say why a kubectl subcommand is not in the console (by
// its path); a path without one gets the list of what is available.
func commandReasons() map[string]i18n.Text {
	files := i18n.Text{JA: "ファイルを読みます。create / expose / patch を使ってください", EN: "it reads files; use create, expose or patch instead"}
	containers := i18n.Text{JA: "コンテナやホストに入り込みます", EN: "it reaches into containers or the host"}
	ports := i18n.Text{JA: "ホストのポートを開きます", EN: "it opens ports on the host"}
	notHere := i18n.Text{JA: "コンソールでは使いません", EN: "it is not part of the lab console"}
	others := i18n.Text{JA: "別のプログラムを実行します", EN: "it runs other programs"}
	return map[string]i18n.Text{
		"apply": files, "replace": files, "kustomize": files, "diff": files,
		"create":                        {JA: "ファイル (-f) から作ります。create deployment や create service を使ってください", EN: "it creates from files (-f); use create deployment or create service instead"},
		"create secret tls":             {JA: "証明書と鍵をファイルから読みます", EN: "it reads a certificate and a key from files"},
		"create secret docker-registry": files,
		"create token":                  {JA: "認証情報を作ります", EN: "it makes credentials"},
		"exec":                          containers, "attach": containers, "cp": containers, "debug": containers,
		"proxy": ports, "port-forward": ports,
		"edit":         {JA: "エディタを開きます。patch を使ってください", EN: "it opens an editor; use patch instead"},
		"config":       {JA: "kubeconfig ファイルを読み書きします", EN: "it reads and writes kubeconfig files"},
		"kuberc":       {JA: "kuberc ファイルを読み書きします", EN: "it reads and writes kuberc files"},
		"plugin":       others,
		"auth":         notHere,
		"certificate":  notHere,
		"cluster-info": {JA: "dump がファイルを書きます", EN: "its dump writes files"},
		"completion":   {JA: "シェルの設定用です", EN: "it is for configuring a shell"},
		"alpha":        notHere,
		"drain":        {JA: "コンソールでは使いません。cordon を使ってください", EN: "it is not part of the lab console; use cordon"},
		"top":          {JA: "ラボには metrics-server がありません", EN: "the lab has no metrics-server"},
	}
}

// flagReasons say why a flag is refused, by its long name. They apply
// to a flag not allowed on the subcommand, however it was spelled.
func flagReasons() map[string]i18n.Text {
	read := i18n.Text{JA: "ホストのファイルを読みます", EN: "it reads files on the host"}
	write := i18n.Text{JA: "ホストにファイルを書きます", EN: "it writes files on the host"}
	creds := i18n.Text{JA: "接続先や認証情報を変えます。コンソールはいつもラボのクラスタに接続します", EN: "it changes where or as whom kubectl connects; the console always talks to the lab"}
	interactive := i18n.Text{JA: "対話的な入出力はコンソールにありません", EN: "the console has no interactive terminal"}
	watch := i18n.Text{JA: "終わらずに待ち続けます。もう一度実行してください", EN: "it never ends; run the command again instead"}
	return map[string]i18n.Text{
		"filename": read, "kustomize": read, "recursive": read, "from-file": read, "from-env-file": read,
		"patch-file": read, "cert": read, "key": read,
		"template":   {JA: "-o go-template-file などではテンプレートのファイルを読みます。-o go-template='...' や -o jsonpath='...' のようにテンプレートを直接書いてください", EN: "with -o go-template-file and the like it reads a template file; write the template inline, as in -o go-template='...' or -o jsonpath='...'"},
		"kubeconfig": creds, "kuberc": {JA: "kuberc ファイルを読みます", EN: "it reads a kuberc file"},
		"server": creds, "proxy-url": creds, "token": creds, "cluster": creds, "context": creds, "user": creds,
		"username": creds, "password": creds, "as": creds, "as-group": creds, "as-uid": creds, "as-user-extra": creds,
		"certificate-authority": creds, "client-certificate": creds, "client-key": creds,
		"insecure-skip-tls-verify": creds, "insecure-skip-tls-verify-backend": creds, "tls-server-name": creds,
		"cache-dir": {JA: "ホストのディレクトリを使います", EN: "it uses a directory on the host"},
		"profile":   write, "profile-output": write, "output-directory": write,
		"stdin": interactive, "tty": interactive, "attach": interactive, "rm": interactive, "interactive": interactive, "leave-stdin-open": interactive,
		"edit":  {JA: "エディタを開きます", EN: "it opens an editor"},
		"watch": watch, "watch-only": watch, "output-watch-events": watch,
		"raw": {JA: "API に直接リクエストを送ります。使えるのは kubectl get --raw /api/... だけです", EN: "it sends a request straight to the API; only kubectl get --raw /api/... is allowed"},
	}
}
