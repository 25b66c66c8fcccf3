package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// ErrRefused is what every *RefusedError wraps: the line is not an allowed
// kubectl command (a bad request, not a failure of the lab).
var ErrRefused = errors.New("refused by the console")

// RefusedError is why the console will not run a line. Error() is the
// English text; Reason has both of the lab's languages.
type RefusedError struct {
	Reason i18n.Text
}

func (e *RefusedError) Error() string { return e.Reason.EN }

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

func refuse(ja, en string, args ...any) error {
	return &RefusedError{i18n.Textf(ja, en, args...)}
}

func refuseText(ja, en string) error { return &RefusedError{i18n.Text{JA: ja, EN: en}} }

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

// Subcommands the console runs: the ones the chapter and the exercises use.
func allowedVerbs() []string {
	return []string{
		"get", "describe", "create", "expose", "delete", "scale", "label", "annotate", "patch",
		"taint", "cordon", "uncordon", "rollout", "events", "logs", "explain", "api-resources",
		"api-versions", "version", "wait", "run", "set", "help",
	}
}

// refusedVerbs says why a known kubectl subcommand is not available.
func refusedVerbs() map[string]i18n.Text {
	files := i18n.Text{JA: "ファイルを読みます。create / expose / patch を使ってください", EN: "it reads files; use create, expose or patch instead"}
	containers := i18n.Text{JA: "コンテナやホストに入り込みます", EN: "it reaches into containers or the host"}
	ports := i18n.Text{JA: "ホストのポートを開きます", EN: "it opens ports on the host"}
	return map[string]i18n.Text{
		"apply": files, "replace": files, "kustomize": files, "diff": files,
		"exec": containers, "attach": containers, "cp": containers, "debug": containers,
		"proxy": ports, "port-forward": ports,
		"edit":         {JA: "エディタを開きます。patch を使ってください", EN: "it opens an editor; use patch instead"},
		"config":       {JA: "kubeconfig ファイルを読み書きします", EN: "it reads and writes kubeconfig files"},
		"plugin":       {JA: "別のプログラムを実行します", EN: "it runs other programs"},
		"krew":         {JA: "別のプログラムを実行します", EN: "it runs other programs"},
		"auth":         {JA: "コンソールでは使いません", EN: "it is not part of the lab console"},
		"certificate":  {JA: "コンソールでは使いません", EN: "it is not part of the lab console"},
		"cluster-info": {JA: "dump がファイルを書きます", EN: "its dump writes files"},
		"completion":   {JA: "シェルの設定用です", EN: "it is for configuring a shell"},
		"alpha":        {JA: "コンソールでは使いません", EN: "it is not part of the lab console"},
		"drain":        {JA: "コンソールでは使いません。cordon を使ってください", EN: "it is not part of the lab console; use cordon"},
		"top":          {JA: "ラボには metrics-server がありません", EN: "the lab has no metrics-server"},
	}
}

// refusedFlags says why a flag is refused. Flags whose name contains
// "file", "dir" or "kubeconfig" are refused as well.
func refusedFlags() map[string]i18n.Text {
	file := i18n.Text{JA: "ファイルを読みます", EN: "it reads files"}
	creds := i18n.Text{JA: "接続先や認証情報を変えます。コンソールはいつもラボのクラスタに接続します", EN: "it changes where or as whom kubectl connects; the console always talks to the lab"}
	interactive := i18n.Text{JA: "対話的な入出力はコンソールにありません", EN: "the console has no interactive terminal"}
	watch := i18n.Text{JA: "終わらずに待ち続けます。もう一度 get を実行してください", EN: "it never ends; run get again instead"}
	return map[string]i18n.Text{
		"filename": file, "kustomize": file, "recursive": file, "from-file": file, "from-env-file": file, "env-file": file,
		"kubeconfig": creds, "server": creds, "token": creds, "cluster": creds, "context": creds, "user": creds,
		"username": creds, "password": creds, "as": creds, "as-group": creds, "as-uid": creds, "as-user-extra": creds,
		"certificate-authority": creds, "client-certificate": creds, "client-key": creds,
		"insecure-skip-tls-verify": creds, "tls-server-name": creds, "disable-compression": creds,
		"cache-dir": {JA: "ホストのディレクトリを使います", EN: "it uses a directory on the host"},
		"log-file":  {JA: "ファイルを書きます", EN: "it writes files"}, "log-dir": {JA: "ファイルを書きます", EN: "it writes files"},
		"profile": {JA: "ファイルを書きます", EN: "it writes files"}, "profile-output": {JA: "ファイルを書きます", EN: "it writes files"},
		"output-directory": {JA: "ファイルを書きます", EN: "it writes files"},
		"stdin":            interactive, "tty": interactive, "attach": interactive, "rm": interactive,
		"edit":  {JA: "エディタを開きます", EN: "it opens an editor"},
		"watch": watch, "watch-only": watch,
	}
}

