package podruntime

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
)

// command is a program of an image: a Go function with the process's
// streams, environment and Pod. It returns the exit code.
type command func(ctx context.Context, p *proc, args []string) int

// commands are every program the lab's images have, by base name; an
// image's bins say which of them it has.
var commands map[string]command

func init() {
	commands = map[string]command{
		"sh":       cmdSh,
		"bash":     cmdSh,
		"echo":     cmdEcho,
		"printf":   cmdPrintf,
		"cat":      cmdCat,
		"env":      cmdEnv,
		"printenv": cmdPrintenv,
		"hostname": cmdHostname,
		"sleep":    cmdSleep,
		"true":     func(context.Context, *proc, []string) int { return 0 },
		"false":    func(context.Context, *proc, []string) int { return 1 },
		"pwd":      func(_ context.Context, p *proc, _ []string) int { fmt.Fprintln(p.stdout, p.dir); return 0 },
		"ls":       cmdLs,
		"date":     cmdDate,
		"uname":    cmdUname,
		"id": func(_ context.Context, p *proc, _ []string) int {
			fmt.Fprintln(p.stdout, "uid=0(root) gid=0(root) groups=0(root)")
			return 0
		},
		"whoami":               func(_ context.Context, p *proc, _ []string) int { fmt.Fprintln(p.stdout, "root"); return 0 },
		"grep":                 cmdGrep,
		"head":                 cmdHeadTail(true),
		"tail":                 cmdHeadTail(false),
		"wc":                   cmdWc,
		"test":                 cmdTest,
		"[":                    cmdTest,
		"ip":                   cmdIP,
		"nc":                   cmdNc,
		"seq":                  cmdSeq,
		"getent":               cmdGetent,
		"curl":                 cmdCurl,
		"wget":                 cmdWget,
		"nslookup":             cmdNslookup,
		"dig":                  cmdDig,
		"host":                 cmdHost,
		"pause":                cmdPause,
		"nginx":                cmdNginx,
		"agnhost":              cmdAgnhost,
		"docker-entrypoint.sh": cmdDockerEntrypoint,
		"entrypoint.sh":        cmdCurlEntrypoint,
		"coredns":              cmdCoreDNS,   // system.go
		"kube-proxy":           cmdKubeProxy, // system.go
		"aws-vpc-cni":          cmdAWSNode,   // system.go
	}
}

// cmdSh is sh: -c SCRIPT [NAME [ARGS...]], a script read from stdin, or
// an interactive shell on a terminal.
func cmdSh(ctx context.Context, p *proc, args []string) int {
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-c" {
		switch rest[0] {
		case "-e", "-x", "-u", "-i", "-l", "-s", "--login":
			rest = rest[1:]
		default:
			if strings.HasPrefix(rest[0], "-") && strings.Contains(rest[0], "c") {
				rest[0] = "-c"
				continue
			}
			p.errorf("sh: %s: invalid option\n", rest[0])
			return 2
		}
	}
	if len(rest) > 0 && rest[0] == "-c" {
		if len(rest) < 2 {
			p.errorf("sh: -c requires an argument\n")
			return 2
		}
		script := rest[1]
		if len(script) > p.rt.cfg.Limits.MaxScript {
			p.errorf("sh: script too long (at most %d bytes in the lab)\n", p.rt.cfg.Limits.MaxScript)
			return 2
		}
		name, params := "sh", []string(nil)
		if len(rest) > 2 {
			name, params = rest[2], rest[3:]
		}
		f, err := parseScript(script, "")
		if err != nil {
			p.errorf("sh: %v\n", err)
			return 2
		}
		return newShell(p, name, params).run(ctx, f)
	}
	if len(rest) > 0 {
		data, err := p.box.fs.read(p.abs(rest[0]))
		if err != nil {
			p.errorf("sh: can't open '%s': %v\n", rest[0], err)
			return 2
		}
		f, err := parseScript(data, rest[0])
		if err != nil {
			p.errorf("sh: %v\n", err)
			return 2
		}
		return newShell(p, rest[0], rest[1:]).run(ctx, f)
	}
	// No script: read commands from stdin. A container whose stdin is
	// closed (no `stdin: true`) reads EOF at once and exits 0, as sh does.
	return newShell(p, "sh", nil).interactive(ctx, p.tty)
}

