package podruntime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// The servers of the lab's images: nginx and agnhost's netexec and
// serve-hostname listen on their ports while their process runs; the
// data plane (Config.Serve of lab/dataplane) and port-forward hand them
// the requests that reach the Pod. A port nothing listens on refuses.

// listener serves one port of a Pod.
type listener struct {
	serve func(ctx context.Context, req dataplane.ServeRequest) dataplane.ServeResult
	// udp: the port is a UDP socket; a request's Body is one datagram
	// and the result's Body the reply (none when empty).
	udp bool
	// raw answers bytes that are not an HTTP request (Proto empty); nil:
	// as Go's net/http does, a 400 and the connection closed.
	raw func(req dataplane.ServeRequest) dataplane.ServeResult
}

// portKey is a port of a Pod and its transport: TCP and UDP ports of the
// same number are different sockets.
type portKey struct {
	port int32
	udp  bool
}

// listen registers l on port of pod until the returned func is called.
func (r *Runtime) listen(pod *v1.Pod, port int32, l *listener) (func(), error) {
	key := portKey{port, l.udp}
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.pods[pod.UID]
	if ps == nil {
		ps = &podState{}
		r.pods[pod.UID] = ps
	}
	if ps.listeners == nil {
		ps.listeners = map[portKey]*listener{}
	}
	if ps.listeners[key] != nil {
		return nil, fmt.Errorf("bind() to 0.0.0.0:%d failed (98: Address in use)", port)
	}
	ps.listeners[key] = l
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if ps.listeners[key] == l {
			delete(ps.listeners, key)
		}
		if ps.idle() && r.pods[pod.UID] == ps {
			delete(r.pods, pod.UID)
		}
	}, nil
}

func (r *Runtime) listenerFor(pod *v1.Pod, port int32) *listener {
	return r.listenerOn(pod, portKey{port: port})
}

func (r *Runtime) listenerOn(pod *v1.Pod, key portKey) *listener {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ps := r.pods[pod.UID]; ps != nil {
		return ps.listeners[key]
	}
	return nil
}

// badRequest is Go's net/http answer to a request line it cannot parse
// (server.go: "400 Bad Request", text/plain, the connection closed); the
// agnhost servers are Go's.
func badRequest() dataplane.ServeResult {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Connection", "close")
	return dataplane.ServeResult{Status: http.StatusBadRequest, Header: h, Body: []byte("400 Bad Request")}
}

// runsKnownImages reports whether every container of pod is of an image
// the catalogue knows: only then does the runtime answer for the Pod.
func runsKnownImages(pod *v1.Pod) bool {
	if len(pod.Spec.Containers) == 0 || pod.Spec.HostNetwork {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if _, ok := lookupImage(c.Image); !ok {
			return false
		}
	}
	return true
}

// Serve answers a request the data plane delivered to a Pod (its
// Config.Serve).
func (r *Runtime) Serve(req dataplane.ServeRequest) (dataplane.ServeResult, error) {
	if !runsKnownImages(req.Pod) {
		return dataplane.ServeResult{}, dataplane.ErrNotServed
	}
	l := r.listenerOn(req.Pod, portKey{port: req.Port, udp: req.Protocol == v1.ProtocolUDP})
	if l == nil {
		return dataplane.ServeResult{}, dataplane.ErrNotListening
	}
	if req.Proto == "" && !l.udp {
		if req.Method == "" {
			// A connection that sends nothing (nc -z): accepted, and
			// closed before any request, so no server answers or logs.
			return dataplane.ServeResult{}, nil
		}
		if l.raw != nil {
			return l.raw(req), nil
		}
		return badRequest(), nil
	}
	return l.serve(context.Background(), req), nil
}

// PortForward carries one port-forwarded connection: HTTP requests read
// from stream go to what listens on port in the Pod, from 127.0.0.1 (the
// kubelet connects inside the Pod's network namespace).
func (r *Runtime) PortForward(ctx context.Context, pod *v1.Pod, port int32, stream io.ReadWriteCloser) error {
	return r.serveConn(ctx, pod, port, "127.0.0.1", stream)
}

