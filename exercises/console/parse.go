package console

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// splitLine splits a command line into words the way a POSIX shell does
// for plain words, 'single quotes', "double quotes" and backslashes, and
// refuses everything a shell would interpret instead of passing on: command
// separators, pipes, redirections, background jobs, substitutions and
// variables. Nothing is ever handed to a shell.
func splitLine(line string) ([]string, error) {
	const maxLine = 4096
	if len(line) > maxLine {
		return nil, refuse("コマンドが長すぎます (最大 %d 文字)。", "the command is too long (at most %d characters).", maxLine)
	}
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\n' || r == '\r':
			return nil, refuse("1 行に 1 つのコマンドだけを書いてください。", "one command per line, please.")
		case r < 0x20 && r != '\t' || r == 0x7f:
			return nil, refuse("制御文字は使えません。", "control characters are not allowed.")
		case r == ' ' || r == '\t':
			flush()
		case r == '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, refuse("' が閉じていません。", "unterminated single quote.")
			}
			cur.WriteString(string(rs[i+1 : j]))
			i = j
		case r == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch rs[j] {
				case '$', '`':
					return nil, refuse("%c による展開は使えません (シェルを通さずに実行します)。シングルクォートで囲んでください。",
						"%c expansion is not supported (nothing runs through a shell); use single quotes.", rs[j])
				case '\\':
					if j+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[j+1]) {
						j++
					}
				}
				cur.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, refuse("\" が閉じていません。", "unterminated double quote.")
			}
			i = j
		case r == '\\':
			if i+1 == len(rs) {
				return nil, refuse("行末の \\ は使えません。", "a trailing backslash is not allowed.")
			}
			inWord = true
			i++
			cur.WriteRune(rs[i])
		case r == ';' || r == '&':
			return nil, refuse("%c でコマンドをつなぐことはできません: コンソールは kubectl を 1 回だけ実行します。",
				"%c cannot chain commands: the console runs exactly one kubectl command.", r)
		case r == '|':
			return nil, refuse("パイプ (|) は使えません: コンソールは kubectl だけを実行し、jq や grep は動きません。-o jsonpath で必要な部分だけを取り出してください。",
				"pipes (|) are not supported: the console runs kubectl only, no jq or grep; use -o jsonpath to pick what you need.")
		case r == '>' || r == '<':
			return nil, refuse("リダイレクト (%c) は使えません: コンソールはファイルを読み書きしません。", "redirection (%c) is not supported: the console reads and writes no files.", r)
		case r == '`' || r == '$':
			return nil, refuse("%c による置換や変数は使えません (シェルを通さずに実行します)。", "%c substitution and variables are not supported (nothing runs through a shell).", r)
		case r == '(' || r == ')':
			return nil, refuse("括弧 (サブシェル) は使えません。", "parentheses (subshells) are not supported.")
		case r == '#' && !inWord:
			return nil, refuse("コメント (#) は使えません。", "comments (#) are not supported.")
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	flush()
	return words, nil
}

// Parse splits a console line and checks it against the console's
// allowlist (policy.go). The line is read with kubectl's own command tree
// and flag definitions, so every spelling kubectl understands (combined
// short flags such as -ps or -oyaml, --flag=value, --flag value, the
// underscore forms kubectl normalizes) is understood the same way here:
// the subcommand must be allowed, every flag the line sets must be allowed
// on it, and -o, --raw and logs --follow must have allowed values. It
// returns the arguments after "kubectl", as typed (plus --tail for logs
// that would otherwise print a whole log).
func Parse(line string) ([]string, error) {
	words, err := splitLine(strings.TrimSpace(line))
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, refuse("kubectl のコマンドを入力してください (例: kubectl get nodes)。", "type a kubectl command, e.g. kubectl get nodes.")
	}
	// `ccmlab kubectl ...` is the embedded kubectl a terminal runs, spelled
	// as the exercises print it; the console runs that binary anyway.
	if len(words) > 1 && words[0] == "ccmlab" && words[1] == "kubectl" {
		words = words[1:]
		if len(words) > 1 && words[1] == InfraFlag {
			return checkInfra(words[2:])
		}
	}
	if words[0] != "kubectl" {
		return nil, refuse("ここで動くのは kubectl と curl だけです: %q は別のプログラムです。", "only kubectl and curl run here: %q is another program.", words[0])
	}
	return check(theTree(), words[1:])
}

// InfraFlag, right after `ccmlab kubectl`, points the embedded kubectl at
// the kubevirt profile's management cluster (<data-dir>/infra-kubeconfig,
// cmd/ccmlab kubectl.go). Parse returns it first; Run then gives kubectl
// that kubeconfig instead of the tenant's.
const InfraFlag = "--infra"

