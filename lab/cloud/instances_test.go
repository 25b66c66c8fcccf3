package cloud

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRunInstance(t *testing.T) {
	c := newTestCloud(t, nil)
	idRE := regexp.MustCompile(`^i-[0-9a-f]{17}$`)
	wantZones := []string{"ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d", "ap-northeast-1a"}
	subnets := map[string]netip.Prefix{
		"ap-northeast-1a": netip.MustParsePrefix("10.0.0.0/20"),
		"ap-northeast-1c": netip.MustParsePrefix("10.0.16.0/20"),
		"ap-northeast-1d": netip.MustParsePrefix("10.0.32.0/20"),
	}
	seen := map[string]bool{}
	for i, z := range wantZones {
		inst := mustRun(t, c, RunInstanceInput{Tags: map[string]string{"role": "worker"}})
		if !idRE.MatchString(inst.ID) || seen[inst.ID] {
			t.Errorf("bad or duplicate ID %q", inst.ID)
		}
		seen[inst.ID] = true
		if inst.Zone != z {
			t.Errorf("instance %d zone = %s, want %s (round-robin)", i, inst.Zone, z)
		}
		if !subnets[z].Contains(netip.MustParseAddr(inst.PrivateIP)) {
			t.Errorf("IP %s not in %s", inst.PrivateIP, subnets[z])
		}
		if inst.State != InstanceRunning || inst.InstanceType != "m5.large" || inst.Name != inst.PrivateDNSName || inst.Tags["role"] != "worker" {
			t.Errorf("unexpected instance %+v", inst)
		}
	}
	first, _ := c.DescribeInstances(ctxAs("node-controller"), DescribeInstancesInput{})
	if first[0].PrivateIP != "10.0.0.4" || first[0].PrivateDNSName != "ip-10-0-0-4.ap-northeast-1.compute.internal" {
		t.Errorf("first instance = %s %s, want 10.0.0.4 / ip-10-0-0-4.ap-northeast-1.compute.internal", first[0].PrivateIP, first[0].PrivateDNSName)
	}

	pinned := mustRun(t, c, RunInstanceInput{Zone: "ap-northeast-1d", InstanceType: "c5.xlarge"})
	if pinned.Zone != "ap-northeast-1d" || pinned.InstanceType != "c5.xlarge" {
		t.Errorf("pinned = %+v", pinned)
	}
	if call := lastCall(t, c); call.Action != ActionRunInstances || call.Caller != "user" || call.Request != "zone=ap-northeast-1d type=c5.xlarge" {
		t.Errorf("logged call = %+v", call)
	}

	// Returned values are copies.
	pinned.Tags = map[string]string{"x": "y"}
	got, _ := c.DescribeInstances(ctxAs("user"), DescribeInstancesInput{IDs: []string{pinned.ID}})
	if got[0].Tags != nil {
		t.Errorf("caller mutation leaked into the cloud: %+v", got[0].Tags)
	}
}