// connIdle bounds how long a connection to a Pod (ConnectPod) waits for
// its next request before the Pod's side closes it.
const connIdle = 90 * time.Second

// ConnectPod opens a TCP connection to port of pod from source, as the
// apiserver's pods and services proxy reach a Pod's IP (the kubelet's
// DialPod): only a port something in the Pod listens on accepts (for a
// Pod of images the lab does not know, a port its spec declares, where
// the data plane answers). The connection is served in process; it ends
// when the caller closes it or stays idle for connIdle.
func (r *Runtime) ConnectPod(pod *v1.Pod, port int32, source string) (net.Conn, error) {
	if runsKnownImages(pod) {
		if r.listenerFor(pod, port) == nil {
			return nil, fmt.Errorf("dial tcp %s: connect: connection refused", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))))
		}
	} else if !declaresPort(pod, port) {
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused (the lab answers for this Pod's images only on the ports its spec declares)", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))))
	}
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		_ = r.serveConn(context.Background(), pod, port, source, idleConn{server})
	}()
	return client, nil
}

func declaresPort(pod *v1.Pod, port int32) bool {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.ContainerPort == port && (p.Protocol == "" || p.Protocol == v1.ProtocolTCP) {
				return true
			}
		}
	}
	return false
}

// idleConn gives each read the idle deadline, so a client that neither
// sends nor closes does not hold the serving goroutine.
type idleConn struct{ net.Conn }

func (c idleConn) Read(b []byte) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(connIdle))
	return c.Conn.Read(b)
}

// serveConn answers the HTTP requests read from stream with what listens
// on port in pod, each from source.
func (r *Runtime) serveConn(ctx context.Context, pod *v1.Pod, port int32, source string, stream io.ReadWriteCloser) error {
	br := bufio.NewReader(stream)
	for ctx.Err() == nil {
		req, err := http.ReadRequest(br)
		if err != nil {
			return nil // the client closed the connection
		}
		body, _ := io.ReadAll(io.LimitReader(req.Body, int64(r.cfg.Limits.MaxBody)))
		_ = req.Body.Close()
		sreq := dataplane.ServeRequest{Pod: pod, Port: port, Method: req.Method, URI: req.URL.RequestURI(), Proto: req.Proto, Header: req.Header, Body: body, SourceIP: source}
		var res dataplane.ServeResult
		if !runsKnownImages(pod) {
			res = r.cfg.Network.DefaultAnswer(sreq)
		} else if l := r.listenerFor(pod, port); l != nil {
			res = l.serve(ctx, sreq)
		} else {
			// containerd's message for a port nothing listens on.
			return fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: dial tcp4 127.0.0.1:%d: connect: connection refused IPv6 dial tcp6 [::1]:%d: connect: connection refused ", port, string(pod.UID), port, port)
		}
		resp := &http.Response{
			StatusCode: res.Status, ProtoMajor: 1, ProtoMinor: 1, Header: res.Header.Clone(),
			ContentLength: int64(len(res.Body)), Body: io.NopCloser(strings.NewReader(string(res.Body))), Request: req,
		}
		if resp.Header == nil {
			resp.Header = http.Header{}
		}
		resp.Header.Del(dataplane.TraceHeader)
		if err := resp.Write(stream); err != nil {
			return nil
		}
		if req.Close {
			return nil
		}
	}
	return nil
}