// Short flags: which are refused (by their long name) and which take a
// value (so what follows them in the same word is that value).
func shortRefused() map[rune]string {
	return map[rune]string{'f': "filename", 'k': "kustomize", 'R': "recursive", 's': "server", 'i': "stdin", 't': "tty", 'w': "watch"}
}

const shortWithValue = "noclLpreuv"

// Parse splits a console line and checks it against the console's
// policy: it must be one kubectl command with an allowed subcommand and no
// flag that reaches files, the host or other credentials. It returns the
// arguments after "kubectl".
func Parse(line string) ([]string, error) {
	words, err := splitLine(strings.TrimSpace(line))
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, refuse("kubectl のコマンドを入力してください (例: kubectl get nodes)。", "type a kubectl command, e.g. kubectl get nodes.")
	}
	if words[0] != "kubectl" {
		return nil, refuse("ここで動くのは kubectl だけです: %q は別のプログラムです。", "only kubectl runs here: %q is another program.", words[0])
	}
	args := words[1:]
	// Before the subcommand only the namespace and verbosity may come.
	verb := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			verb = i
			break
		}
		switch {
		case a == "-n" || a == "--namespace" || a == "-v" || a == "--v":
			i++
		case strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "--v=") || strings.HasPrefix(a, "-v=") ||
			len(a) > 2 && (strings.HasPrefix(a, "-n") || strings.HasPrefix(a, "-v")) && a[1] != '-':
		default:
			return nil, refuse("kubectl の直後にサブコマンドを書いてください (フラグはその後に)。", "put the subcommand right after kubectl (flags after it).")
		}
	}
	if verb < 0 {
		return nil, refuse("サブコマンドがありません (例: kubectl get nodes)。", "no subcommand given (e.g. kubectl get nodes).")
	}
	v := args[verb]
	if why, ok := refusedVerbs()[v]; ok {
		return nil, refuseText(fmt.Sprintf("kubectl %s はコンソールでは使えません: %s。", v, why.JA), fmt.Sprintf("kubectl %s is not available in the console: %s.", v, why.EN))
	}
	if !slices.Contains(allowedVerbs(), v) {
		return nil, refuse("kubectl %s はコンソールでは使えません。使えるもの: %s", "kubectl %s is not available in the console; available: %s", v, strings.Join(allowedVerbs(), ", "))
	}
	flags := refusedFlags()
	bounded := false
	for i := verb + 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break // the rest is a container's command line, never run here
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		if v == "logs" {
			if err := checkLogsFlag(a); err != nil {
				return nil, err
			}
			bounded = bounded || isLogsBound(a)
		}
		var name, value string
		hasValue := false
		if long, ok := strings.CutPrefix(a, "--"); ok {
			name, value, hasValue = strings.Cut(long, "=")
			if why, bad := flags[name]; bad {
				return nil, refuseText(fmt.Sprintf("--%s は使えません: %s。", name, why.JA), fmt.Sprintf("--%s is not allowed: %s.", name, why.EN))
			}
			if strings.Contains(name, "file") || strings.Contains(name, "dir") || strings.Contains(name, "kubeconfig") {
				return nil, refuse("--%s は使えません: ホストのファイルを扱います。", "--%s is not allowed: it touches files on the host.", name)
			}
			if name == "output" || name == "template" {
				if !hasValue && i+1 < len(args) {
					value, hasValue = args[i+1], true
					i++
				}
			}
		} else {
			for j, r := range a[1:] {
				if long, bad := shortRefused()[r]; bad {
					why := flags[long]
					return nil, refuseText(fmt.Sprintf("-%c (--%s) は使えません: %s。", r, long, why.JA), fmt.Sprintf("-%c (--%s) is not allowed: %s.", r, long, why.EN))
				}
				if strings.ContainsRune(shortWithValue, r) {
					rest := a[2+j:]
					if r == 'o' {
						name = "output"
						value, hasValue = strings.TrimPrefix(rest, "="), rest != ""
						if !hasValue && i+1 < len(args) {
							value, hasValue = args[i+1], true
							i++
						}
					}
					break
				}
			}
		}
		if name == "output" && hasValue {
			format, _, _ := strings.Cut(value, "=")
			if strings.HasSuffix(format, "-file") {
				return nil, refuse("-o %s は使えません: テンプレートをファイルから読みます。-o jsonpath='...' を使ってください。",
					"-o %s is not allowed: it reads a template from a file; use -o jsonpath='...' instead.", format)
			}
		}
	}
	if v == "logs" && !bounded {
		args = append(args, fmt.Sprintf("--tail=%d", LogsDefaultTail))
	}
	return args[:len(args):len(args)], nil
}