// InfraKubeconfig is the management cluster's kubeconfig in the data dir
// (controlplane.InfraKubeconfigName).
const InfraKubeconfig = "infra-kubeconfig"

// infraCommands are what the console runs on the management cluster:
// reading only. The page's console is for looking at the CCM, its Lease
// and the VMIs there; changing them is a terminal's business.
func infraCommands() []string {
	return []string{"get", "describe", "logs", "events", "api-resources", "api-versions", "explain"}
}

// checkInfra applies the policy to the arguments after `ccmlab kubectl
// --infra`: a reading subcommand, then the same flags as on the tenant.
func checkInfra(args []string) ([]string, error) {
	cmd, _ := theTree().find(args)
	if !slices.Contains(infraCommands(), cmd.path) {
		return nil, refuse("管理クラスタ (--infra) では読むコマンドだけが動きます: kubectl %s。", "on the management cluster (--infra) only reading commands run: kubectl %s.", strings.Join(infraCommands(), ", "))
	}
	rest, err := check(theTree(), args)
	if err != nil {
		return nil, err
	}
	return append([]string{InfraFlag}, rest...), nil
}

// check applies the policy to the arguments after "kubectl".
func check(root *command, args []string) ([]string, error) {
	args = args[:len(args):len(args)]
	cmd, rest := root.find(args)
	allowed, group, err := allowedFlags(cmd, rest)
	if err != nil {
		return nil, err
	}
	fs := cmd.flagSet(true)
	if err := fs.Parse(rest); err != nil {
		return nil, refuse("kubectl %s はこの行を読めません: %v", "kubectl %s cannot read this line: %v", cmd.displayPath(), err)
	}
	if cmd.path == "" {
		if err := checkRoot(fs); err != nil {
			return nil, err
		}
	}
	var flagErr error
	fs.Visit(func(f *pflag.Flag) {
		switch {
		case flagErr != nil:
		case group && !allowed[f.Name] && commandReasons()[cmd.path].EN != "":
			// `kubectl create -f x`: the reason is create's.
			flagErr = commandRefused(cmd.path)
		default:
			flagErr = checkFlag(cmd, f, allowed)
		}
	})
	if flagErr != nil {
		return nil, flagErr
	}
	if cmd.path == "logs" && !bounded(fs) {
		at := slices.Index(args, "--")
		if at < 0 {
			at = len(args)
		}
		args = slices.Insert(args, at, fmt.Sprintf("--tail=%d", LogsDefaultTail))
	}
	return args[:len(args):len(args)], nil
}

func (n *command) displayPath() string {
	if n.path == "" {
		return "kubectl"
	}
	return n.path
}

// allowedFlags says which flags cmd may set, or why cmd is refused. rest
// is the line without the command's names. A command that only groups
// allowed ones (create, create service, rollout, set) may set the global
// flags only (it prints its help), and any word left names a subcommand
// kubectl does not have.
func allowedFlags(cmd *command, rest []string) (allow map[string]bool, group bool, err error) {
	allow = map[string]bool{}
	for _, f := range globalFlags() {
		allow[f] = true
	}
	commands := allowedCommands()
	if flags, ok := commands[cmd.path]; ok && !cmd.ownParsing {
		for _, f := range flags {
			allow[f] = true
		}
		return allow, false, nil
	}
	var below []string
	for p := range commands {
		if cmd.path == "" || strings.HasPrefix(p, cmd.path+" ") {
			below = append(below, p)
		}
	}
	if len(below) == 0 || cmd.ownParsing {
		return nil, false, commandRefused(cmd.path)
	}
	// The first word that is not a flag (in cobra's reading of which words
	// are flags' values) would be a subcommand.
	words := stripFlags(rest, cmd.flagSet(false))
	if len(words) == 0 || cmd.path == "" && words[0] == "help" {
		return allow, true, nil
	}
	if cmd.path == "" {
		// At the top, the first words of what is allowed.
		for i, p := range below {
			below[i], _, _ = strings.Cut(p, " ")
		}
	}
	slices.Sort(below)
	below = slices.Compact(below)
	path := strings.TrimSpace(cmd.path + " " + words[0])
	return nil, false, refuse("kubectl %s はコンソールでは使えません。使えるもの: %s", "kubectl %s is not available in the console; available: %s", path, strings.Join(below, ", "))
}