// cmdNginx is nginx in the foreground: it listens on port 80 and serves
// the files under /usr/share/nginx/html as the image's default
// configuration does, logging each request in the combined format to
// its stdout (the image links access.log to /dev/stdout).
func cmdNginx(ctx context.Context, p *proc, args []string) int {
	version, _ := dataplane.NginxVersion(p.box.imageRef())
	for _, a := range args[1:] {
		switch a {
		case "-v", "-V":
			p.errorf("nginx version: nginx/%s\n", version)
			return 0
		case "-t", "-T":
			p.errorf("nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\nnginx: configuration file /etc/nginx/nginx.conf test is successful\n")
			return 0
		case "-s":
			p.errorf("nginx: [error] invalid PID number \"\" in \"/run/nginx.pid\"\n")
			return 1
		}
	}
	now := func() string { return p.rt.cfg.Clock.Now().UTC().Format("2006/01/02 15:04:05") }
	var logMu sync.Mutex
	logLine := func(req dataplane.ServeRequest, request string, status, n int) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(p.stdout, "%s - - [%s] \"%s\" %d %d \"%s\" \"%s\"\n", req.SourceIP,
			p.rt.cfg.Clock.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"), request, status, n,
			dash(req.Header.Get("Referer")), dash(req.Header.Get("User-Agent")))
	}
	stop, err := p.rt.listen(p.box.pod, 80, &listener{raw: func(req dataplane.ServeRequest) dataplane.ServeResult {
		// nginx answers a line that is no request with its 400 page and
		// logs the line as the request.
		h := http.Header{}
		h.Set("Server", "nginx/"+version)
		h.Set("Content-Type", "text/html")
		h.Set("Connection", "close")
		body := dataplane.NginxErrorPage("400 Bad Request", version)
		logLine(req, strings.TrimSpace(req.Method), http.StatusBadRequest, len(body))
		return dataplane.ServeResult{Status: http.StatusBadRequest, Header: h, Body: []byte(body)}
	}, serve: func(_ context.Context, req dataplane.ServeRequest) dataplane.ServeResult {
		res := nginxServe(p.box.fs, version, req.Method, req.URI)
		n := len(res.Body)
		if req.Method == http.MethodHead {
			n = 0
		}
		logLine(req, req.Method+" "+req.URI+" "+req.Proto, res.Status, n)
		return res
	}})
	if err != nil {
		p.errorf("%s [emerg] 1#1: %v\nnginx: [emerg] %v\n", now(), err, err)
		return 1
	}
	defer stop()
	for _, l := range []string{
		"[notice] 1#1: using the \"epoll\" event method",
		"[notice] 1#1: nginx/" + version,
		"[notice] 1#1: built by gcc 12.2.0 (Debian 12.2.0-14+deb12u1) ",
		"[notice] 1#1: OS: Linux 6.8.0-1021-aws",
		"[notice] 1#1: getrlimit(RLIMIT_NOFILE): 1048576:1048576",
		"[notice] 1#1: start worker processes",
		"[notice] 1#1: start worker process 29",
	} {
		p.errorf("%s %s\n", now(), l)
	}
	<-ctx.Done()
	p.errorf("%s [notice] 1#1: signal 3 (SIGQUIT) received, shutting down\n", now())
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (b *box) imageRef() string {
	for _, c := range b.pod.Spec.Containers {
		if c.Name == b.container {
			return c.Image
		}
	}
	for _, c := range b.pod.Spec.EphemeralContainers {
		if c.Name == b.container {
			return c.Image
		}
	}
	return "nginx"
}

// nginxServe is nginx's default server: files under
// /usr/share/nginx/html, index.html for a directory, 404 for the rest,
// 405 for methods a static site does not take.
func nginxServe(fs *memFS, version, method, uri string) dataplane.ServeResult {
	h := http.Header{}
	h.Set("Server", "nginx/"+version)
	h.Set("Content-Type", "text/html")
	page := func(status int, title string) dataplane.ServeResult {
		return dataplane.ServeResult{Status: status, Header: h, Body: []byte(dataplane.NginxErrorPage(title, version))}
	}
	if method != http.MethodGet && method != http.MethodHead {
		return page(http.StatusMethodNotAllowed, "405 Not Allowed")
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return page(http.StatusBadRequest, "400 Bad Request")
	}
	p := path.Clean("/" + u.Path)
	if strings.HasSuffix(u.Path, "/") {
		p = path.Join(p, "index.html")
	}
	body, err := fs.read("/usr/share/nginx/html" + p)
	if err != nil {
		return page(http.StatusNotFound, "404 Not Found")
	}
	if !strings.HasSuffix(p, ".html") {
		h.Set("Content-Type", "text/plain")
	}
	h.Set("Accept-Ranges", "bytes")
	return dataplane.ServeResult{Status: http.StatusOK, Header: h, Body: []byte(body)}
}