// LogsDefaultTail is how many lines `kubectl logs` shows in the console
// when the line sets none of --tail, --since, --since-time, --limit-bytes:
// the newest ones, where a whole log would be cut at the console's output
// limit after its oldest.
const LogsDefaultTail = 200

// checkLogsFlag refuses `kubectl logs -f`: the console runs a command to
// its end and shows the output then, so following has no place there.
func checkLogsFlag(a string) error {
	follow := a == "--follow" || strings.HasPrefix(a, "--follow=") && a != "--follow=false"
	if !strings.HasPrefix(a, "--") {
		short := a[1:]
		// Of kubectl logs' short flags only -c and -l take a value (-p is
		// --previous here); what follows them in the word is that value.
		if i := strings.IndexAny(short, "cl"); i >= 0 {
			short = short[:i]
		}
		follow = follow || strings.ContainsRune(short, 'f')
	}
	if follow {
		return refuse("kubectl logs -f (--follow) はコンソールでは使えません: 終わらずに待ち続けます。もう一度 logs を実行するか、--since=1m で最近の行だけを見てください。",
			"kubectl logs -f (--follow) is not available in the console: it never ends; run logs again, or add --since=1m to see the recent lines.")
	}
	return nil
}

func isLogsBound(a string) bool {
	for _, p := range []string{"--tail", "--since", "--since-time", "--limit-bytes"} {
		if a == p || strings.HasPrefix(a, p+"=") {
			return true
		}
	}
	return false
}

// Config wires the console to the lab.
type Config struct {
	// DataDir is the lab's data dir: the kubeconfig is DataDir/kubeconfig,
	// and kubectl runs in an empty directory inside it.
	DataDir string
	// Binary is the ccmlab executable (its "kubectl" subcommand is the
	// embedded kubectl). Default: this process's own executable.
	Binary string
	// Timeout per command; default 20s.
	Timeout time.Duration
	// MaxOutput bounds stdout and stderr together; default 64 KiB.
	MaxOutput int
	// Parallel bounds commands running at once; default 2.
	Parallel int
}

// Console runs kubectl commands typed in the page.
type Console struct {
	cfg  Config
	work string
	sem  chan struct{}
}

// Result is what a command printed (stdout and stderr, interleaved as
// written) and its exit code. A command that timed out has exit code -1.
type Result struct {
	Output    string `json:"output"`
	ExitCode  int    `json:"exitCode"`
	Truncated bool   `json:"truncated,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
}

// New checks cfg and prepares the console's working directory.
func New(cfg Config) (*Console, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("console: DataDir is required")
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("console: finding the ccmlab binary: %w", err)
		}
		cfg.Binary = exe
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 64 << 10
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 2
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dir
	work := filepath.Join(dir, "console")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return &Console{cfg: cfg, work: work, sem: make(chan struct{}, cfg.Parallel)}, nil
}

// limitedBuffer keeps the first max bytes written and remembers whether
// more came.
type limitedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Run parses line and, if the console's policy allows it, runs it with the
// embedded kubectl against the lab: no shell, the lab's kubeconfig, an
// empty working directory, an empty environment but for those, a timeout
// and bounded output. A refused line is a *RefusedError (ErrRefused);
// kubectl's own failures are a Result with a non-zero ExitCode.
func (c *Console) Run(ctx context.Context, line string) (Result, error) {
	args, err := Parse(line)
	if err != nil {
		return Result{}, err
	}
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	home := filepath.Join(c.cfg.DataDir, "console-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, c.cfg.Binary, append([]string{"kubectl"}, args...)...)
	cmd.Dir = c.work
	cmd.Env = []string{
		"KUBECONFIG=" + filepath.Join(c.cfg.DataDir, "kubeconfig"),
		"HOME=" + home, // kubectl's discovery cache
		"PATH=",        // no plugins
		"LANG=C.UTF-8",
	}
	out := &limitedBuffer{max: c.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	res := Result{Output: out.buf.String(), Truncated: out.truncated}
	if res.Truncated {
		res.Output += fmt.Sprintf("\n[output cut at %d KiB]\n", c.cfg.MaxOutput>>10)
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.TimedOut, res.ExitCode = true, -1
		res.Output += fmt.Sprintf("\n[stopped after %s]\n", c.cfg.Timeout)
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case err != nil:
		return Result{}, fmt.Errorf("console: running kubectl: %w", err)
	}
	return res, nil
}