func cmdEcho(_ context.Context, p *proc, args []string) int {
	newline, escapes := true, false
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
	}
	s := strings.Join(args[i:], " ")
	if escapes || p.box.img.shell == "dash" {
		s = unescape(s)
	}
	if newline {
		s += "\n"
	}
	_, _ = io.WriteString(p.stdout, s)
	return 0
}

func unescape(s string) string {
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, `\r`, "\r", `\a`, "\a", `\033`, "\033", `\e`, "\033")
	return r.Replace(s)
}

func cmdPrintf(_ context.Context, p *proc, args []string) int {
	if len(args) < 2 {
		p.errorf("printf: usage: printf format [arguments]\n")
		return 2
	}
	s, _, err := expand.Format(&expand.Config{}, args[1], args[2:])
	if err != nil {
		p.errorf("printf: %v\n", err)
		return 1
	}
	_, _ = io.WriteString(p.stdout, s)
	return 0
}

func cmdCat(_ context.Context, p *proc, args []string) int {
	files := args[1:]
	if len(files) == 0 {
		files = []string{"-"}
	}
	code := 0
	for _, f := range files {
		if f == "-" {
			if p.stdin != nil {
				_, _ = io.Copy(p.stdout, io.LimitReader(p.stdin, int64(p.rt.cfg.Limits.MaxBody)))
			}
			continue
		}
		data, err := p.box.fs.read(p.abs(f))
		if err != nil {
			p.errorf("cat: %s: %v\n", f, err)
			code = 1
			continue
		}
		_, _ = io.WriteString(p.stdout, data)
	}
	return code
}

func cmdEnv(ctx context.Context, p *proc, args []string) int {
	rest := args[1:]
	env := p.env.clone()
	for len(rest) > 0 && strings.Contains(rest[0], "=") {
		k, v, _ := strings.Cut(rest[0], "=")
		_ = env.Set(k, expand.Variable{Set: true, Kind: expand.String, Str: v, Exported: true})
		rest = rest[1:]
	}
	if len(rest) > 0 {
		q := p.with(p.stdin, p.stdout)
		q.env = env
		return q.runCommand(ctx, rest, true)
	}
	for _, kv := range env.pairs() {
		fmt.Fprintln(p.stdout, kv)
	}
	return 0
}

func cmdPrintenv(_ context.Context, p *proc, args []string) int {
	if len(args) == 1 {
		for _, kv := range p.env.pairs() {
			fmt.Fprintln(p.stdout, kv)
		}
		return 0
	}
	code := 0
	for _, name := range args[1:] {
		v := p.env.Get(name)
		if !v.IsSet() || !v.Exported {
			code = 1
			continue
		}
		fmt.Fprintln(p.stdout, v.String())
	}
	return code
}

func cmdHostname(_ context.Context, p *proc, args []string) int {
	if len(args) > 1 && (args[1] == "-i" || args[1] == "-I") {
		fmt.Fprintln(p.stdout, p.box.pod.Status.PodIP)
		return 0
	}
	fmt.Fprintln(p.stdout, p.box.hostname)
	return 0
}

// parseDuration reads sleep's argument: seconds, optionally fractional,
// with busybox's s/m/h/d suffixes; "infinity" waits until stopped.
func parseDuration(s string) (time.Duration, bool) {
	if s == "infinity" || s == "inf" {
		return 1<<63 - 1, true
	}
	mult := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, mult = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, mult = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, mult = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	if f*float64(mult) > float64(1<<62) {
		return 1<<63 - 1, true
	}
	return time.Duration(f * float64(mult)), true
}

