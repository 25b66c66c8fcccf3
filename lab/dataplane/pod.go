package dataplane

import (
	"fmt"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Pods in the lab run no process; the data plane answers for them. An
// nginx image answers like nginx, because that is what the chapter's
// examples deploy and students compare the output with theirs; any other
// image answers with a plain text that makes the network visible: which
// Pod on which node answered, and the source IP it saw (the client's, or a
// node's after SNAT).

// answer is what a Pod sends back.
type answer struct {
	status int
	header http.Header
	body   []byte
}

const defaultNginxVersion = "1.29.0"

// podAnswer is pod's answer to method path, arriving on port with the
// source IP in tr.
func podAnswer(pod *v1.Pod, port int32, method, path string, tr *Trace) answer {
	image := podImage(pod, port)
	if version, ok := nginxVersion(image); ok {
		return nginxAnswer(version, method, path)
	}
	body := fmt.Sprintf("Hello from ccmlab!\npod: %s\nnamespace: %s\nnode: %s\npod IP: %s\nsource IP seen by the Pod: %s\nrequest: %s %s\n",
		pod.Name, pod.Namespace, tr.PodNode, tr.PodIP, tr.SourceIPSeenByPod, method, path)
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	return answer{status: http.StatusOK, header: h, body: []byte(body)}
}

// podImage is the image of the container that exposes port, else of the
// first container.
func podImage(pod *v1.Pod, port int32) string {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.ContainerPort == port {
				return c.Image
			}
		}
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Image
	}
	return ""
}

// nginxVersion reports whether image is an nginx image and the version its
// Server header shows: a numeric tag up to its first '-' ("1.27-alpine" ->
// "1.27"), otherwise the current default.
func nginxVersion(image string) (string, bool) {
	ref, _, _ := strings.Cut(image, "@") // drop a digest
	repo, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	base := repo[strings.LastIndex(repo, "/")+1:]
	if !strings.HasPrefix(image, "nginx") && !strings.HasPrefix(base, "nginx") {
		return "", false
	}
	if tag != "" && tag[0] >= '0' && tag[0] <= '9' {
		v, _, _ := strings.Cut(tag, "-")
		return v, true
	}
	return defaultNginxVersion, true
}

// NginxWelcome is nginx's default index.html (the lab's nginx serves it
// from its container's files).
const NginxWelcome = nginxWelcome

const nginxWelcome = `<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href="http://nginx.org/">nginx.org</a>.<br/>
Commercial support is available at
<a href="http://nginx.com/">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
`

// nginxAnswer is what nginx's default configuration serves: the welcome
// page at / and /index.html, 404 elsewhere, 405 for methods a static site
// does not allow.
func nginxAnswer(version, method, path string) answer {
	h := http.Header{}
	h.Set("Server", "nginx/"+version)
	status, body := http.StatusOK, nginxWelcome
	switch {
	case method != http.MethodGet && method != http.MethodHead:
		status, body = http.StatusMethodNotAllowed, nginxError("405 Not Allowed", version)
	case path == "/" || path == "/index.html":
		h.Set("Accept-Ranges", "bytes")
	default:
		status, body = http.StatusNotFound, nginxError("404 Not Found", version)
	}
	h.Set("Content-Type", "text/html")
	return answer{status: status, header: h, body: []byte(body)}
}

// NginxVersion reports whether image is an nginx image and the version
// its Server header shows.
func NginxVersion(image string) (string, bool) { return nginxVersion(image) }

// NginxErrorPage is nginx's built-in error page.
func NginxErrorPage(title, version string) string { return nginxError(title, version) }

func nginxError(title, version string) string {
	return fmt.Sprintf("<html>\n<head><title>%s</title></head>\n<body>\n<center><h1>%s</h1></center>\n<hr><center>nginx/%s</center>\n</body>\n</html>\n", title, title, version)
}
