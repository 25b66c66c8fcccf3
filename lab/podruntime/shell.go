package podruntime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// The shell of the lab's images: POSIX sh as busybox's ash and Debian's
// dash run it, parsed by mvdan.cc/sh/v3's syntax package and expanded by
// its expand package (quoting, $VAR, ${VAR:-x}, $(...), $((...)), field
// splitting). The statements are executed here rather than by that
// module's interp.Runner, whose defaults and internals reach the host:
// its Dir option stats a host path, process substitution makes FIFOs in
// the host's temp dir (and redirections to names there bypass the open
// handler), every pipe is an OS pipe, and nothing bounds a variable that
// doubles itself in a loop. Here every command is a Go function of the
// image (commands.go), every file a file of the container's own memory
// (fs.go), every pipe an io.Pipe, and every value, loop and nesting is
// bounded (Limits).

// errOutOfMemory ends a shell whose values outgrow Limits, as the kernel's
// OOM killer ends a container that outgrows its memory.
var errOutOfMemory = errors.New("out of memory")

// exitError carries a shell's exit (the exit builtin) up the stack.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit " + strconv.Itoa(e.code) }

// loopCtl is break or continue travelling up to their loop.
type loopCtl struct {
	brk bool
	n   int
}

func (l *loopCtl) Error() string { return "loop control" }

// shell runs one sh process.
type shell struct {
	p       *proc
	env     *environ
	params  []string
	name    string // $0
	last    int    // $?
	errexit bool
	depth   int
}

// maxDepth bounds nested subshells, command substitutions and eval.
const maxDepth = 16

func newShell(p *proc, name string, params []string) *shell {
	return &shell{p: p, env: p.env, params: params, name: name}
}

// parse parses src as the lab's sh does, refusing what it does not run.
func parseScript(src, name string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	if err := allowed(f); err != nil {
		return nil, err
	}
	return f, nil
}

// allowed walks the syntax tree and refuses every node the lab's shell
// does not run: an allowlist, so that a construct nobody thought about is
// an error, not a way out.
func allowed(f *syntax.File) error {
	var bad error
	syntax.Walk(f, func(n syntax.Node) bool {
		if bad != nil || n == nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.File, *syntax.Stmt, *syntax.CallExpr, *syntax.BinaryCmd, *syntax.Block, *syntax.Subshell,
			*syntax.IfClause, *syntax.WhileClause, *syntax.CaseClause, *syntax.CaseItem, *syntax.DeclClause,
			*syntax.Assign, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted, *syntax.ParamExp,
			*syntax.CmdSubst, *syntax.ArithmExp, *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm,
			*syntax.Redirect, *syntax.Comment:
			if s, ok := n.(*syntax.Stmt); ok && (s.Background || s.Coprocess || s.Disown) {
				bad = errors.New("background jobs (&) are not supported by the lab's shell")
			}
			if r, ok := n.(*syntax.Redirect); ok {
				switch r.Op {
				case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.DplIn, syntax.DplOut, syntax.Hdoc, syntax.DashHdoc, syntax.RdrClob:
				default:
					bad = fmt.Errorf("redirection %s is not supported by the lab's shell", r.Op)
				}
			}
			if c, ok := n.(*syntax.CmdSubst); ok && (c.TempFile || c.ReplyVar) {
				bad = errors.New("this command substitution is not supported by the lab's shell")
			}
			return true
		case *syntax.ForClause:
			if _, ok := n.Loop.(*syntax.WordIter); !ok || n.Select {
				bad = errors.New("only for NAME in WORDS loops are supported by the lab's shell")
			}
			return true
		case *syntax.WordIter:
			return true
		case *syntax.FuncDecl:
			bad = errors.New("functions are not supported by the lab's shell")
		case *syntax.ProcSubst:
			bad = errors.New("process substitution is not supported by the lab's shell")
		default:
			bad = fmt.Errorf("%T is not supported by the lab's shell", n)
		}
		return false
	})
	return bad
}

// run runs a parsed script and returns its exit code.
func (sh *shell) run(ctx context.Context, f *syntax.File) int {
	err := sh.stmts(ctx, f.Stmts)
	return sh.exitCode(err)
}