// commandRefused says why the subcommand at path (a real one, not
// allowed) is refused: by its reason or its parent's, else with the list
// of what is available.
func commandRefused(path string) error {
	reasons := commandReasons()
	for p := path; p != ""; p = parentPath(p) {
		if why, ok := reasons[p]; ok {
			return refuseText(fmt.Sprintf("kubectl %s はコンソールでは使えません: %s。", path, why.JA), fmt.Sprintf("kubectl %s is not available in the console: %s.", path, why.EN))
		}
	}
	top := map[string]bool{}
	for p := range allowedCommands() {
		first, _, _ := strings.Cut(p, " ")
		top[first] = true
	}
	return refuse("kubectl %s はコンソールでは使えません。使えるもの: %s", "kubectl %s is not available in the console; available: %s", path, strings.Join(slices.Sorted(maps.Keys(top)), ", "))
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, ' ')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// checkRoot: kubectl itself runs only as `kubectl help ...` or with --help
// (allowedFlags let nothing else through); with neither it has no
// subcommand.
func checkRoot(fs *pflag.FlagSet) error {
	if fs.Changed("help") || fs.NArg() > 0 && fs.Arg(0) == "help" {
		return nil
	}
	return refuse("サブコマンドがありません (例: kubectl get nodes)。", "no subcommand given (e.g. kubectl get nodes).")
}

// checkFlag refuses a flag the command may not set, or a value it may
// not have.
func checkFlag(cmd *command, f *pflag.Flag, allowed map[string]bool) error {
	spelled := "--" + f.Name
	if f.Shorthand != "" {
		spelled += " (-" + f.Shorthand + ")"
	}
	if !allowed[f.Name] {
		why, ok := flagReasons()[f.Name]
		if !ok {
			if touchesFiles(f.Name) {
				why = i18n.Text{JA: "ホストのファイルを扱います", EN: "it touches files on the host"}
			} else {
				names := slices.Sorted(maps.Keys(allowed))
				return refuse("kubectl %s の %s はコンソールでは使えません。使えるフラグ: --%s", "%[2]s is not available for kubectl %[1]s in the console; allowed flags: --%[3]s",
					cmd.displayPath(), spelled, strings.Join(names, ", --"))
			}
		}
		return refuseText(fmt.Sprintf("%s は使えません: %s。", spelled, why.JA), fmt.Sprintf("%s is not allowed: %s.", spelled, why.EN))
	}
	values := f.Value.(*recorded).values
	for _, v := range values {
		switch f.Name {
		case "output":
			if !outputAllowed(v) {
				exact, inline := outputFormats()
				all := strings.Join(append(exact, inline...), ", ")
				if format, _, _ := strings.Cut(v, "="); strings.HasSuffix(format, "file") {
					return refuse("-o %s は使えません: テンプレートをファイルから読みます。-o jsonpath='...' のようにテンプレートを直接書いてください。",
						"-o %s is not allowed: it reads a template from a file; write the template inline, as in -o jsonpath='...'.", format)
				}
				return refuse("-o %q はコンソールでは使えません。使えるもの: %s", "-o %q is not available in the console; available: %s", v, all)
			}
		case "raw":
			if !rawAllowed(v) {
				return refuse("--raw %q は使えません: 使えるのは /api, /apis, /healthz, /livez, /readyz, /version, /openapi の下のパスだけです (サブリソースは status と scale だけ)。",
					"--raw %q is not allowed: only paths under /api, /apis, /healthz, /livez, /readyz, /version and /openapi are (and of subresources only status and scale).", v)
			}
		case "follow":
			if b, err := strconv.ParseBool(v); err != nil || b {
				return refuse("kubectl logs -f (--follow) はコンソールでは使えません: 終わらずに待ち続けます。もう一度 logs を実行するか、--since=1m で最近の行だけを見てください。",
					"kubectl logs -f (--follow) is not available in the console: it never ends; run logs again, or add --since=1m to see the recent lines.")
			}
		case "v":
			if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 9 {
				return refuse("-v は 0 から 9 までです。", "-v takes a level from 0 to 9.")
			}
		}
	}
	return nil
}

// touchesFiles guesses from a flag's name that it names a file or a
// directory, for a clearer refusal (the allowlist refuses it anyway).
func touchesFiles(name string) bool {
	for _, s := range []string{"file", "dir", "path", "kubeconfig", "cert", "key"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

func outputAllowed(v string) bool {
	exact, inline := outputFormats()
	if slices.Contains(exact, v) {
		return true
	}
	for _, p := range inline {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// bounded says whether a logs line already limits what it prints.
func bounded(fs *pflag.FlagSet) bool {
	for _, name := range []string{"tail", "since", "since-time", "limit-bytes"} {
		if fs.Changed(name) {
			return true
		}
	}
	return false
}

// LogsDefaultTail is how many lines `kubectl logs` shows in the console
// when the line sets none of --tail, --since, --since-time, --limit-bytes:
// the newest ones, where a whole log would be cut at the console's output
// limit after its oldest.
const LogsDefaultTail = 200
