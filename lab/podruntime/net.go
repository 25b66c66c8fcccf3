package podruntime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// The network commands. None opens a socket: each request goes to the
// data plane (Network.FromPod) as the Pod, and each name to the cluster's
// DNS (Network.Lookup) through the Pod's resolv.conf rules.

// connectTimeout is how long a connection to a dropped destination waits
// before it gives up (a real client waits minutes; the lab not).
const connectTimeout = 10 * time.Second

// errNoHost: the name does not resolve.
var errNoHost = errors.New("could not resolve host")

// resolve turns host into an address as the Pod's resolver does: an IP
// as is, /etc/hosts (localhost, the Pod's own name), then the cluster
// DNS with the search list (ndots:5: a name with fewer dots tries the
// search domains first).
func (p *proc) resolve(host string) (string, string, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.String(), host, nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	switch h {
	case "localhost", "ip6-localhost":
		return "127.0.0.1", h, nil
	case p.box.hostname:
		return p.box.pod.Status.PodIP, h, nil
	}
	for _, name := range p.searchNames(host) {
		ans, err := p.rt.cfg.Network.Lookup(p.box.pod, name, dataplane.TypeA)
		if err != nil {
			return "", "", err
		}
		if ans.CNAME != "" && len(ans.Addrs) == 0 {
			// An ExternalName: its target is outside the lab.
			return "", name, errNoHost
		}
		if len(ans.Addrs) > 0 {
			return ans.Addrs[0], ans.Name, nil
		}
	}
	return "", "", errNoHost
}

// searchNames are the names a resolver tries for host, in order.
func (p *proc) searchNames(host string) []string {
	if strings.HasSuffix(host, ".") {
		return []string{strings.TrimSuffix(host, ".")}
	}
	ns := p.box.pod.Namespace
	search := []string{ns + ".svc." + dataplane.ClusterDomain, "svc." + dataplane.ClusterDomain, dataplane.ClusterDomain}
	var out []string
	if strings.Count(host, ".") >= 5 {
		out = append(out, host)
	}
	for _, s := range search {
		out = append(out, host+"."+s)
	}
	if !slices.Contains(out, host) {
		out = append(out, host)
	}
	return out
}

// httpResult is one HTTP exchange as a client saw it.
type httpResult struct {
	ip     string
	status int
	proto  string
	header http.Header
	body   []byte
	trace  string
}

// fetch sends one request from the process's Pod. timeout bounds the
// wait of a dropped connection.
func (p *proc) fetch(ctx context.Context, ip string, port int32, method, uri string, h http.Header, body []byte, timeout time.Duration) (httpResult, error) {
	if err := p.step(ctx); err != nil {
		return httpResult{}, err
	}
	resp, err := p.rt.cfg.Network.FromPod(ctx, dataplane.PodRequest{From: p.box.pod, IP: ip, Port: port, Method: method, URI: uri, Header: h, Body: body})
	var ce *dataplane.ConnError
	if errors.As(err, &ce) && !ce.Refused {
		// A dropped packet: the client waits for its timeout.
		if serr := sleepCtx(ctx, p.rt.cfg.Clock, timeout); serr != nil {
			return httpResult{}, serr
		}
		return httpResult{}, err
	}
	if err != nil {
		return httpResult{}, err
	}
	b := resp.Body
	if len(b) > p.rt.cfg.Limits.MaxBody {
		b = b[:p.rt.cfg.Limits.MaxBody]
	}
	return httpResult{ip: ip, status: resp.Status, proto: "HTTP/1.1", header: resp.Header, body: b, trace: resp.Trace.ID}, nil
}

// target is a parsed URL.
type target struct {
	scheme, host string
	port         int32
	uri          string
}

func parseTarget(raw string, defPort int32) (target, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return target{}, fmt.Errorf("bad URL %q", raw)
	}
	t := target{scheme: strings.ToLower(u.Scheme), host: u.Hostname(), port: defPort, uri: u.RequestURI()}
	if t.scheme == "https" {
		t.port = 443
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return target{}, fmt.Errorf("bad port %q", ps)
		}
		t.port = int32(n)
	}
	return t, nil
}

const curlVersion = "8.15.0"

