package dataplane

import (
	"cmp"
	"net/http"

	v1 "k8s.io/api/core/v1"
)

// Delivery is one request the data plane delivered to a Pod, as the Pod
// saw it: Config.OnDeliver receives it so the lab can write the Pod's
// access log (what `kubectl logs` of an nginx Pod shows). ClientIP is the
// source address at the Pod: a node's IP after kube-proxy's masquerade
// (externalTrafficPolicy: Cluster), the client's own with Local.
type Delivery struct {
	Pod       *v1.Pod
	Container string // the container that serves the port
	Image     string
	Nginx     bool // the image answers like nginx
	Trace     string
	ClientIP  string
	// PeerIP is the connection's source when a PROXY protocol header
	// named another client (ClientIP): the load balancer's address, or a
	// node's after kube-proxy's masquerade. The lab's Pods read the header
	// as nginx does with "listen ... proxy_protocol" and real_ip_header
	// proxy_protocol, so the access log shows the client.
	PeerIP    string
	Method    string
	URI       string
	Proto     string
	Status    int
	Bytes     int
	Referer   string
	UserAgent string
}

// deliverContainer is the container that serves port, else the first.
func deliverContainer(pod *v1.Pod, port int32) string {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.ContainerPort == port {
				return c.Name
			}
		}
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

func (d *Dataplane) delivered(pod *v1.Pod, port int32, tr *Trace, method, uri string, hr *http.Request, a answer) {
	if d.cfg.OnDeliver == nil {
		return
	}
	image := podImage(pod, port)
	_, nginx := nginxVersion(image)
	dv := Delivery{
		Pod: pod, Container: deliverContainer(pod, port), Image: image, Nginx: nginx, Trace: tr.ID,
		ClientIP: cmp.Or(tr.ProxyProtocolClientIP, tr.SourceIPSeenByPod), Method: method, URI: uri, Proto: "HTTP/1.1", Status: a.status, Bytes: len(a.body),
	}
	if tr.ProxyProtocolClientIP != "" {
		dv.PeerIP = tr.SourceIPSeenByPod
	}
	if method == http.MethodHead {
		dv.Bytes = 0
	}
	if hr != nil {
		dv.Proto, dv.Referer, dv.UserAgent = hr.Proto, hr.Referer(), hr.UserAgent()
	}
	d.cfg.OnDeliver(dv)
}