func cmdSleep(ctx context.Context, p *proc, args []string) int {
	if len(args) < 2 {
		p.errorf("sleep: missing operand\n")
		return 1
	}
	var total time.Duration
	for _, a := range args[1:] {
		d, ok := parseDuration(a)
		if !ok {
			p.errorf("sleep: invalid number '%s'\n", a)
			return 1
		}
		total += d
		if total < 0 {
			total = 1<<63 - 1
		}
	}
	if err := sleepCtx(ctx, p.rt.cfg.Clock, total); err != nil {
		return 143
	}
	return 0
}

func cmdPause(ctx context.Context, _ *proc, _ []string) int {
	<-ctx.Done()
	return 0 // pause exits 0 on SIGTERM
}

func cmdLs(_ context.Context, p *proc, args []string) int {
	dirs := []string{}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			dirs = append(dirs, a)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	code := 0
	for _, d := range dirs {
		names, ok := p.box.fs.list(p.abs(d))
		if !ok {
			p.errorf("ls: %s: No such file or directory\n", d)
			code = 1
			continue
		}
		for _, n := range names {
			fmt.Fprintln(p.stdout, n)
		}
	}
	return code
}

func cmdDate(_ context.Context, p *proc, _ []string) int {
	fmt.Fprintln(p.stdout, p.rt.cfg.Clock.Now().UTC().Format("Mon Jan  2 15:04:05 MST 2006"))
	return 0
}

func cmdUname(_ context.Context, p *proc, args []string) int {
	if len(args) > 1 && (args[1] == "-a") {
		fmt.Fprintf(p.stdout, "Linux %s 6.8.0-1021-aws #23-Ubuntu SMP x86_64 GNU/Linux\n", p.box.hostname)
		return 0
	}
	fmt.Fprintln(p.stdout, "Linux")
	return 0
}

// input is the process's stdin, or the named files, concatenated.
func (p *proc) input(files []string) (io.Reader, int) {
	if len(files) == 0 {
		if p.stdin == nil {
			return strings.NewReader(""), 0
		}
		return io.LimitReader(p.stdin, int64(p.rt.cfg.Limits.MaxBody)), 0
	}
	var b strings.Builder
	code := 0
	for _, f := range files {
		data, err := p.box.fs.read(p.abs(f))
		if err != nil {
			p.errorf("%s: %v\n", f, err)
			code = 2
			continue
		}
		b.WriteString(data)
	}
	return strings.NewReader(b.String()), code
}

func cmdGrep(_ context.Context, p *proc, args []string) int {
	invert, ignore, count, quiet, fixed := false, false, false, false, false
	var pat string
	var files []string
	havePat := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 && !havePat {
			switch a {
			case "-e":
				if i+1 < len(args) {
					pat, havePat = args[i+1], true
					i++
				}
				continue
			}
			for _, c := range a[1:] {
				switch c {
				case 'v':
					invert = true
				case 'i':
					ignore = true
				case 'c':
					count = true
				case 'q':
					quiet = true
				case 'F':
					fixed = true
				case 'E':
				}
			}
			continue
		}
		if !havePat {
			pat, havePat = a, true
			continue
		}
		files = append(files, a)
	}
	if !havePat {
		p.errorf("Usage: grep [-vicqFE] PATTERN [FILE]...\n")
		return 2
	}
	if fixed {
		pat = regexp.QuoteMeta(pat)
	}
	if ignore {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		p.errorf("grep: bad regex '%s'\n", pat)
		return 2
	}
	in, code := p.input(files)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	n := 0
	for sc.Scan() {
		if re.MatchString(sc.Text()) != invert {
			n++
			if !count && !quiet {
				fmt.Fprintln(p.stdout, sc.Text())
			}
		}
	}
	if count {
		fmt.Fprintln(p.stdout, n)
	}
	if code != 0 {
		return code
	}
	if n == 0 {
		return 1
	}
	return 0
}

