package flow

import (
	"slices"
	"testing"
)

// TestLBOwners: the reverse index follows every change of owner, so a
// Service's load balancers are found without scanning every name.
func TestLBOwners(t *testing.T) {
	o := newLBOwners()
	names := func(key string) []string {
		n := o.of(key)
		slices.Sort(n)
		return n
	}
	o.set("lb-a", "default/web")
	o.set("lb-b", "default/web")
	o.set("lb-c", "default/api")
	if got := names("default/web"); !slices.Equal(got, []string{"lb-a", "lb-b"}) {
		t.Fatalf("web owns %v, want [lb-a lb-b]", got)
	}
	// An owner changes hands: the old owner no longer lists it.
	o.set("lb-b", "default/api")
	if got := names("default/web"); !slices.Equal(got, []string{"lb-a"}) {
		t.Errorf("after lb-b moved, web owns %v, want [lb-a]", got)
	}
	if got := names("default/api"); !slices.Equal(got, []string{"lb-b", "lb-c"}) {
		t.Errorf("after lb-b moved, api owns %v, want [lb-b lb-c]", got)
	}
	// Deleting while ranging over of's answer is safe: it is a copy.
	for _, n := range o.of("default/api") {
		o.del(n)
	}
	if o.has("lb-b") || o.has("lb-c") || o.get("lb-c") != "" || o.of("default/api") != nil {
		t.Errorf("api's load balancers still known: %v", o.byName)
	}
	if len(o.byOwner) != 1 {
		t.Errorf("owners left %v, want only web", o.byOwner)
	}
	o.del("lb-unknown") // no-op
	if o.get("lb-a") != "default/web" {
		t.Errorf("lb-a's owner %q, want default/web", o.get("lb-a"))
	}
}