// cmdCurl is curl with the options students use. Its messages are
// curl 8's (lib/strerror.c and the tool's "curl: (N) ..." lines).
func cmdCurl(ctx context.Context, p *proc, args []string) int {
	o := struct {
		silent, showErr, verbose, head, include, fail, location bool
		output, writeOut, method, data                          string
		hasData                                                 bool
		headers                                                 []string
		maxTime, connTimeout                                    time.Duration
		resolve                                                 []string
		userAgent                                               string
		urls                                                    []string
	}{}
	needArg := func(i int, name string) (string, bool) {
		if i+1 >= len(args) {
			p.errorf("curl: option %s: requires parameter\ncurl: try 'curl --help' or 'curl --manual' for more information\n", name)
			return "", false
		}
		return args[i+1], true
	}
	seconds := func(v string) (time.Duration, bool) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, false
		}
		return time.Duration(f * float64(time.Second)), true
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		long := map[string]string{
			"--silent": "s", "--show-error": "S", "--verbose": "v", "--head": "I", "--include": "i", "--fail": "f",
			"--location": "L", "--insecure": "k", "--output": "o", "--write-out": "w", "--request": "X", "--header": "H",
			"--data": "d", "--data-raw": "d", "--data-binary": "d", "--max-time": "m", "--user-agent": "A",
			"--http1.1": "", "--ipv4": "", "--compressed": "", "--no-progress-meter": "s",
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			switch name {
			case "--resolve", "--connect-timeout", "--url":
				if !hasVal {
					v, ok := needArg(i, name)
					if !ok {
						return 2
					}
					val = v
					i++
				}
				switch name {
				case "--resolve":
					o.resolve = append(o.resolve, val)
				case "--url":
					o.urls = append(o.urls, val)
				default:
					d, ok := seconds(val)
					if !ok {
						p.errorf("curl: option --connect-timeout: expected a proper numerical parameter\n")
						return 2
					}
					o.connTimeout = d
				}
				continue
			}
			short, ok := long[name]
			if !ok {
				p.errorf("curl: option %s: is unknown\ncurl: try 'curl --help' or 'curl --manual' for more information\n", name)
				return 2
			}
			if short == "" {
				continue
			}
			if hasVal {
				args = slices.Insert(slices.Clone(args), i+1, val)
			}
			a = "-" + short
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags := a[1:]
			for j := 0; j < len(flags); j++ {
				f := flags[j]
				takes := strings.IndexByte("owXHdmA", f) >= 0
				var val string
				if takes {
					if j+1 < len(flags) {
						val = flags[j+1:]
					} else {
						v, ok := needArg(i, "-"+string(f))
						if !ok {
							return 2
						}
						val = v
						i++
					}
				}
				switch f {
				case 's':
					o.silent = true
				case 'S':
					o.showErr = true
				case 'v':
					o.verbose = true
				case 'I':
					o.head = true
				case 'i':
					o.include = true
				case 'f':
					o.fail = true
				case 'L':
					o.location = true
				case 'k', '4', 'q':
				case 'o':
					o.output = val
				case 'w':
					o.writeOut = val
				case 'X':
					o.method = val
				case 'H':
					o.headers = append(o.headers, val)
				case 'd':
					if o.hasData {
						o.data += "&"
					}
					o.data += val
					o.hasData = true
				case 'm':
					d, ok := seconds(val)
					if !ok {
						p.errorf("curl: option -m: expected a proper numerical parameter\n")
						return 2
					}
					o.maxTime = d
				case 'A':
					o.userAgent = val
				default:
					p.errorf("curl: option -%c: is unknown\ncurl: try 'curl --help' or 'curl --manual' for more information\n", f)
					return 2
				}
				if takes {
					break
				}
			}
			continue
		}
		o.urls = append(o.urls, a)
	}
	if len(o.urls) == 0 {
		p.errorf("curl: try 'curl --help' or 'curl --manual' for more information\n")
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		if !o.silent || o.showErr {
			p.errorf("curl: (%d) %s\n", code, fmt.Sprintf(format, a...))
		}
		return code
	}
	if o.maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.maxTime)
		defer cancel()
	}
	var out io.Writer = p.stdout
	if o.output != "" && o.output != "-" {
		w, err := p.createOutput(o.output)
		if err != nil {
			return fail(23, "Failure writing output to destination, passed 0 returned -1")
		}
		out = w
	}
	code := 0
	for _, raw := range o.urls {
		start := p.rt.cfg.Clock.Now()
		t, err := parseTarget(raw, 80)
		if err != nil {
			return fail(3, "URL rejected: Malformed input to a URL function")
		}
		if t.scheme != "http" && t.scheme != "https" {
			return fail(1, "Protocol \"%s\" not supported", t.scheme)
		}
		ip := ""
		for _, r := range o.resolve {
			parts := strings.SplitN(r, ":", 3)
			if len(parts) == 3 && strings.EqualFold(parts[0], t.host) && (parts[1] == strconv.Itoa(int(t.port)) || parts[1] == "*") {
				ip = strings.Trim(parts[2], "[]")
			}
		}
		if ip == "" {
			ip, _, err = p.resolve(t.host)
			if err != nil {
				if errors.Is(err, errNoHost) {
					return fail(6, "Could not resolve host: %s", t.host)
				}
				return fail(6, "Could not resolve host: %s", t.host)
			}
		}
		if o.verbose {
			p.errorf("* Host %s:%d was resolved.\n* IPv4: %s\n*   Trying %s:%d...\n", t.host, t.port, ip, ip, t.port)
		}
		if t.scheme == "https" {
			res, err := p.fetch(ctx, ip, t.port, http.MethodGet, "/", nil, nil, timeoutFor(o.connTimeout, o.maxTime))
			if err == nil && res.status != 0 {
				return fail(35, "TLS connect error: error:0A00010B:SSL routines::wrong version number")
			}
			return connFail(ctx, p, fail, err, t, ip, start)
		}
		method := cmpStr(o.method, "GET")
		if o.head {
			method = cmpStr(o.method, "HEAD")
		} else if o.hasData && o.method == "" {
			method = "POST"
		}
		h := http.Header{}
		hostHdr := t.host
		if t.port != 80 {
			hostHdr = t.host + ":" + strconv.Itoa(int(t.port))
		}
		h.Set("Host", hostHdr)
		h.Set("User-Agent", cmpStr(o.userAgent, "curl/"+curlVersion))
		h.Set("Accept", "*/*")
		if o.hasData {
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for _, hv := range o.headers {
			k, v, ok := strings.Cut(hv, ":")
			if ok {
				h.Set(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
		res, err := p.fetch(ctx, ip, t.port, method, t.uri, h, []byte(o.data), timeoutFor(o.connTimeout, o.maxTime))
		if err != nil {
			return connFail(ctx, p, fail, err, t, ip, start)
		}
		if o.verbose {
			p.errorf("* Connected to %s (%s) port %d\n* using HTTP/1.x\n", t.host, ip, t.port)
			p.errorf("> %s %s HTTP/1.1\n> Host: %s\n> User-Agent: %s\n> Accept: */*\n", method, t.uri, hostHdr, h.Get("User-Agent"))
			for _, hv := range o.headers {
				p.errorf("> %s\n", hv)
			}
			p.errorf("> \n* Request completely sent off\n")
			p.errorf("< %s %d %s\n", res.proto, res.status, http.StatusText(res.status))
			for _, l := range headerLines(res) {
				p.errorf("< %s\n", l)
			}
			p.errorf("< \n")
		}
		if o.fail && res.status >= 400 {
			code = fail(22, "The requested URL returned error: %d", res.status)
			continue
		}
		if o.head || o.include {
			fmt.Fprintf(out, "%s %d %s\r\n", res.proto, res.status, http.StatusText(res.status))
			for _, l := range headerLines(res) {
				fmt.Fprintf(out, "%s\r\n", l)
			}
			fmt.Fprint(out, "\r\n")
		}
		if !o.silent && !o.verbose && !p.tty {
			// curl shows its progress meter when the body does not go
			// to a terminal.
			progressMeter(p, len(res.body))
		}
		if !o.head && method != "HEAD" {
			_, _ = out.Write(res.body)
		}
		if o.verbose {
			p.errorf("* Connection #0 to host %s left intact\n", t.host)
		}
		if o.writeOut != "" {
			fmt.Fprint(p.stdout, writeOut(o.writeOut, res, raw, ip, t.port, p.rt.cfg.Clock.Now().Sub(start)))
		}
	}
	return code
}

func timeoutFor(conn, maxTime time.Duration) time.Duration {
	d := connectTimeout
	if conn > 0 && conn < d {
		d = conn
	}
	if maxTime > 0 && maxTime < d {
		d = maxTime
	}
	return d
}

func connFail(ctx context.Context, p *proc, fail func(int, string, ...any) int, err error, t target, ip string, start time.Time) int {
	ms := p.rt.cfg.Clock.Now().Sub(start).Milliseconds()
	var ce *dataplane.ConnError
	switch {
	case errors.As(err, &ce) && ce.Refused:
		return fail(7, "Failed to connect to %s port %d after %d ms: Could not connect to server", t.host, t.port, ms)
	case errors.As(err, &ce), errors.Is(err, context.DeadlineExceeded):
		if ctx.Err() != nil {
			return fail(28, "Connection timed out after %d milliseconds", ms)
		}
		return fail(28, "Failed to connect to %s port %d after %d ms: Timeout was reached", t.host, t.port, ms)
	case ctx.Err() != nil:
		return 130
	}
	return fail(7, "Failed to connect to %s port %d after %d ms: %v", t.host, t.port, ms, err)
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func headerLines(res httpResult) []string {
	h := res.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.Itoa(len(res.body)))
	}
	if h.Get("Date") == "" {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	var out []string
	keys := make([]string, 0, len(h))
	for k := range h {
		if k == dataplane.TraceHeader {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// nginx sends Server first.
	if i := slices.Index(keys, "Server"); i > 0 {
		keys = append([]string{"Server"}, slices.Delete(keys, i, i+1)...)
	}
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, k+": "+v)
		}
	}
	return out
}

// writeOut expands curl's -w variables.
func writeOut(format string, res httpResult, rawURL, ip string, port int32, took time.Duration) string {
	vars := map[string]string{
		"http_code":     fmt.Sprintf("%03d", res.status),
		"response_code": fmt.Sprintf("%03d", res.status),
		"remote_ip":     ip,
		"remote_port":   strconv.Itoa(int(port)),
		"size_download": strconv.Itoa(len(res.body)),
		"url_effective": rawURL,
		"url":           rawURL,
		"content_type":  res.header.Get("Content-Type"),
		"time_total":    fmt.Sprintf("%.6f", took.Seconds()),
		"time_connect":  fmt.Sprintf("%.6f", took.Seconds()/2),
		"exitcode":      "0",
		"http_version":  "1.1",
		"scheme":        "http",
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		switch {
		case strings.HasPrefix(format[i:], "%{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				b.WriteString(format[i:])
				return b.String()
			}
			name := format[i+2 : i+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else if hn, ok := strings.CutPrefix(name, "header{"); ok {
				b.WriteString(res.header.Get(hn))
			}
			i += end
		case format[i] == '\\' && i+1 < len(format):
			switch format[i+1] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(format[i+1])
			}
			i++
		default:
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func progressMeter(p *proc, n int) {
	p.errorf("  %% Total    %% Received %% Xferd  Average Speed   Time    Time     Time  Current\n")
	p.errorf("                                 Dload  Upload   Total   Spent    Left  Speed\n")
	p.errorf("\r100 %5d  100 %5d    0     0   %4dk      0 --:--:-- --:--:-- --:--:-- %4dk\n", n, n, max(n/1000, 1), max(n/1000, 1))
}

// cmdWget is busybox's wget: -q, -O FILE (- for stdout), -T SECONDS,
// --spider, -S.
func cmdWget(ctx context.Context, p *proc, args []string) int {
	quiet, spider, showHeaders := false, false, false
	output := ""
	timeout := connectTimeout
	var urls []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--spider":
			spider = true
		case a == "-O" || a == "-T":
			if i+1 >= len(args) {
				p.errorf("wget: option requires an argument -- '%s'\n", a[1:])
				return 1
			}
			if a == "-O" {
				output = args[i+1]
			} else if d, ok := parseDuration(args[i+1]); ok {
				timeout = d
			}
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags := a[1:]
			for j := 0; j < len(flags); j++ {
				switch flags[j] {
				case 'q':
					quiet = true
				case 'S':
					showHeaders = true
				case 'O':
					output = flags[j+1:]
					if output == "" && i+1 < len(args) {
						output = args[i+1]
						i++
					}
					j = len(flags)
				case 'T':
					v := flags[j+1:]
					if v == "" && i+1 < len(args) {
						v = args[i+1]
						i++
					}
					if d, ok := parseDuration(v); ok {
						timeout = d
					}
					j = len(flags)
				}
			}
		default:
			urls = append(urls, a)
		}
	}
	if len(urls) == 0 {
		p.errorf("BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\nUsage: wget [-cqS] [--spider] [-O FILE] [-T SEC] URL...\n")
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	for _, raw := range urls {
		t, err := parseTarget(raw, 80)
		if err != nil {
			p.errorf("wget: bad address '%s'\n", raw)
			return 1
		}
		ip, _, err := p.resolve(t.host)
		if err != nil {
			p.errorf("wget: bad address '%s'\n", t.host)
			return 1
		}
		if !quiet {
			p.errorf("Connecting to %s (%s:%d)\n", t.host, ip, t.port)
		}
		h := http.Header{}
		h.Set("Host", t.host)
		h.Set("User-Agent", "Wget")
		method := http.MethodGet
		if spider {
			method = http.MethodHead
		}
		res, err := p.fetch(ctx, ip, t.port, method, t.uri, h, nil, timeout)
		if err != nil {
			var ce *dataplane.ConnError
			if errors.As(err, &ce) && ce.Refused {
				p.errorf("wget: can't connect to remote host (%s): Connection refused\n", ip)
			} else {
				p.errorf("wget: download timed out\n")
			}
			return 1
		}
		if showHeaders {
			p.errorf("  %s %d %s\n", res.proto, res.status, http.StatusText(res.status))
			for _, l := range headerLines(res) {
				p.errorf("  %s\n", l)
			}
		}
		if res.status >= 400 {
			p.errorf("wget: server returned error: %s %d %s\n", res.proto, res.status, http.StatusText(res.status))
			return 1
		}
		if spider {
			if !quiet {
				p.errorf("remote file exists\n")
			}
			continue
		}
		name := output
		if name == "" {
			name = "index.html"
			if b := t.uri[strings.LastIndex(t.uri, "/")+1:]; b != "" && !strings.Contains(b, "?") {
				name = b
			}
		}
		if name == "-" {
			if !quiet {
				p.errorf("writing to stdout\n")
			}
			_, _ = p.stdout.Write(res.body)
			if !quiet {
				p.errorf("-                    100%% |********************************|   %d  0:00:00 ETA\nwritten to stdout\n", len(res.body))
			}
			continue
		}
		w, err := p.box.fs.writer(p.abs(name), false)
		if err != nil {
			p.errorf("wget: can't open '%s': %v\n", name, err)
			return 1
		}
		if _, err := w.Write(res.body); err != nil {
			p.errorf("wget: write error: %v\n", err)
			return 1
		}
		if !quiet {
			p.errorf("saving to '%s'\n%-20s 100%% |********************************|   %d  0:00:00 ETA\n'%s' saved\n", name, name, len(res.body), name)
		}
	}
	return 0
}

// lookupAll resolves name (a query of qtype) through the search list
// and reports every name tried with its answer, for nslookup, dig and
// host.
func (p *proc) lookupAll(name string, search bool, qtype uint16) (dataplane.DNSAnswer, []string, error) {
	names := []string{strings.TrimSuffix(name, ".")}
	if search {
		names = p.searchNames(name)
	}
	var tried []string
	for _, n := range names {
		ans, err := p.rt.cfg.Network.Lookup(p.box.pod, n, qtype)
		if err != nil {
			return dataplane.DNSAnswer{}, tried, err
		}
		if !ans.NXDomain {
			return ans, tried, nil
		}
		tried = append(tried, n)
	}
	return dataplane.DNSAnswer{Name: names[len(names)-1], NXDomain: true}, tried, nil
}

// queryType is a query type's name as nslookup, dig and host take it
// (A when empty); ok is false for one the lab does not answer.
func queryType(s string) (uint16, bool) {
	switch strings.ToUpper(s) {
	case "", "A":
		return dataplane.TypeA, true
	case "AAAA":
		return dataplane.TypeAAAA, true
	case "CNAME":
		return dataplane.TypeCNAME, true
	case "SRV":
		return dataplane.TypeSRV, true
	case "PTR":
		return dataplane.TypePTR, true
	}
	return 0, false
}

// cmdNslookup is busybox's nslookup (its output format, v1.36):
// [-type=A|AAAA|CNAME|SRV|PTR] HOST [SERVER]; an address as HOST asks
// for its PTR record.
func cmdNslookup(_ context.Context, p *proc, args []string) int {
	var names []string
	qname := ""
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(strings.ToLower(a), "-type="); ok {
			qname = v
		} else if v, ok := strings.CutPrefix(strings.ToLower(a), "-query="); ok {
			qname = v
		} else if !strings.HasPrefix(a, "-") {
			names = append(names, a)
		}
	}
	qtype, known := queryType(qname)
	if len(names) == 0 || !known {
		p.errorf("BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\nUsage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n")
		return 1
	}
	server := p.rt.cfg.Network.DNSServer()
	if len(names) > 1 {
		server = names[1]
	}
	fmt.Fprintf(p.stdout, "Server:\t\t%s\nAddress:\t%s:53\n\n", server, server)
	name, search := names[0], !strings.HasSuffix(names[0], ".")
	if rev := dataplane.ReverseName(name); rev != "" {
		name, search, qtype = rev, false, dataplane.TypePTR
	}
	ans, _, err := p.lookupAll(name, search, qtype)
	if err != nil {
		fmt.Fprintf(p.stdout, ";; connection timed out; no servers could be reached\n\n")
		return 1
	}
	if ans.NXDomain {
		fmt.Fprintf(p.stdout, "** server can't find %s: NXDOMAIN\n\n", strings.TrimSuffix(name, "."))
		return 1
	}
	if ans.CNAME != "" {
		fmt.Fprintf(p.stdout, "%s\tcanonical name = %s\n", ans.Name, ans.CNAME)
	}
	for _, a := range ans.Addrs {
		fmt.Fprintf(p.stdout, "Name:\t%s\nAddress: %s\n", ans.Name, a)
	}
	for _, r := range ans.SRV {
		fmt.Fprintf(p.stdout, "%s\tservice = %d %d %d %s\n", ans.Name, r.Priority, r.Weight, r.Port, r.Target)
	}
	for _, n := range ans.PTR {
		fmt.Fprintf(p.stdout, "%s\tname = %s\n", ans.Name, n)
	}
	fmt.Fprintln(p.stdout)
	return 0
}

// cmdDig is bind's dig: NAME [+short] [+search] [@server] [TYPE] [-x ADDR].
func cmdDig(_ context.Context, p *proc, args []string) int {
	short, search := false, false
	// +noall turns every part of dig's output off; +answer (and the
	// others) turn one back on. Only the answer section is kept apart
	// here: upstream's e2e DNS probes read `+noall +answer` and test for
	// an empty output.
	all, answer := true, true
	name, tname := "", "A"
	qtype := dataplane.TypeA
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "+short":
			short = true
		case a == "+search":
			search = true
		case a == "+noall":
			all, answer = false, false
		case a == "+all":
			all, answer = true, true
		case a == "+answer":
			answer = true
		case a == "+noanswer":
			answer = false
		case a == "-x" && i+1 < len(args):
			i++
			name, tname, qtype = dataplane.ReverseName(args[i]), "PTR", dataplane.TypePTR
			if name == "" {
				p.errorf("Invalid IP address %s\n", args[i])
				return 10
			}
		case strings.HasPrefix(a, "+"), strings.HasPrefix(a, "@"), a == "IN", strings.HasPrefix(a, "-"):
		default:
			if t, ok := queryType(a); ok && a == strings.ToUpper(a) {
				tname, qtype = a, t
				continue
			}
			name = a
		}
	}
	if name == "" {
		name = "."
	}
	ans, _, err := p.lookupAll(name, search, qtype)
	if err != nil {
		fmt.Fprintf(p.stdout, ";; communications error to %s#53: timed out\n", p.rt.cfg.Network.DNSServer())
		return 9
	}
	fq := strings.TrimSuffix(ans.Name, ".") + "."
	var rrs []string // type and data of each answer record
	if ans.CNAME != "" {
		rrs = append(rrs, "CNAME\t"+ans.CNAME+".")
	}
	for _, a := range ans.Addrs {
		rrs = append(rrs, "A\t"+a)
	}
	for _, r := range ans.SRV {
		rrs = append(rrs, fmt.Sprintf("SRV\t%d %d %d %s.", r.Priority, r.Weight, r.Port, r.Target))
	}
	for _, n := range ans.PTR {
		rrs = append(rrs, "PTR\t"+n+".")
	}
	if short {
		for _, rr := range rrs {
			_, data, _ := strings.Cut(rr, "\t")
			fmt.Fprintln(p.stdout, data)
		}
		return 0
	}
	if !all {
		if answer {
			for _, rr := range rrs {
				fmt.Fprintf(p.stdout, "%s\t\t30\tIN\t%s\n", fq, rr)
			}
		}
		return 0
	}
	status := "NOERROR"
	if ans.NXDomain {
		status = "NXDOMAIN"
	}
	fmt.Fprintf(p.stdout, "\n; <<>> DiG 9.20.11 <<>> %s\n;; global options: +cmd\n;; Got answer:\n;; ->>HEADER<<- opcode: QUERY, status: %s, id: 1\n", name, status)
	fmt.Fprintf(p.stdout, ";; flags: qr aa rd; QUERY: 1, ANSWER: %d, AUTHORITY: 0, ADDITIONAL: 0\n\n;; QUESTION SECTION:\n;%s\t\t\tIN\t%s\n\n", len(rrs), fq, tname)
	if len(rrs) > 0 {
		fmt.Fprintf(p.stdout, ";; ANSWER SECTION:\n")
		for _, rr := range rrs {
			fmt.Fprintf(p.stdout, "%s\t\t30\tIN\t%s\n", fq, rr)
		}
		fmt.Fprintln(p.stdout)
	}
	server := p.rt.cfg.Network.DNSServer()
	fmt.Fprintf(p.stdout, ";; Query time: 0 msec\n;; SERVER: %s#53(%s) (UDP)\n;; WHEN: %s\n;; MSG SIZE  rcvd: 100\n\n", server, server, p.rt.cfg.Clock.Now().UTC().Format("Mon Jan 02 15:04:05 UTC 2006"))
	return 0
}

// cmdHost is bind's host: [-t TYPE] NAME; an address asks for its PTR
// record.
func cmdHost(_ context.Context, p *proc, args []string) int {
	qtype := dataplane.TypeA
	var rest []string
	for i := 1; i < len(args); i++ {
		if args[i] == "-t" && i+1 < len(args) {
			t, ok := queryType(args[i+1])
			if !ok {
				p.errorf("host: invalid type: %s\n", args[i+1])
				return 1
			}
			qtype = t
			i++
			continue
		}
		if !strings.HasPrefix(args[i], "-") {
			rest = append(rest, args[i])
		}
	}
	if len(rest) == 0 {
		p.errorf("Usage: host [-aCdilrTvVw] [-c class] [-N ndots] [-t type] [-W time]\n            [-R number] [-m flag] [-p port] hostname [server]\n")
		return 1
	}
	name, search := rest[0], true
	if rev := dataplane.ReverseName(name); rev != "" {
		name, search, qtype = rev, false, dataplane.TypePTR
	}
	ans, _, err := p.lookupAll(name, search, qtype)
	if err != nil {
		fmt.Fprintf(p.stdout, ";; connection timed out; no servers could be reached\n")
		return 1
	}
	if ans.NXDomain {
		fmt.Fprintf(p.stdout, "Host %s not found: 3(NXDOMAIN)\n", name)
		return 1
	}
	if ans.CNAME != "" {
		fmt.Fprintf(p.stdout, "%s is an alias for %s.\n", ans.Name, ans.CNAME)
	}
	for _, a := range ans.Addrs {
		fmt.Fprintf(p.stdout, "%s has address %s\n", ans.Name, a)
	}
	for _, r := range ans.SRV {
		fmt.Fprintf(p.stdout, "%s has SRV record %d %d %d %s.\n", ans.Name, r.Priority, r.Weight, r.Port, r.Target)
	}
	for _, n := range ans.PTR {
		fmt.Fprintf(p.stdout, "%s domain name pointer %s.\n", ans.Name, n)
	}
	return 0
}

// cmdIP is iproute2's (and busybox's) ip addr and ip route, the Pod's
// view: lo and eth0 with the Pod's address, a default route via the
// node's Pod network gateway.
func cmdIP(_ context.Context, p *proc, args []string) int {
	obj := "help"
	rest := slices.DeleteFunc(slices.Clone(args[1:]), func(s string) bool { return strings.HasPrefix(s, "-") })
	if len(rest) > 0 {
		obj = rest[0]
	}
	pod := p.box.pod
	ip := pod.Status.PodIP
	gw, prefix := gateway(ip)
	switch {
	case strings.HasPrefix("addr", obj) || strings.HasPrefix("address", obj) || obj == "a":
		fmt.Fprintf(p.stdout, "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n    inet 127.0.0.1/8 scope host lo\n       valid_lft forever preferred_lft forever\n")
		fmt.Fprintf(p.stdout, "2: eth0@if%d: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue state UP\n    link/ether %s brd ff:ff:ff:ff:ff:ff\n    inet %s/%d brd %s scope global eth0\n       valid_lft forever preferred_lft forever\n",
			ifIndex(pod.Name), mac(ip), ip, prefix, broadcast(ip, prefix))
		return 0
	case strings.HasPrefix("route", obj) || obj == "r":
		fmt.Fprintf(p.stdout, "default via %s dev eth0 \n%s dev eth0 scope link  src %s \n", gw, network(ip, prefix), ip)
		return 0
	case obj == "link" || obj == "l":
		fmt.Fprintf(p.stdout, "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n2: eth0@if%d: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue state UP\n    link/ether %s brd ff:ff:ff:ff:ff:ff\n", ifIndex(pod.Name), mac(ip))
		return 0
	}
	p.errorf("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { address | route | link }\n")
	return 1
}

// gateway is the Pod network's gateway as a bridge CNI sets it up: the
// first address of the node's /24.
func gateway(ip string) (string, int) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return "", 24
	}
	b := a.As4()
	b[3] = 1
	return netip.AddrFrom4(b).String(), 24
}

