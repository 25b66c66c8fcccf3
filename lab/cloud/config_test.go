package cloud

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"ip mode", func(c *Config) { c.IngressMode = IngressIP }, ""},
		{"other region derives zones", func(c *Config) { c.Region = "us-west-2" }, ""},
		{"malformed VPC", func(c *Config) { c.VPCCIDR = "10.0.0.0/33" }, `VPCCIDR "10.0.0.0/33": not a CIDR block`},
		{"VPC host bits", func(c *Config) { c.VPCCIDR = "10.0.1.0/16" }, `did you mean "10.0.0.0/16"`},
		{"VPC IPv6", func(c *Config) { c.VPCCIDR = "fd00::/48" }, "only IPv4"},
		{"VPC too large", func(c *Config) { c.VPCCIDR = "10.0.0.0/7" }, "between /8 and /24"},
		{"VPC too small for zones", func(c *Config) {
			c.VPCCIDR = "10.0.0.0/24"
			c.Zones = []string{"z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9", "z10", "z11", "z12", "z13", "z14", "z15", "z16", "z17"}
		}, "too small for 17 zones"},
		{"empty zone name", func(c *Config) { c.Zones = []string{"ap-northeast-1a", ""} }, "zones[1]: empty zone name"},
		{"duplicate zone", func(c *Config) { c.Zones = []string{"ap-northeast-1a", "ap-northeast-1a"} }, "listed twice"},
		{"bad zone chars", func(c *Config) { c.Zones = []string{"Zone A"} }, `zones[0] "Zone A"`},
		{"bad region", func(c *Config) { c.Region = "AP_NE" }, `region "AP_NE"`},
		{"bad domain", func(c *Config) { c.Domain = "lab..internal" }, `domain "lab..internal"`},
		{"unknown ingress mode", func(c *Config) { c.IngressMode = "dns" }, `ingress mode "dns": want "hostname" or "ip"`},
		{"malformed LB CIDR", func(c *Config) { c.LBCIDR = "nope" }, `LBCIDR "nope"`},
		{"LB CIDR too small", func(c *Config) { c.LBCIDR = "198.51.100.0/31" }, "/30 or shorter"},
		{"LB CIDR overlaps VPC", func(c *Config) { c.LBCIDR = "10.0.200.0/24" }, "overlaps VPCCIDR"},
		{"bad default instance type", func(c *Config) { c.DefaultInstanceType = "large" }, "default instance type"},
		{"negative call log", func(c *Config) { c.CallLogSize = -1 }, "call log size -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			tt.mod(&cfg)
			cfg.setDefaults()
			err := cfg.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if _, err := New(cfg); err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validate = %v, want error containing %q", err, tt.wantErr)
			}
			if _, err := New(cfg); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := newTestCloud(t, nil)
	cfg := c.Config()
	if cfg.Region != "ap-northeast-1" || strings.Join(cfg.Zones, ",") != "ap-northeast-1a,ap-northeast-1c,ap-northeast-1d" ||
		cfg.VPCCIDR != "10.0.0.0/16" || cfg.Domain != "ccmlab.internal" || cfg.IngressMode != IngressHostname ||
		cfg.LBCIDR != "198.51.100.0/24" || cfg.DefaultInstanceType != "m5.large" || cfg.CallLogSize != 5000 || cfg.Clock == nil {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
	want := map[string]string{"ap-northeast-1a": "10.0.0.0/20", "ap-northeast-1c": "10.0.16.0/20", "ap-northeast-1d": "10.0.32.0/20"}
	for z, p := range want {
		if got := c.net.subnets[z].Prefix().String(); got != p {
			t.Errorf("subnet of %s = %s, want %s", z, got, p)
		}
	}
}

func TestConfigZonesNotAliased(t *testing.T) {
	zones := []string{"z-a", "z-b"}
	c := newTestCloud(t, func(cfg *Config) { cfg.Zones = zones })
	zones[0] = "changed"
	if got := c.Config().Zones[0]; got != "z-a" {
		t.Fatalf("zone changed through caller's slice: %s", got)
	}
}
