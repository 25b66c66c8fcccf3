package profile

import "testing"

func TestProviderID(t *testing.T) {
	m := Machine{Zone: "ap-northeast-1a", InstanceID: "i-0123456789abcdef0", NodeName: "ip-10-0-1-5.ap-northeast-1.compute.internal"}
	cases := []struct {
		profile string
		want    string
	}{
		{"aws", "aws:///ap-northeast-1a/i-0123456789abcdef0"},
		{"vpc-cni", "aws:///ap-northeast-1a/i-0123456789abcdef0"},
		{"ip", "aws:///ap-northeast-1a/i-0123456789abcdef0"},
		{"kubevirt", "kubevirt://ip-10-0-1-5.ap-northeast-1.compute.internal"},
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			p, err := Get(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			got := p.ProviderID(m)
			if got != c.want {
				t.Fatalf("ProviderID = %q, want %q", got, c.want)
			}
			back, err := p.ParseProviderID(got)
			if err != nil {
				t.Fatalf("ParseProviderID(%q): %v", got, err)
			}
			if back.InstanceID != m.InstanceID && back.NodeName != m.NodeName {
				t.Errorf("ParseProviderID(%q) = %+v, names neither the instance nor the node", got, back)
			}
		})
	}
}

func TestParseProviderID(t *testing.T) {
	aws, _ := Get("aws")
	kv, _ := Get("kubevirt")
	cases := []struct {
		name string
		p    Profile
		id   string
		want Machine
		ok   bool
	}{
		{"aws long", aws, "aws:///ap-northeast-1a/i-0abc", Machine{InstanceID: "i-0abc"}, true},
		{"aws short", aws, "aws://i-0abc", Machine{InstanceID: "i-0abc"}, true},
		{"aws not an instance", aws, "aws:///ap-northeast-1a/vm-1", Machine{}, false},
		{"aws wrong scheme", aws, "gce://p/z/i-0abc", Machine{}, false},
		{"aws empty", aws, "aws://", Machine{}, false},
		{"kubevirt", kv, "kubevirt://node-1", Machine{NodeName: "node-1"}, true},
		{"kubevirt given aws", kv, "aws:///z/i-0abc", Machine{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.p.ParseProviderID(c.id)
			if (err == nil) != c.ok || got != c.want {
				t.Errorf("ParseProviderID(%q) = %+v, %v; want %+v, ok=%v", c.id, got, err, c.want, c.ok)
			}
		})
	}
}
