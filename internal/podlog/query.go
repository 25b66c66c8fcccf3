package podlog

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// ParseQuery reads the kubelet's containerLogs query (tailLines,
// limitBytes, sinceSeconds, sinceTime, follow, timestamps) into Options;
// now is the moment sinceSeconds counts back from. A bad value is an
// error naming the parameter, for a 400 ("invalid tailLines \"x\"").
func ParseQuery(q url.Values, now time.Time) (Options, error) {
	o := Options{TailLines: -1, Follow: q.Get("follow") == "true", Timestamps: q.Get("timestamps") == "true"}
	bad := func(p string) error { return fmt.Errorf("invalid %s %q", p, q.Get(p)) }
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, bad("tailLines")
		}
		o.TailLines = n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return o, bad("limitBytes")
		}
		o.LimitBytes = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return o, bad("sinceSeconds")
		}
		o.Since = now.Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, bad("sinceTime")
		}
		o.Since = t
	}
	return o, nil
}