// cmdAgnhost is agnhost (test/images/agnhost in k8s.io/kubernetes
// v1.37.2, version 2.66): pause, netexec, serve-hostname, test-webserver,
// and dns-suffix, dns-server-list and etc-hosts.
func cmdAgnhost(ctx context.Context, p *proc, args []string) int {
	if len(args) < 2 {
		p.errorf("Error: unknown command\n")
		return 1
	}
	flags := map[string]string{}
	for i := 2; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		k, v, ok := strings.Cut(a, "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			v = args[i+1]
			i++
		}
		flags[k] = v
	}
	port := func(name string, def int32) (int32, bool) {
		v, ok := flags[name]
		if !ok {
			return def, true
		}
		n, err := strconv.Atoi(v)
		return int32(n), err == nil && n > 0 && n < 65536
	}
	switch args[1] {
	case "pause":
		p.errorf("Paused\n")
		<-ctx.Done()
		return 0
	case "serve-hostname":
		pt, ok := port("port", 9376)
		if !ok {
			p.errorf("Error: invalid argument for --port\n")
			return 1
		}
		stop, err := p.rt.listen(p.box.pod, pt, &listener{serve: func(_ context.Context, _ dataplane.ServeRequest) dataplane.ServeResult {
			return textResult(http.StatusOK, p.box.hostname)
		}})
		if err != nil {
			p.errorf("listen tcp :%d: bind: address already in use\n", pt)
			return 1
		}
		defer stop()
		p.errorf("%s Serving on port %d.\n", p.rt.cfg.Clock.Now().Format("2006/01/02 15:04:05"), pt)
		<-ctx.Done()
		return 0
	case "test-webserver":
		pt, ok := port("port", 80)
		if !ok {
			p.errorf("Error: invalid argument for --port\n")
			return 1
		}
		stop, err := p.rt.listen(p.box.pod, pt, &listener{serve: func(_ context.Context, req dataplane.ServeRequest) dataplane.ServeResult {
			return fileServer(p.box.fs, req)
		}})
		if err != nil {
			p.errorf("listen tcp :%d: bind: address already in use\n", pt)
			return 1
		}
		defer stop()
		<-ctx.Done()
		return 0
	case "dns-suffix", "dns-server-list":
		// dns/common.go: the fields after the first "search" or
		// "nameserver" line's keyword, joined by commas; a file
		// without one panics.
		key := map[string]string{"dns-suffix": "search", "dns-server-list": "nameserver"}[args[1]]
		conf, err := p.box.fs.read("/etc/resolv.conf")
		if err != nil {
			p.errorf("panic: open /etc/resolv.conf: no such file or directory\n")
			return 2
		}
		for _, line := range strings.Split(conf, "\n") {
			if strings.HasPrefix(line, key) {
				fmt.Fprintln(p.stdout, strings.Join(strings.Split(line, " ")[1:], ","))
				return 0
			}
		}
		p.errorf("panic: Could not find DNS search list!\n")
		return 2
	case "etc-hosts":
		hosts, _ := p.box.fs.read("/etc/hosts")
		fmt.Fprintln(p.stdout, hosts)
		return 0
	case "netexec":
		pt, ok := port("http-port", 8080)
		if !ok {
			p.errorf("Error: invalid argument for --http-port\n")
			return 1
		}
		exitCh := make(chan int, 1)
		stop, err := p.rt.listen(p.box.pod, pt, &listener{serve: func(ctx context.Context, req dataplane.ServeRequest) dataplane.ServeResult {
			return netexec(ctx, p, pt, req, exitCh)
		}})
		if err != nil {
			p.errorf("listen tcp :%d: bind: address already in use\n", pt)
			return 1
		}
		defer stop()
		p.errorf("Started HTTP server on port %d\n", pt)
		if u, ok := port("udp-port", 8081); ok && u > 0 {
			stopUDP, err := p.rt.listen(p.box.pod, u, &listener{udp: true, serve: func(_ context.Context, req dataplane.ServeRequest) dataplane.ServeResult {
				return netexecUDP(p, u, req)
			}})
			if err != nil {
				p.errorf("failed to create listener for UDP address :%d: bind: address already in use\n", u)
				return 1
			}
			defer stopUDP()
			p.errorf("Started UDP server on port  %d\n", u)
		}
		select {
		case <-ctx.Done():
			return 0
		case code := <-exitCh:
			return code
		}
	}
	p.errorf("Error: unknown command %q for \"app\"\nRun 'app --help' for usage.\n", args[1])
	return 1
}

