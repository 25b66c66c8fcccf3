package kubelet

import (
	"fmt"
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestIPPool(t *testing.T) {
	always := func() bool { return true }
	prefix := netip.MustParsePrefix("10.244.3.0/29") // .2 to .6 usable

	t.Run("allocates unique addresses, skipping .0, .1 and broadcast", func(t *testing.T) {
		p := newIPPool()
		seen := map[netip.Addr]bool{}
		for i := range 5 {
			a, err := p.allocate(prefix, types.UID(fmt.Sprint(i)), always)
			if err != nil {
				t.Fatal(err)
			}
			if seen[a] || !prefix.Contains(a) || a.As4()[3] < 2 || a.As4()[3] > 6 {
				t.Fatalf("allocated %s (seen %v)", a, seen)
			}
			seen[a] = true
		}
		if _, err := p.allocate(prefix, "full", always); err == nil {
			t.Fatal("allocated from a full pool")
		}
		again, _ := p.allocate(prefix, "0", always)
		if again != netip.MustParseAddr("10.244.3.2") {
			t.Errorf("same UID got %s, want its address 10.244.3.2", again)
		}
	})

	t.Run("release frees, cursor avoids immediate reuse", func(t *testing.T) {
		p := newIPPool()
		a, _ := p.allocate(prefix, "a", always)
		p.release("a")
		p.release("a") // twice is harmless
		b, _ := p.allocate(prefix, "b", always)
		if a == b {
			t.Errorf("released %s was handed out again at once", a)
		}
		if p.len() != 1 {
			t.Errorf("len %d, want 1", p.len())
		}
	})

	t.Run("a pod gone before allocation gets nothing", func(t *testing.T) {
		p := newIPPool()
		if _, err := p.allocate(prefix, "gone", func() bool { return false }); err != errPodGone {
			t.Fatalf("err %v, want errPodGone", err)
		}
		if p.len() != 0 {
			t.Error("an address leaked")
		}
	})

	t.Run("adopted addresses are not handed out", func(t *testing.T) {
		p := newIPPool()
		for i := 2; i <= 5; i++ {
			if !p.adopt(types.UID(fmt.Sprint("old", i)), netip.AddrFrom4([4]byte{10, 244, 3, byte(i)})) {
				t.Fatal("adopt refused a free address")
			}
		}
		if p.adopt("other", netip.MustParseAddr("10.244.3.2")) {
			t.Error("adopt gave one address to two pods")
		}
		a, err := p.allocate(prefix, "new", always)
		if err != nil || a != netip.MustParseAddr("10.244.3.6") {
			t.Errorf("allocate = %s, %v; want the one free address 10.244.3.6", a, err)
		}
	})

	t.Run("bad prefixes", func(t *testing.T) {
		for _, s := range []string{"10.0.0.0/31", "fd00::/64"} {
			if _, err := newIPPool().allocate(netip.MustParsePrefix(s), "x", always); err == nil {
				t.Errorf("%s: allocated", s)
			}
		}
	})
}

func TestVPCPodRange(t *testing.T) {
	tests := []struct {
		vpc   string
		zones int
		want  string // "" = error
	}{
		{"10.0.0.0/16", 3, "10.0.128.0/17"},
		{"10.3.0.0/16", 3, "10.3.128.0/17"},
		{"172.16.0.0/12", 8, "172.24.0.0/13"},
		{"10.0.0.0/16", 9, ""},  // 16 subnets, 9 used: they reach the upper half
		{"10.0.0.0/16", 20, ""}, // 32 subnets, 20 used
		{"10.0.0.0/25", 3, ""},
		{"nonsense", 3, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d zones", tt.vpc, tt.zones), func(t *testing.T) {
			got, err := vpcPodRange(tt.vpc, tt.zones)
			if tt.want == "" {
				if err == nil {
					t.Errorf("got %s, want an error", got)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestImageID(t *testing.T) {
	tests := []struct{ image, wantRepo string }{
		{"nginx", "docker.io/library/nginx"},
		{"nginx:1.27", "docker.io/library/nginx"},
		{"bitnami/redis:7", "docker.io/bitnami/redis"},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause"},
		{"localhost:5000/app@sha256:abc", "localhost:5000/app"},
	}
	for _, tt := range tests {
		got := imageID(tt.image)
		if want := tt.wantRepo + "@sha256:"; len(got) != len(want)+64 || got[:len(want)] != want {
			t.Errorf("imageID(%q) = %q, want %s<64 hex>", tt.image, got, want)
		}
	}
}