func network(ip string, bits int) string {
	pfx, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	n, _ := pfx.Prefix(bits)
	return n.String()
}

func broadcast(ip string, bits int) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() || bits != 24 {
		return ip
	}
	b := a.As4()
	b[3] = 255
	return netip.AddrFrom4(b).String()
}

func mac(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return "02:42:00:00:00:00"
	}
	b := a.As4()
	return fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3])
}

func ifIndex(name string) int {
	n := 0
	for _, c := range name {
		n = (n*31 + int(c)) % 1000
	}
	return 5 + n
}

// cmdNc is netcat as agnhost's and busybox's images have it: nc [-v]
// [-t|-u] [-z] [-n] [-w SECONDS] HOST PORT. It sends its standard input
// and prints what comes back. The lab's connections carry requests, not
// byte streams, so over TCP the input goes as one request: an HTTP
// request if it parses as one, else the line as it is, which an HTTP
// server answers with a 400 (as every server of the lab's images is an
// HTTP server); over UDP it goes as one datagram and the reply, if any,
// is printed. -z only connects.
func cmdNc(ctx context.Context, p *proc, args []string) int {
	zero, verbose, udp := false, false, false
	timeout := connectTimeout
	var rest []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-w" && i+1 < len(args):
			d, ok := parseDuration(args[i+1])
			if !ok {
				p.errorf("nc: invalid number '%s'\n", args[i+1])
				return 1
			}
			timeout = d
			i++
		case strings.HasPrefix(a, "-w") && len(a) > 2:
			d, ok := parseDuration(a[2:])
			if !ok {
				p.errorf("nc: invalid number '%s'\n", a[2:])
				return 1
			}
			timeout = d
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'z':
					zero = true
				case 'v':
					verbose = true
				case 'u':
					udp = true
				case 't', 'n':
				default:
					p.errorf("nc: invalid option -- '%c'\nusage: nc [-v] [-t|-u] [-z] [-n] [-w SECONDS] HOST PORT\n", c)
					return 1
				}
			}
		default:
			rest = append(rest, a)
		}
	}
	if len(rest) != 2 {
		p.errorf("usage: nc [-v] [-t|-u] [-z] [-n] [-w SECONDS] HOST PORT\n")
		return 1
	}
	port, err := strconv.Atoi(rest[1])
	if err != nil || port < 1 || port > 65535 {
		p.errorf("nc: port number invalid: %s\n", rest[1])
		return 1
	}
	ip, _, err := p.resolve(rest[0])
	if err != nil {
		p.errorf("nc: getaddrinfo for host \"%s\" port %d: Name or service not known\n", rest[0], port)
		return 1
	}
	proto := "tcp"
	if udp {
		proto = "udp"
	}
	var input []byte
	if !zero && p.stdin != nil {
		input, _ = io.ReadAll(io.LimitReader(p.stdin, int64(p.rt.cfg.Limits.MaxBody)))
	}
	req := dataplane.PodRequest{From: p.box.pod, IP: ip, Port: int32(port)}
	switch {
	case udp:
		req.Protocol, req.Body = v1.ProtocolUDP, input
	case zero || len(input) == 0:
		// A bare connection: the server sees a client that sends nothing
		// and hangs up, which no server of the lab's images logs.
		req.Method, req.Raw = "", true
	default:
		if hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(input))); err == nil {
			body, _ := io.ReadAll(hr.Body)
			req.Method, req.URI, req.Header, req.Body = hr.Method, hr.URL.RequestURI(), hr.Header, body
			if hr.Host != "" {
				req.Header.Set("Host", hr.Host)
			}
		} else {
			line, _, _ := strings.Cut(string(input), "\n")
			req.Method, req.Raw = strings.TrimRight(line, "\r"), true
		}
	}
	if err := p.step(ctx); err != nil {
		return 1
	}
	resp, err := p.rt.cfg.Network.FromPod(ctx, req)
	var ce *dataplane.ConnError
	switch {
	case errors.As(err, &ce) && !ce.Refused:
		// Dropped: nothing comes back before the timeout.
		if serr := sleepCtx(ctx, p.rt.cfg.Clock, timeout); serr != nil {
			return 1
		}
		if udp {
			// UDP has no handshake: nc waits out -w and ends quietly.
			if verbose {
				p.errorf("Connection to %s %d port [udp/*] succeeded!\n", rest[0], port)
			}
			return 0
		}
		if verbose {
			p.errorf("nc: connect to %s port %d (tcp) timed out: Operation now in progress\n", rest[0], port)
		}
		return 1
	case err != nil:
		if verbose {
			p.errorf("nc: connect to %s port %d (%s) failed: Connection refused\n", rest[0], port, proto)
		}
		return 1
	}
	if verbose {
		p.errorf("Connection to %s %d port [%s/*] succeeded!\n", rest[0], port, proto)
	}
	if zero || (!udp && req.Raw && req.Method == "") {
		return 0
	}
	if udp {
		p.stdout.Write(resp.Body)
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", resp.Status, http.StatusText(resp.Status))
	h := resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del(dataplane.TraceHeader)
	if h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(resp.Body)
	io.WriteString(p.stdout, b.String())
	return 0
}
