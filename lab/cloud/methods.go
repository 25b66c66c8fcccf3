package cloud

import "sync"

// MethodTracker records which cloudprovider.Interface method each caller
// is running, for calls that arrive without a context of their own.
//
// The lab's own provider tags each call's context (WithMethod). The
// upstream AWS provider talks to the lab over HTTP, and the context of
// its calls does not cross the wire. Each controller signs with its own
// access key (lab/awsapi names the caller after it), and a thin decorator around the
// provider enters the method while it runs, so the AWS API can say which
// method a call served. That is how the call log can show
// "Routes.CreateRoute → CreateRoute" for cloud-provider-aws too.
type MethodTracker struct {
	mu     sync.Mutex
	active map[string]map[string]int // caller -> method -> calls running
}

// Methods is the cloud's tracker, shared by the upstream provider's
// decorator (Enter) and the AWS API (Method).
func (c *Cloud) Methods() *MethodTracker { return &c.methods }

// Enter records that caller runs method until the returned func is called.
func (t *MethodTracker) Enter(caller, method string) (leave func()) {
	t.mu.Lock()
	if t.active == nil {
		t.active = map[string]map[string]int{}
	}
	m := t.active[caller]
	if m == nil {
		m = map[string]int{}
		t.active[caller] = m
	}
	m[method]++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if m[method]--; m[method] == 0 {
				delete(m, method)
			}
		})
	}
}

// Method is the method caller is running, or "" when it runs none or
// several different ones at once: then the lab cannot tell which of them
// a call served, and says nothing rather than guess.
func (t *MethodTracker) Method(caller string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.active[caller]) != 1 {
		return ""
	}
	for m := range t.active[caller] {
		return m
	}
	return ""
}