// fileServer is agnhost test-webserver (test-webserver/test-webserver.go):
// Go's http.FileServer over the container's "/", with the headers it
// adds. A directory answers its listing as FileServer does.
func fileServer(fs *memFS, req dataplane.ServeRequest) dataplane.ServeResult {
	h := http.Header{}
	h.Set("Cache-Control", "private")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "DNT,X-Mx-ReqToken,Keep-Alive,User-Agent,X-Requested-With,Cache-Control,Content-Type")
	u, err := url.ParseRequestURI(req.URI)
	if err != nil {
		return textResult(http.StatusBadRequest, "400 Bad Request")
	}
	name := path.Clean("/" + u.Path)
	if body, err := fs.read(name); err == nil {
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = http.DetectContentType([]byte(body))
		}
		h.Set("Content-Type", ct)
		return dataplane.ServeResult{Status: http.StatusOK, Header: h, Body: []byte(body)}
	}
	if names, ok := fs.list(name); ok && fs.isDir(name) {
		var b strings.Builder
		b.WriteString("<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n")
		for _, n := range names {
			if fs.isDir(path.Join(name, n)) {
				n += "/"
			}
			fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", (&url.URL{Path: n}).String(), html.EscapeString(n))
		}
		b.WriteString("</pre>\n")
		h.Set("Content-Type", "text/html; charset=utf-8")
		return dataplane.ServeResult{Status: http.StatusOK, Header: h, Body: []byte(b.String())}
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	return dataplane.ServeResult{Status: http.StatusNotFound, Header: h, Body: []byte("404 page not found\n")}
}

// netexecUDP is netexec's UDP server (netexec.go startUDPServer): one
// command per datagram, the reply a datagram of its own; an unknown
// command gets no reply.
func netexecUDP(p *proc, port int32, req dataplane.ServeRequest) dataplane.ServeResult {
	raw := strings.TrimSpace(string(req.Body))
	cmd := strings.ToLower(raw)
	reply := func(s string) dataplane.ServeResult {
		return dataplane.ServeResult{Status: http.StatusOK, Body: []byte(s)}
	}
	switch {
	case cmd == "hostname":
		return reply(p.box.hostname)
	case strings.HasPrefix(cmd, "envvar "):
		name := strings.TrimSpace(strings.SplitN(raw, " ", 2)[1])
		return reply(p.env.Get(name).String())
	case strings.HasPrefix(cmd, "echo "):
		return reply(strings.SplitN(cmd, " ", 2)[1])
	case cmd == "clientip":
		return reply(net.JoinHostPort(req.SourceIP, "40000"))
	case cmd == "serverport":
		return reply(strconv.Itoa(int(port)))
	}
	return dataplane.ServeResult{Status: http.StatusOK}
}