func TestInstanceLifecycle(t *testing.T) {
	fc := newFakeClock()
	c := newTestCloud(t, func(cfg *Config) { cfg.Clock = fc })
	ctx := ctxAs("user")
	inst := mustRun(t, c, RunInstanceInput{})
	other := mustRun(t, c, RunInstanceInput{})

	steps := []struct {
		name string
		do   func() (Instance, error)
		want InstanceState
	}{
		{"stop", func() (Instance, error) { return c.StopInstance(ctx, inst.ID) }, InstanceStopped},
		{"stop again is a no-op", func() (Instance, error) { return c.StopInstance(ctx, inst.ID) }, InstanceStopped},
		{"start", func() (Instance, error) { return c.StartInstance(ctx, inst.ID) }, InstanceRunning},
		{"start again is a no-op", func() (Instance, error) { return c.StartInstance(ctx, inst.ID) }, InstanceRunning},
		{"terminate", func() (Instance, error) { return c.TerminateInstance(ctx, inst.ID) }, InstanceTerminated},
		{"terminate again is a no-op", func() (Instance, error) { return c.TerminateInstance(ctx, inst.ID) }, InstanceTerminated},
	}
	for _, s := range steps {
		fc.Step(time.Minute)
		got, err := s.do()
		if err != nil || got.State != s.want {
			t.Fatalf("%s: state %s err %v, want %s", s.name, got.State, err, s.want)
		}
	}

	// Terminated instances stay listed, findable by ID and by DNS name.
	all, err := c.DescribeInstances(ctx, DescribeInstancesInput{})
	if err != nil || len(all) != 2 || all[0].ID != inst.ID || all[0].State != InstanceTerminated {
		t.Fatalf("describe all = %+v, %v", all, err)
	}
	byName, err := c.DescribeInstances(ctx, DescribeInstancesInput{PrivateDNSNames: []string{other.PrivateDNSName, "ip-1-2-3-4.nowhere"}})
	if err != nil || len(byName) != 1 || byName[0].ID != other.ID {
		t.Fatalf("describe by DNS name = %+v, %v", byName, err)
	}
	both, err := c.DescribeInstances(ctx, DescribeInstancesInput{IDs: []string{inst.ID}, PrivateDNSNames: []string{other.PrivateDNSName}})
	if err != nil || len(both) != 0 {
		t.Fatalf("IDs and names must both match: %+v, %v", both, err)
	}

	// After an hour they are purged (on the next launch), freeing the IP.
	fc.Step(terminatedRetention)
	mustRun(t, c, RunInstanceInput{})
	if _, err := c.DescribeInstances(ctx, DescribeInstancesInput{IDs: []string{inst.ID}}); !IsCode(err, ErrInstanceNotFound) {
		t.Fatalf("terminated instance not purged after retention: %v", err)
	}
}

func TestSubnetExhaustion(t *testing.T) {
	// A /24 VPC gives /28 subnets: 16 - 5 reserved = 11 instances per zone.
	c := newTestCloud(t, func(cfg *Config) { cfg.VPCCIDR = "10.9.0.0/24"; cfg.Zones = []string{"z-a"} })
	for range 11 {
		mustRun(t, c, RunInstanceInput{})
	}
	_, err := c.RunInstance(ctxAs("user"), RunInstanceInput{})
	wantCode(t, err, ErrNoAddresses, ActionRunInstances)
}

func TestCaller(t *testing.T) {
	c := newTestCloud(t, nil)
	if got := CallerFrom(ctxAs("kubelet")); got != "kubelet" {
		t.Fatalf("CallerFrom = %q", got)
	}
	if got := CallerFrom(t.Context()); got != "" {
		t.Fatalf("CallerFrom(no caller) = %q", got)
	}
	if _, err := c.DescribeInstances(t.Context(), DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}
	if got := lastCall(t, c).Caller; got != "unknown" {
		t.Fatalf("logged caller = %q, want unknown", got)
	}
}

// TestTerminationProtection: an instance launched with termination
// protection is refused by TerminateInstances with EC2's error and stays
// running; one without it terminates.
func TestTerminationProtection(t *testing.T) {
	c := newTestCloud(t, nil)
	protected := mustRun(t, c, RunInstanceInput{DisableAPITermination: true})
	plain := mustRun(t, c, RunInstanceInput{})
	if !protected.DisableAPITermination || plain.DisableAPITermination {
		t.Fatalf("launched: protected %v, plain %v", protected.DisableAPITermination, plain.DisableAPITermination)
	}
	_, err := c.TerminateInstance(t.Context(), protected.ID)
	if !IsCode(err, ErrOperationNotPermitted) || !strings.Contains(err.Error(), "'"+protected.ID+"' may not be terminated") {
		t.Fatalf("terminating the protected instance: %v", err)
	}
	if got := findInstance(t, c, protected.ID); got.State != InstanceRunning {
		t.Errorf("protected instance is %s after the refusal", got.State)
	}
	if _, err := c.TerminateInstance(t.Context(), plain.ID); err != nil {
		t.Fatalf("terminating the plain instance: %v", err)
	}
	if got := findInstance(t, c, plain.ID); got.State != InstanceTerminated && got.State != InstanceShuttingDown {
		t.Errorf("plain instance is %s", got.State)
	}
}

func findInstance(t *testing.T, c *Cloud, id string) Instance {
	t.Helper()
	for _, in := range c.Snapshot().Instances {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("no instance %s", id)
	return Instance{}
}