func (sh *shell) exitCode(err error) int {
	var ex exitError
	switch {
	case err == nil:
		return sh.last
	case errors.As(err, &ex):
		return ex.code
	case errors.Is(err, errOutOfMemory):
		sh.p.errorf("%s: out of memory\n", sh.p.shellName())
		return 137
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return 143 // SIGTERM, as a runtime stops a container
	}
	var lc *loopCtl
	if errors.As(err, &lc) {
		return 0
	}
	sh.p.errorf("%s: %v\n", sh.p.shellName(), err)
	return 2
}

func (sh *shell) stmts(ctx context.Context, stmts []*syntax.Stmt) error {
	for _, st := range stmts {
		if err := sh.stmt(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (sh *shell) stmt(ctx context.Context, st *syntax.Stmt) error {
	if err := sh.p.step(ctx); err != nil {
		return err
	}
	restore, err := sh.redirect(ctx, st.Redirs)
	if err != nil {
		sh.p.errorf("%s: %v\n", sh.p.shellName(), err)
		sh.last = 1
		return nil
	}
	err = sh.cmd(ctx, st.Cmd)
	restore()
	if err != nil {
		return err
	}
	if st.Negated {
		sh.last = b2i(sh.last == 0)
	} else if sh.errexit && sh.last != 0 {
		return exitError{sh.last}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (sh *shell) cmd(ctx context.Context, c syntax.Command) error {
	switch c := c.(type) {
	case nil:
		return nil
	case *syntax.CallExpr:
		return sh.call(ctx, c)
	case *syntax.DeclClause:
		return sh.decl(c)
	case *syntax.Block:
		return sh.stmts(ctx, c.Stmts)
	case *syntax.Subshell:
		sub, err := sh.subshell()
		if err != nil {
			return err
		}
		sh.last = sub.exitCode(sub.stmts(ctx, c.Stmts))
		return nil
	case *syntax.BinaryCmd:
		return sh.binary(ctx, c)
	case *syntax.IfClause:
		for cl := c; cl != nil; cl = cl.Else {
			if len(cl.Cond) == 0 { // else
				return sh.stmts(ctx, cl.Then)
			}
			saved := sh.errexit
			sh.errexit = false
			err := sh.stmts(ctx, cl.Cond)
			sh.errexit = saved
			if err != nil {
				return err
			}
			if sh.last == 0 {
				return sh.stmts(ctx, cl.Then)
			}
		}
		sh.last = 0
		return nil
	case *syntax.WhileClause:
		status := 0
		for {
			saved := sh.errexit
			sh.errexit = false
			err := sh.stmts(ctx, c.Cond)
			sh.errexit = saved
			if err != nil {
				return err
			}
			if (sh.last == 0) == c.Until {
				break
			}
			brk, err := sh.loopBody(ctx, c.Do)
			status = sh.last
			if err != nil {
				return err
			}
			if brk {
				break
			}
		}
		sh.last = status
		return nil
	case *syntax.ForClause:
		it := c.Loop.(*syntax.WordIter) // allowed() made sure
		var items []string
		if it.InPos.IsValid() {
			var err error
			if items, err = sh.fields(it.Items...); err != nil {
				return err
			}
		} else {
			items = slices.Clone(sh.params)
		}
		sh.last = 0
		for _, item := range items {
			if err := sh.env.Set(it.Name.Value, expand.Variable{Set: true, Kind: expand.String, Str: item}); err != nil {
				return err
			}
			brk, err := sh.loopBody(ctx, c.Do)
			if err != nil {
				return err
			}
			if brk {
				break
			}
		}
		return nil
	case *syntax.CaseClause:
		word, err := sh.literal(c.Word)
		if err != nil {
			return err
		}
		sh.last = 0
		for _, item := range c.Items {
			for _, pw := range item.Patterns {
				pat, err := expand.Pattern(sh.expandConfig(ctx), pw)
				if err != nil {
					return err
				}
				re, err := pattern.Regexp(pat, pattern.EntireString)
				if err != nil {
					continue
				}
				if matchRegexp(re, word) {
					return sh.stmts(ctx, item.Stmts)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%T is not supported", c)
}

// loopBody runs one iteration; brk reports a break out of this loop.
func (sh *shell) loopBody(ctx context.Context, body []*syntax.Stmt) (brk bool, err error) {
	err = sh.stmts(ctx, body)
	var lc *loopCtl
	if errors.As(err, &lc) {
		if lc.n > 1 {
			lc.n--
			return true, lc
		}
		return lc.brk, nil
	}
	return false, err
}

func (sh *shell) binary(ctx context.Context, c *syntax.BinaryCmd) error {
	switch c.Op {
	case syntax.AndStmt, syntax.OrStmt:
		saved := sh.errexit
		sh.errexit = false
		err := sh.stmt(ctx, c.X)
		sh.errexit = saved
		if err != nil {
			return err
		}
		if (sh.last == 0) == (c.Op == syntax.AndStmt) {
			return sh.stmt(ctx, c.Y)
		}
		return nil
	case syntax.Pipe:
		return sh.pipeline(ctx, c)
	}
	return fmt.Errorf("operator %s is not supported", c.Op)
}

// maxPipeline bounds the commands of one pipeline.
const maxPipeline = 16

// pipeline runs a | b | c concurrently, each stage in a subshell joined
// by in-memory pipes; its status is the last stage's.
func (sh *shell) pipeline(ctx context.Context, c *syntax.BinaryCmd) error {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.Pipe && len(s.Redirs) == 0 && !s.Negated {
			flatten(b.X)
			flatten(b.Y)
			return
		}
		stages = append(stages, s)
	}
	flatten(c.X)
	flatten(c.Y)
	if len(stages) > maxPipeline {
		return fmt.Errorf("pipeline of %d commands: at most %d", len(stages), maxPipeline)
	}
	subs := make([]*shell, len(stages))
	for i := range stages {
		sub, err := sh.subshell()
		if err != nil {
			return err
		}
		subs[i] = sub
	}
	var in io.Reader = sh.p.stdin
	type result struct {
		i    int
		code int
	}
	done := make(chan result, len(stages))
	for i, st := range stages {
		sub := subs[i]
		sub.p = sh.p.with(in, sh.p.stdout)
		var pr *io.PipeReader
		var pw *io.PipeWriter
		if i < len(stages)-1 {
			pr, pw = io.Pipe()
			sub.p.stdout = pw
			in = pr
		}
		readEnd, _ := sub.p.stdin.(*io.PipeReader)
		go func() {
			code := sub.exitCode(sub.stmt(ctx, st))
			if pw != nil {
				_ = pw.Close()
			}
			if readEnd != nil {
				// A stage that stops reading makes its writer fail, as
				// SIGPIPE does.
				_ = readEnd.CloseWithError(io.ErrClosedPipe)
			}
			done <- result{i, code}
		}()
	}
	last := 0
	for range stages {
		r := <-done
		if r.i == len(stages)-1 {
			last = r.code
		}
	}
	sh.last = last
	return ctx.Err()
}

// subshell is a copy of the shell's state for ( ), $( ) and pipeline
// stages: what it changes does not come back.
func (sh *shell) subshell() (*shell, error) {
	if sh.depth >= maxDepth {
		return nil, fmt.Errorf("nested too deeply (at most %d)", maxDepth)
	}
	sub := *sh
	sub.env = sh.env.clone()
	sub.p = sh.p.with(sh.p.stdin, sh.p.stdout)
	sub.p.env = sub.env
	sub.depth++
	return &sub, nil
}

func (sh *shell) decl(c *syntax.DeclClause) error {
	switch c.Variant.Value {
	case "export", "readonly", "local":
	default:
		return fmt.Errorf("%s: not supported", c.Variant.Value)
	}
	for _, a := range c.Args {
		if a.Name == nil { // export -p and the like
			sh.last = 0
			continue
		}
		v := sh.env.Get(a.Name.Value)
		if !a.Naked {
			s, err := sh.assignValue(a)
			if err != nil {
				return err
			}
			v = expand.Variable{Set: true, Kind: expand.String, Str: s, Exported: v.Exported}
		}
		switch c.Variant.Value {
		case "export":
			v.Exported = true
		case "readonly":
			v.ReadOnly = true
		}
		if !v.Set {
			v.Set, v.Kind = true, expand.String
		}
		if err := sh.env.setForce(a.Name.Value, v); err != nil {
			return err
		}
	}
	sh.last = 0
	return nil
}

func (sh *shell) assignValue(a *syntax.Assign) (string, error) {
	if a.Value == nil {
		return "", nil
	}
	s, err := sh.literal(a.Value)
	if err != nil {
		return "", err
	}
	if a.Append {
		s = sh.env.Get(a.Name.Value).String() + s
	}
	return s, nil
}

func (sh *shell) call(ctx context.Context, c *syntax.CallExpr) error {
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			s, err := sh.assignValue(a)
			if err != nil {
				return err
			}
			if err := sh.env.Set(a.Name.Value, expand.Variable{Set: true, Kind: expand.String, Str: s}); err != nil {
				return err
			}
		}
		sh.last = 0
		return nil
	}
	args, err := sh.fields(c.Args...)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		sh.last = 0
		return nil
	}
	// VAR=x cmd: the variables are the command's only.
	env := sh.env
	if len(c.Assigns) > 0 {
		env = sh.env.clone()
		for _, a := range c.Assigns {
			s, err := sh.assignValue(a)
			if err != nil {
				return err
			}
			if err := env.Set(a.Name.Value, expand.Variable{Set: true, Kind: expand.String, Str: s, Exported: true}); err != nil {
				return err
			}
		}
	}
	if b, ok := builtins[args[0]]; ok {
		sh.last, err = b(ctx, sh, args)
		return err
	}
	p := sh.p.with(sh.p.stdin, sh.p.stdout)
	p.env = env
	sh.last = p.runCommand(ctx, args, true)
	return ctx.Err()
}

// fields expands words into fields, refusing (before building it) a
// result larger than Limits.MaxWord.
func (sh *shell) fields(words ...*syntax.Word) ([]string, error) {
	var est int
	for _, w := range words {
		est += sh.estimate(w)
	}
	if est > sh.p.rt.cfg.Limits.MaxWord {
		return nil, errOutOfMemory
	}
	return expand.Fields(sh.expandConfig(context.Background()), words...)
}

func (sh *shell) literal(w *syntax.Word) (string, error) {
	if w == nil {
		return "", nil
	}
	if sh.estimate(w) > sh.p.rt.cfg.Limits.MaxWord {
		return "", errOutOfMemory
	}
	return expand.Literal(sh.expandConfig(context.Background()), w)
}

// estimate is an upper bound of a word's expanded size.
func (sh *shell) estimate(w *syntax.Word) int {
	if w == nil {
		return 0
	}
	n := 0
	for _, part := range w.Parts {
		n += sh.estimatePart(part)
	}
	return n
}

func (sh *shell) estimatePart(part syntax.WordPart) int {
	switch p := part.(type) {
	case *syntax.Lit:
		return len(p.Value)
	case *syntax.SglQuoted:
		return len(p.Value)
	case *syntax.DblQuoted:
		n := 0
		for _, q := range p.Parts {
			n += sh.estimatePart(q)
		}
		return n
	case *syntax.CmdSubst:
		return sh.p.rt.cfg.Limits.MaxCmdSubst
	case *syntax.ArithmExp:
		return 24
	case *syntax.ParamExp:
		v := 0
		switch name := p.Param.Value; name {
		case "@", "*":
			for _, s := range sh.params {
				v += len(s) + 1
			}
		default:
			v = len(sh.env.Get(name).String())
		}
		if p.Exp != nil {
			v += sh.estimate(p.Exp.Word)
		}
		if p.Repl != nil {
			v *= 1 + sh.estimate(p.Repl.With)
		}
		return v + 24
	}
	return 1 << 30 // unknown: refused
}

func (sh *shell) expandConfig(ctx context.Context) *expand.Config {
	return &expand.Config{
		Env: &shellEnv{sh: sh},
		CmdSubst: func(w io.Writer, cs *syntax.CmdSubst) error {
			sub, err := sh.subshell()
			if err != nil {
				return err
			}
			lw := &limitWriter{w: w, n: sh.p.rt.cfg.Limits.MaxCmdSubst}
			sub.p = sub.p.with(sh.p.stdin, lw)
			code := sub.exitCode(sub.stmts(ctx, cs.Stmts))
			sh.last = code
			return nil
		},
		// No ReadDir: the lab's shell does not glob; a * stays a *.
	}
}

// redirect applies a statement's redirections to the shell's process and
// returns how to undo them.
func (sh *shell) redirect(ctx context.Context, rs []*syntax.Redirect) (func(), error) {
	if len(rs) == 0 {
		return func() {}, nil
	}
	saved := *sh.p
	undo := func() {
		sh.p.stdin, sh.p.stdout, sh.p.stderr = saved.stdin, saved.stdout, saved.stderr
	}
	for _, r := range rs {
		fd := -1
		if r.N != nil {
			n, err := strconv.Atoi(r.N.Value)
			if err != nil || n > 2 {
				undo()
				return nil, fmt.Errorf("%s: bad file descriptor", r.N.Value)
			}
			fd = n
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			body, err := expand.Document(sh.expandConfig(ctx), r.Hdoc)
			if err != nil {
				undo()
				return nil, err
			}
			if r.Op == syntax.DashHdoc {
				lines := strings.Split(body, "\n")
				for i, l := range lines {
					lines[i] = strings.TrimLeft(l, "\t")
				}
				body = strings.Join(lines, "\n")
			}
			sh.p.stdin = strings.NewReader(body)
			continue
		}
		target, err := sh.literal(r.Word)
		if err != nil {
			undo()
			return nil, err
		}
		switch r.Op {
		case syntax.DplOut, syntax.DplIn:
			var w io.Writer
			switch target {
			case "1":
				w = sh.p.stdout
			case "2":
				w = sh.p.stderr
			case "-":
				w = io.Discard
			default:
				undo()
				return nil, fmt.Errorf("%s: bad file descriptor", target)
			}
			if r.Op == syntax.DplIn {
				continue // <&0 and the like: nothing to do
			}
			if fd == 2 {
				sh.p.stderr = w
			} else {
				sh.p.stdout = w
			}
		case syntax.RdrIn:
			data, err := sh.p.box.fs.read(sh.p.abs(target))
			if err != nil {
				undo()
				return nil, fmt.Errorf("can't open '%s': %v", target, err)
			}
			sh.p.stdin = strings.NewReader(data)
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob:
			w, err := sh.p.box.fs.writer(sh.p.abs(target), r.Op == syntax.AppOut)
			if err != nil {
				undo()
				return nil, fmt.Errorf("can't create %s: %v", target, err)
			}
			if fd == 2 {
				sh.p.stderr = w
			} else {
				sh.p.stdout = w
			}
		}
	}
	return undo, nil
}

// interactive reads commands from stdin line by line, as sh does when it
// is attached to a terminal (kubectl exec -it, run -it, debug -it).
func (sh *shell) interactive(ctx context.Context, tty bool) int {
	p := sh.p
	in := p.stdin
	if in == nil {
		return 0
	}
	var lines *bufio.Reader
	if tty {
		t := newLineDiscipline(in, p.stdout)
		p.stdout = t.out
		p.stderr = t.out
		lines = bufio.NewReaderSize(t, 4096)
	} else {
		lines = bufio.NewReaderSize(in, 4096)
	}
	prompt := func() {
		if tty {
			fmt.Fprint(p.stdout, p.box.prompt(p.dir))
		}
	}
	prompt()
	var buf strings.Builder
	for ctx.Err() == nil {
		line, err := lines.ReadString('\n')
		if len(line) > p.rt.cfg.Limits.MaxScript {
			p.errorf("%s: line too long\n", p.shellName())
			line = ""
		}
		buf.WriteString(line)
		if buf.Len() > 0 && (err == nil || errors.Is(err, io.EOF)) {
			f, perr := parseScript(buf.String(), "")
			if perr != nil && syntax.IsIncomplete(perr) && err == nil && buf.Len() < p.rt.cfg.Limits.MaxScript {
				if tty {
					fmt.Fprint(p.stdout, "> ")
				}
				continue
			}
			buf.Reset()
			if perr != nil {
				p.errorf("%s: %v\n", p.shellName(), perr)
				sh.last = 2
			} else if serr := sh.stmts(ctx, f.Stmts); serr != nil {
				var ex exitError
				if errors.As(serr, &ex) {
					return ex.code
				}
				sh.last = sh.exitCode(serr)
				if ctx.Err() != nil {
					return sh.last
				}
			}
		}
		if err != nil {
			if tty {
				fmt.Fprint(p.stdout, "exit\n")
			}
			return sh.last
		}
		prompt()
	}
	return 143
}

// lineDiscipline is the little a terminal's line discipline does for the
// lab's shell: echo what is typed, erase on backspace, end a line on
// Enter, drop a line on Ctrl-C, end input on Ctrl-D, and turn "\n" into
// "\r\n" on the way out (a raw terminal on kubectl's side expects both).
type lineDiscipline struct {
	in  io.Reader
	out io.Writer
	raw io.Writer
	pr  *io.PipeReader
}

func newLineDiscipline(in io.Reader, out io.Writer) *lineDiscipline {
	t := &lineDiscipline{in: in, raw: out, out: crlfWriter{out}}
	pr, pw := io.Pipe()
	t.pr = pr
	go func() {
		var line []byte
		buf := make([]byte, 256)
		for {
			n, err := in.Read(buf)
			for _, b := range buf[:n] {
				switch b {
				case '\r', '\n':
					_, _ = out.Write([]byte("\r\n"))
					line = append(line, '\n')
					if _, werr := pw.Write(line); werr != nil {
						return
					}
					line = line[:0]
				case 0x7f, 0x08:
					if len(line) > 0 {
						line = line[:len(line)-1]
						_, _ = out.Write([]byte("\b \b"))
					}
				case 0x03: // Ctrl-C
					line = line[:0]
					_, _ = out.Write([]byte("^C\r\n"))
					_, _ = pw.Write([]byte("\n"))
				case 0x04: // Ctrl-D
					if len(line) == 0 {
						_ = pw.Close()
						return
					}
				default:
					if len(line) < 4096 {
						line = append(line, b)
						_, _ = out.Write([]byte{b})
					}
				}
			}
			if err != nil {
				_ = pw.Close()
				return
			}
		}
	}()
	return t
}

func (t *lineDiscipline) Read(b []byte) (int, error) { return t.pr.Read(b) }

type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(b []byte) (int, error) {
	if !slices.Contains(b, '\n') {
		return c.w.Write(b)
	}
	s := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n", "\r\n")
	if _, err := c.w.Write([]byte(s)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// limitWriter keeps the first n bytes and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if l.n <= 0 {
		return len(b), nil
	}
	keep := b
	if len(keep) > l.n {
		keep = keep[:l.n]
	}
	l.n -= len(keep)
	if _, err := l.w.Write(keep); err != nil {
		return 0, err
	}
	return len(b), nil
}

// environ is a process's variables, bounded in size.
type environ struct {
	vars  map[string]expand.Variable
	size  int
	limit int
}

func newEnviron(limit int, pairs []string) *environ {
	e := &environ{vars: map[string]expand.Variable{}, limit: limit}
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		_ = e.setForce(k, expand.Variable{Set: true, Kind: expand.String, Str: v, Exported: true})
	}
	return e
}

func (e *environ) clone() *environ {
	return &environ{vars: maps.Clone(e.vars), size: e.size, limit: e.limit}
}

func (e *environ) Get(name string) expand.Variable { return e.vars[name] }

func (e *environ) Each(f func(string, expand.Variable) bool) {
	for _, k := range slices.Sorted(maps.Keys(e.vars)) {
		if !f(k, e.vars[k]) {
			return
		}
	}
}

func (e *environ) Set(name string, v expand.Variable) error {
	if old, ok := e.vars[name]; ok && old.ReadOnly {
		return fmt.Errorf("%s: is read only", name)
	}
	if old, ok := e.vars[name]; ok && v.Kind == expand.KeepValue {
		old.Exported = old.Exported || v.Exported
		v = old
	}
	if old, ok := e.vars[name]; ok {
		v.Exported = v.Exported || old.Exported
	}
	return e.setForce(name, v)
}

func (e *environ) setForce(name string, v expand.Variable) error {
	if v.Kind == expand.KeepValue {
		v.Kind = expand.String
	}
	old := e.vars[name]
	size := e.size - len(name) - len(old.Str)
	if !v.IsSet() {
		delete(e.vars, name)
		e.size = max(size, 0)
		return nil
	}
	size += len(name) + len(v.Str)
	if size > e.limit {
		return errOutOfMemory
	}
	e.size = size
	e.vars[name] = v
	return nil
}

// pairs are the exported variables as NAME=value, sorted.
func (e *environ) pairs() []string {
	var out []string
	for k, v := range e.Each {
		if v.Exported && v.IsSet() {
			out = append(out, k+"="+v.String())
		}
	}
	return out
}

// shellEnv is the environment expansions see: the variables and the
// special parameters.
type shellEnv struct{ sh *shell }

func (s *shellEnv) Get(name string) expand.Variable {
	sh := s.sh
	str := func(v string) expand.Variable { return expand.Variable{Set: true, Kind: expand.String, Str: v} }
	switch name {
	case "?":
		return str(strconv.Itoa(sh.last))
	case "#":
		return str(strconv.Itoa(len(sh.params)))
	case "$":
		return str("1")
	case "0":
		return str(sh.name)
	case "@", "*":
		return expand.Variable{Set: true, Kind: expand.Indexed, List: slices.Clone(sh.params)}
	case "PWD":
		return str(sh.p.dir)
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		if n <= len(sh.params) {
			return str(sh.params[n-1])
		}
		return expand.Variable{}
	}
	return sh.env.Get(name)
}

func (s *shellEnv) Set(name string, v expand.Variable) error { return s.sh.env.Set(name, v) }

func (s *shellEnv) Each(f func(string, expand.Variable) bool) { s.sh.env.Each(f) }

// builtins are the commands the shell runs itself.
var builtins map[string]func(ctx context.Context, sh *shell, args []string) (int, error)

func init() {
	builtins = map[string]func(ctx context.Context, sh *shell, args []string) (int, error){
		":":    func(context.Context, *shell, []string) (int, error) { return 0, nil },
		"true": func(context.Context, *shell, []string) (int, error) { return 0, nil },
		"false": func(context.Context, *shell, []string) (int, error) {
			return 1, nil
		},
		"exit": func(_ context.Context, sh *shell, args []string) (int, error) {
			code := sh.last
			if len(args) > 1 {
				n, err := strconv.Atoi(args[1])
				if err != nil {
					sh.p.errorf("%s: exit: Illegal number: %s\n", sh.p.shellName(), args[1])
					return 2, exitError{2}
				}
				code = n & 0xff
			}
			return code, exitError{code}
		},
		"break":    loopBuiltin(true),
		"continue": loopBuiltin(false),
		"cd": func(_ context.Context, sh *shell, args []string) (int, error) {
			dir := "/"
			if len(args) > 1 {
				dir = sh.p.abs(args[1])
			} else if h := sh.env.Get("HOME").String(); h != "" {
				dir = h
			}
			if !sh.p.box.fs.isDir(dir) {
				sh.p.errorf("%s: cd: can't cd to %s: No such file or directory\n", sh.p.shellName(), args[len(args)-1])
				return 2, nil
			}
			sh.p.dir = dir
			return 0, nil
		},
		"pwd": func(_ context.Context, sh *shell, _ []string) (int, error) {
			fmt.Fprintln(sh.p.stdout, sh.p.dir)
			return 0, nil
		},
		"set": func(_ context.Context, sh *shell, args []string) (int, error) {
			for _, a := range args[1:] {
				switch a {
				case "-e":
					sh.errexit = true
				case "+e":
					sh.errexit = false
				case "-x", "+x", "-u", "+u", "-o", "pipefail", "--":
				}
			}
			if len(args) == 1 {
				for _, kv := range sh.env.pairs() {
					fmt.Fprintln(sh.p.stdout, kv)
				}
			}
			return 0, nil
		},
		"shift": func(_ context.Context, sh *shell, args []string) (int, error) {
			n := 1
			if len(args) > 1 {
				n, _ = strconv.Atoi(args[1])
			}
			if n > len(sh.params) || n < 0 {
				return 1, nil
			}
			sh.params = sh.params[n:]
			return 0, nil
		},
		"unset": func(_ context.Context, sh *shell, args []string) (int, error) {
			for _, a := range args[1:] {
				if strings.HasPrefix(a, "-") {
					continue
				}
				if err := sh.env.Set(a, expand.Variable{}); err != nil {
					return 1, nil
				}
			}
			return 0, nil
		},
		"read": func(_ context.Context, sh *shell, args []string) (int, error) {
			in := sh.p.stdin
			if in == nil {
				return 1, nil
			}
			var line []byte
			b := make([]byte, 1)
			for len(line) < 4096 {
				n, err := in.Read(b)
				if n == 1 {
					if b[0] == '\n' {
						break
					}
					line = append(line, b[0])
				}
				if err != nil {
					if len(line) == 0 {
						return 1, nil
					}
					break
				}
			}
			names := []string{}
			for _, a := range args[1:] {
				if !strings.HasPrefix(a, "-") {
					names = append(names, a)
				}
			}
			if len(names) == 0 {
				names = []string{"REPLY"}
			}
			fields := strings.Fields(string(line))
			for i, n := range names {
				v := ""
				switch {
				case i == len(names)-1 && i < len(fields):
					v = strings.Join(fields[i:], " ")
				case i < len(fields):
					v = fields[i]
				}
				if err := sh.env.Set(n, expand.Variable{Set: true, Kind: expand.String, Str: v}); err != nil {
					return 1, err
				}
			}
			return 0, nil
		},
		"trap": func(context.Context, *shell, []string) (int, error) {
			// Accepted and ignored: a stopping container's shell ends at
			// once in the lab, with 143 as after SIGTERM.
			return 0, nil
		},
		"wait": func(context.Context, *shell, []string) (int, error) { return 0, nil },
		"exec": func(ctx context.Context, sh *shell, args []string) (int, error) {
			if len(args) == 1 {
				return 0, nil
			}
			code := sh.p.runCommand(ctx, args[1:], true)
			return code, exitError{code}
		},
		"eval": func(ctx context.Context, sh *shell, args []string) (int, error) {
			if sh.depth >= maxDepth {
				return 2, fmt.Errorf("eval nested too deeply")
			}
			f, err := parseScript(strings.Join(args[1:], " "), "")
			if err != nil {
				sh.p.errorf("%s: %v\n", sh.p.shellName(), err)
				return 2, nil
			}
			sh.depth++
			defer func() { sh.depth-- }()
			err = sh.stmts(ctx, f.Stmts)
			return sh.last, err
		},
		"command": func(ctx context.Context, sh *shell, args []string) (int, error) {
			if len(args) > 2 && (args[1] == "-v" || args[1] == "-V") {
				if p, ok := sh.p.box.lookPath(args[2]); ok {
					fmt.Fprintln(sh.p.stdout, p)
					return 0, nil
				}
				if _, ok := builtins[args[2]]; ok {
					fmt.Fprintln(sh.p.stdout, args[2])
					return 0, nil
				}
				return 1, nil
			}
			if len(args) > 1 {
				return sh.p.runCommand(ctx, args[1:], true), nil
			}
			return 0, nil
		},
		"type": func(_ context.Context, sh *shell, args []string) (int, error) {
			code := 0
			for _, a := range args[1:] {
				if _, ok := builtins[a]; ok {
					fmt.Fprintf(sh.p.stdout, "%s is a shell builtin\n", a)
				} else if p, ok := sh.p.box.lookPath(a); ok {
					fmt.Fprintf(sh.p.stdout, "%s is %s\n", a, p)
				} else {
					fmt.Fprintf(sh.p.stdout, "%s: not found\n", a)
					code = 1
				}
			}
			return code, nil
		},
	}
}

func loopBuiltin(brk bool) func(context.Context, *shell, []string) (int, error) {
	return func(_ context.Context, sh *shell, args []string) (int, error) {
		n := 1
		if len(args) > 1 {
			if v, err := strconv.Atoi(args[1]); err == nil && v > 0 {
				n = v
			}
		}
		return 0, &loopCtl{brk: brk, n: n}
	}
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, clock interface {
	After(time.Duration) <-chan time.Time
}, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-clock.After(d):
		return nil
	}
}

func cleanPath(dir, p string) string {
	if !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	return path.Clean(p)
}