func textResult(status int, body string) dataplane.ServeResult {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	return dataplane.ServeResult{Status: status, Header: h, Body: []byte(body)}
}

// netexec answers agnhost netexec's endpoints (netexec/netexec.go).
func netexec(ctx context.Context, p *proc, port int32, req dataplane.ServeRequest, exitCh chan<- int) dataplane.ServeResult {
	u, err := url.ParseRequestURI(req.URI)
	if err != nil {
		return textResult(http.StatusBadRequest, "bad request")
	}
	q := u.Query()
	p.errorf("GET %s\n", u.Path)
	switch u.Path {
	case "/":
		return textResult(http.StatusOK, "NOW: "+p.rt.cfg.Clock.Now().String())
	case "/hostname", "/hostName":
		return textResult(http.StatusOK, p.box.hostname)
	case "/clientip":
		return textResult(http.StatusOK, req.SourceIP+":"+strconv.Itoa(40000+int(len(req.Trace))))
	case "/serverport":
		return textResult(http.StatusOK, strconv.Itoa(int(port)))
	case "/echo":
		return textResult(http.StatusOK, q.Get("msg"))
	case "/header":
		return textResult(http.StatusOK, req.Header.Get(q.Get("key")))
	case "/healthz", "/readyz":
		return textResult(http.StatusOK, "ok")
	case "/envvar":
		return textResult(http.StatusOK, strings.Join(p.env.pairs(), "\n"))
	case "/exit":
		code, _ := strconv.Atoi(q.Get("code"))
		select {
		case exitCh <- code:
		default:
		}
		return textResult(http.StatusOK, "")
	case "/shell":
		cmd := q.Get("shellCommand")
		if cmd == "" {
			cmd = q.Get("cmd")
		}
		var out strings.Builder
		sub := p.with(nil, &limitWriter{w: &out, n: p.rt.cfg.Limits.MaxCmdSubst})
		sub.stderr = sub.stdout
		sub.meter = &meter{rate: p.rt.cfg.Limits.StepsPerSecond, clock: p.rt.cfg.Clock}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		code := cmdSh(sctx, sub, []string{"sh", "-c", cmd})
		cancel()
		res := map[string]string{"output": out.String()}
		if code != 0 {
			res["error"] = fmt.Sprintf("exit status %d", code)
		}
		b, _ := json.Marshal(res)
		return dataplane.ServeResult{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
	case "/dial":
		return netexecDial(ctx, p, q)
	}
	return textResult(http.StatusNotFound, "404 page not found\n")
}

// netexecDial is netexec's /dial: it asks host:port for request (an HTTP
// path) tries times and reports the answers, as upstream's e2e tests use
// it to check connectivity from inside a Pod.
func netexecDial(ctx context.Context, p *proc, q url.Values) dataplane.ServeResult {
	host, reqPath := q.Get("host"), q.Get("request")
	portN, err := strconv.Atoi(q.Get("port"))
	tries, _ := strconv.Atoi(q.Get("tries"))
	tries = min(max(tries, 1), 100)
	if err != nil || host == "" || (q.Get("protocol") != "" && q.Get("protocol") != "http") {
		return textResult(http.StatusBadRequest, "bad request: the lab's netexec dials http only")
	}
	out := map[string][]string{"responses": {}, "errors": {}}
	ip, _, rerr := p.resolve(host)
	for range tries {
		if rerr != nil {
			out["errors"] = append(out["errors"], rerr.Error())
			continue
		}
		res, err := p.fetch(ctx, ip, int32(portN), http.MethodGet, "/"+strings.TrimPrefix(reqPath, "/"), nil, nil, 5*time.Second)
		if err != nil {
			out["errors"] = append(out["errors"], err.Error())
			continue
		}
		out["responses"] = append(out["responses"], string(res.body))
	}
	b, _ := json.Marshal(out)
	return dataplane.ServeResult{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}