func cmdHeadTail(head bool) command {
	return func(_ context.Context, p *proc, args []string) int {
		n := 10
		var files []string
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-n" && i+1 < len(args):
				v, err := strconv.Atoi(strings.TrimPrefix(args[i+1], "+"))
				if err == nil {
					n = v
				}
				i++
			case strings.HasPrefix(a, "-n"):
				if v, err := strconv.Atoi(a[2:]); err == nil {
					n = v
				}
			case strings.HasPrefix(a, "-") && len(a) > 1:
				if v, err := strconv.Atoi(a[1:]); err == nil {
					n = v
				}
			default:
				files = append(files, a)
			}
		}
		in, code := p.input(files)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		var keep []string
		for sc.Scan() {
			if head {
				if len(keep) >= n {
					break
				}
				keep = append(keep, sc.Text())
				continue
			}
			keep = append(keep, sc.Text())
			if len(keep) > n {
				keep = keep[1:]
			}
		}
		for _, l := range keep {
			fmt.Fprintln(p.stdout, l)
		}
		return code
	}
}

func cmdWc(_ context.Context, p *proc, args []string) int {
	mode := ""
	var files []string
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			mode += a[1:]
		} else {
			files = append(files, a)
		}
	}
	in, code := p.input(files)
	data, _ := io.ReadAll(in)
	lines, words, chars := strings.Count(string(data), "\n"), len(strings.Fields(string(data))), len(data)
	switch mode {
	case "l":
		fmt.Fprintln(p.stdout, lines)
	case "w":
		fmt.Fprintln(p.stdout, words)
	case "c", "m":
		fmt.Fprintln(p.stdout, chars)
	default:
		fmt.Fprintf(p.stdout, "%7d %7d %7d\n", lines, words, chars)
	}
	return code
}

// cmdTest is test and [: the string, integer and file tests scripts use.
func cmdTest(_ context.Context, p *proc, args []string) int {
	a := args[1:]
	if args[0] == "[" {
		if len(a) == 0 || a[len(a)-1] != "]" {
			p.errorf("sh: missing ]\n")
			return 2
		}
		a = a[:len(a)-1]
	}
	r, ok := evalTest(p, a)
	if !ok {
		p.errorf("sh: %s: syntax error\n", strings.Join(a, " "))
		return 2
	}
	return b2i(!r)
}

func evalTest(p *proc, a []string) (bool, bool) {
	if len(a) > 0 && a[0] == "!" {
		r, ok := evalTest(p, a[1:])
		return !r, ok
	}
	switch len(a) {
	case 0:
		return false, true
	case 1:
		return a[0] != "", true
	case 2:
		switch a[0] {
		case "-n":
			return a[1] != "", true
		case "-z":
			return a[1] == "", true
		case "-e", "-f", "-r", "-s":
			_, err := p.box.fs.read(p.abs(a[1]))
			return err == nil, true
		case "-d":
			return p.box.fs.isDir(p.abs(a[1])), true
		}
	case 3:
		x, op, y := a[0], a[1], a[2]
		switch op {
		case "=", "==":
			return x == y, true
		case "!=":
			return x != y, true
		}
		xi, err1 := strconv.Atoi(x)
		yi, err2 := strconv.Atoi(y)
		if err1 != nil || err2 != nil {
			return false, false
		}
		switch op {
		case "-eq":
			return xi == yi, true
		case "-ne":
			return xi != yi, true
		case "-lt":
			return xi < yi, true
		case "-le":
			return xi <= yi, true
		case "-gt":
			return xi > yi, true
		case "-ge":
			return xi >= yi, true
		}
	}
	for i, w := range a {
		if w == "-a" || w == "-o" {
			l, ok1 := evalTest(p, a[:i])
			r, ok2 := evalTest(p, a[i+1:])
			if w == "-a" {
				return l && r, ok1 && ok2
			}
			return l || r, ok1 && ok2
		}
	}
	return false, false
}

func matchRegexp(re string, s string) bool {
	r, err := regexp.Compile(re)
	return err == nil && r.MatchString(s)
}

