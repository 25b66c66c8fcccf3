package ippool

import (
	"net/netip"
	"testing"
)

func mustNew(t *testing.T, prefix string, low, high uint32) *Pool {
	t.Helper()
	p, err := New(netip.MustParsePrefix(prefix), low, high)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNew(t *testing.T) {
	cases := []struct {
		prefix    string
		low, high uint32
		ok        bool
	}{
		{"10.0.0.0/24", 1, 1, true},
		{"10.0.0.0/30", 2, 1, true},
		{"10.0.0.0/31", 2, 1, false},
		{"10.0.0.0/32", 0, 0, true},
		{"0.0.0.0/0", 1, 1, true},
		{"fd00::/64", 1, 1, false},
	}
	for _, c := range cases {
		t.Run(c.prefix, func(t *testing.T) {
			_, err := New(netip.MustParsePrefix(c.prefix), c.low, c.high)
			if (err == nil) != c.ok {
				t.Errorf("New(%s, %d, %d) error %v, want ok=%v", c.prefix, c.low, c.high, err, c.ok)
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	t.Run("skips reserved ends and fills up", func(t *testing.T) {
		p := mustNew(t, "10.0.0.0/29", 2, 1) // usable .2 to .6
		var got []string
		for {
			a, ok := p.Allocate()
			if !ok {
				break
			}
			got = append(got, a.String())
		}
		want := []string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
		if p.Used() != 5 {
			t.Errorf("Used = %d, want 5", p.Used())
		}
	})
	t.Run("a released address is not reused at once", func(t *testing.T) {
		p := mustNew(t, "10.0.0.0/24", 1, 1)
		a, _ := p.Allocate()
		p.Release(a)
		p.Release(a) // twice is harmless
		b, _ := p.Allocate()
		if a == b {
			t.Errorf("released %s came straight back", a)
		}
	})
	t.Run("the cursor wraps to a free address", func(t *testing.T) {
		p := mustNew(t, "10.0.0.0/30", 1, 1) // .1 and .2
		a, _ := p.Allocate()
		p.Allocate()
		p.Release(a)
		if got, ok := p.Allocate(); !ok || got != a {
			t.Errorf("Allocate = %s, %v; want %s", got, ok, a)
		}
	})
}

func TestReserve(t *testing.T) {
	p := mustNew(t, "10.0.1.0/24", 4, 1)
	cases := []struct {
		addr string
		ok   bool
	}{
		{"10.0.1.10", true},
		{"10.0.1.10", false}, // twice
		{"10.0.1.2", false},  // reserved low end
		{"10.0.1.255", false},
		{"10.0.2.10", false},
		{"fd00::1", false},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			if err := p.Reserve(netip.MustParseAddr(c.addr)); (err == nil) != c.ok {
				t.Errorf("Reserve(%s) = %v, want ok=%v", c.addr, err, c.ok)
			}
		})
	}
	// Reserving does not move the cursor, and the cursor skips what is reserved.
	for range 6 {
		a, _ := p.Allocate()
		if a.String() == "10.0.1.10" {
			t.Fatal("reserved address handed out")
		}
	}
}

func TestUint32(t *testing.T) {
	a := netip.MustParseAddr("10.1.2.3")
	if u := ToUint32(a); u != 0x0a010203 || FromUint32(u) != a {
		t.Errorf("ToUint32(%s) = %#x, back %s", a, u, FromUint32(u))
	}
}
