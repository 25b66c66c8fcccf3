package sim

import (
	"fmt"
	"time"

	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// AppLogBytes is the log buffer of each app Pod's container.
const AppLogBytes = 64 << 10

// accessLog writes one delivered request into the Pod's log: nginx's
// combined format for nginx images (what `kubectl logs` of the chapter's
// nginx Pods shows), a short line naming the source otherwise. The first
// field is the client address as the Pod saw it.
func accessLog(store *podlog.Store, now func() time.Time) func(dataplane.Delivery) {
	return func(d dataplane.Delivery) {
		if d.Pod == nil || d.Container == "" {
			return
		}
		t := now()
		key := kubelet.LogKey(d.Pod, d.Container)
		var line string
		if d.Nginx {
			line = CombinedLogLine(d, t)
		} else {
			line = fmt.Sprintf("%s %s %s %s %d %d", t.UTC().Format(time.RFC3339), d.ClientIP, d.Method, d.URI, d.Status, d.Bytes)
		}
		store.Append(key, t, line)
	}
}

// CombinedLogLine is d in nginx's "combined" log format:
// $remote_addr - $remote_user [$time_local] "$request" $status
// $body_bytes_sent "$http_referer" "$http_user_agent".
func CombinedLogLine(d dataplane.Delivery, t time.Time) string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return fmt.Sprintf("%s - - [%s] \"%s %s %s\" %d %d \"%s\" \"%s\"",
		d.ClientIP, t.Format("02/Jan/2006:15:04:05 -0700"), d.Method, d.URI, d.Proto, d.Status, d.Bytes, dash(d.Referer), dash(d.UserAgent))
}
