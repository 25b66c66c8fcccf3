package flow

// lbOwners maps load balancer names to the Service (namespace/name) that
// owns each, and back. The reverse index keeps "which load balancers are
// this Service's" from scanning every name: the Observer asks it on every
// recompute, and at 1,000 Services a node's update recomputes each one.
type lbOwners struct {
	byName  map[string]string              // LB name -> service key
	byOwner map[string]map[string]struct{} // service key -> LB names
}

func newLBOwners() lbOwners {
	return lbOwners{byName: map[string]string{}, byOwner: map[string]map[string]struct{}{}}
}

// get is name's owner, "" if none.
func (o lbOwners) get(name string) string { return o.byName[name] }

// has says whether name is a known load balancer's, owned or not yet.
func (o lbOwners) has(name string) bool {
	_, ok := o.byName[name]
	return ok
}

func (o lbOwners) set(name, key string) {
	if old, ok := o.byName[name]; ok {
		if old == key {
			return
		}
		o.unlink(name, old)
	}
	o.byName[name] = key
	names := o.byOwner[key]
	if names == nil {
		names = map[string]struct{}{}
		o.byOwner[key] = names
	}
	names[name] = struct{}{}
}

func (o lbOwners) del(name string) {
	if old, ok := o.byName[name]; ok {
		o.unlink(name, old)
		delete(o.byName, name)
	}
}

func (o lbOwners) unlink(name, key string) {
	if names := o.byOwner[key]; names != nil {
		delete(names, name)
		if len(names) == 0 {
			delete(o.byOwner, key)
		}
	}
}

// of is the names key owns, in no order; a copy, so the caller may
// delete while it ranges.
func (o lbOwners) of(key string) []string {
	names := o.byOwner[key]
	if len(names) == 0 {
		return nil
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	return out
}