// cmdDockerEntrypoint is nginx's /docker-entrypoint.sh: it runs its
// configuration scripts (their log lines) and then execs its arguments.
func cmdDockerEntrypoint(ctx context.Context, p *proc, args []string) int {
	if len(args) > 1 && (args[1] == "nginx" || args[1] == "nginx-debug") {
		for _, l := range []string{
			"/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
			"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/",
			"/docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh",
			"10-listen-on-ipv6-by-default.sh: info: Getting the checksum of /etc/nginx/conf.d/default.conf",
			"10-listen-on-ipv6-by-default.sh: info: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf",
			"/docker-entrypoint.sh: Sourcing /docker-entrypoint.d/15-local-resolvers.envsh",
			"/docker-entrypoint.sh: Launching /docker-entrypoint.d/20-envsubst-on-templates.sh",
			"/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh",
			"/docker-entrypoint.sh: Configuration complete; ready for start up",
		} {
			fmt.Fprintln(p.stdout, l)
		}
	}
	if len(args) < 2 {
		return 0
	}
	return p.runCommand(ctx, args[1:], false)
}

// cmdCurlEntrypoint is curlimages/curl's /entrypoint.sh: arguments that
// start with "-" are curl's; anything else is run as given.
func cmdCurlEntrypoint(ctx context.Context, p *proc, args []string) int {
	rest := args[1:]
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		rest = append([]string{"curl"}, rest...)
	}
	return p.runCommand(ctx, rest, false)
}

// cmdSeq is seq [FIRST [INCREMENT]] LAST, integers only, one a line; a
// run is bounded by the container's output limit like any other command.
func cmdSeq(_ context.Context, p *proc, args []string) int {
	nums := make([]int, 0, 3)
	for _, a := range args[1:] {
		n, err := strconv.Atoi(a)
		if err != nil {
			p.errorf("seq: invalid number '%s'\n", a)
			return 1
		}
		nums = append(nums, n)
	}
	first, incr, last := 1, 1, 0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, incr, last = nums[0], nums[1], nums[2]
	default:
		p.errorf("Usage: seq [-w] [-s SEP] [FIRST [INC]] LAST\n")
		return 1
	}
	if incr == 0 {
		p.errorf("seq: invalid increment '0'\n")
		return 1
	}
	var b strings.Builder
	for i := first; (incr > 0 && i <= last) || (incr < 0 && i >= last); i += incr {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
		if b.Len() > 1<<16 {
			if _, err := io.WriteString(p.stdout, b.String()); err != nil {
				return 1
			}
			b.Reset()
		}
	}
	if _, err := io.WriteString(p.stdout, b.String()); err != nil {
		return 1
	}
	return 0
}

// cmdGetent is getent hosts NAME...: the C library's lookup, /etc/hosts
// first (the kubelet writes the Pod's own names there), then DNS through
// the Pod's resolv.conf. Exit 2 when a name is not found, as getent's.
func cmdGetent(_ context.Context, p *proc, args []string) int {
	if len(args) < 3 || args[1] != "hosts" {
		if len(args) >= 2 && args[1] != "hosts" {
			p.errorf("Unknown database: %s\n", args[1])
			return 1
		}
		p.errorf("Usage: getent hosts NAME...\n")
		return 1
	}
	code := 0
	hosts, _ := p.box.fs.read("/etc/hosts")
	for _, name := range args[2:] {
		if line := hostsEntry(hosts, name); line != "" {
			fmt.Fprintln(p.stdout, line)
			continue
		}
		ip, canonical, err := p.resolve(name)
		if err != nil {
			code = 2
			continue
		}
		fmt.Fprintf(p.stdout, "%-15s %s\n", ip, cmp.Or(canonical, name))
	}
	return code
}

// hostsEntry is the /etc/hosts line that names name, as getent prints it.
func hostsEntry(hosts, name string) string {
	for _, line := range strings.Split(hosts, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		for _, n := range f[1:] {
			if strings.EqualFold(n, name) {
				return fmt.Sprintf("%-15s %s", f[0], strings.Join(f[1:], " "))
			}
		}
	}
	return ""
}
