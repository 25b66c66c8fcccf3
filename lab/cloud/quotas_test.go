package cloud

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// tinyQuotas make every quota reachable in a few calls.
var tinyQuotas = Quotas{
	ListenerSockets: 5, LoadBalancers: 2, ListenersPerLoadBalancer: 3, TargetsPerLoadBalancer: 2,
	ClassicLoadBalancers: 2, ClassicListenersPerELB: 3,
	NetworkLoadBalancers: 2, NetworkListenersPerLB: 2, TargetGroups: 2, TargetsPerTargetGroup: 2,
}

// quotaWorld is a cloud with tiny quotas and the helpers to fill them.
type quotaWorld struct {
	t *testing.T
	c *Cloud
}

func (w quotaWorld) ports(proto string, ports ...int32) []Listener {
	var out []Listener
	for _, p := range ports {
		out = append(out, Listener{Protocol: proto, Port: p, TargetPort: 30000 + p})
	}
	return out
}

func (w quotaWorld) lb(name string, ls []Listener) error {
	_, err := w.c.CreateLoadBalancer(ctxAs("service-controller"), CreateLoadBalancerInput{Name: name, Listeners: ls})
	return err
}

func (w quotaWorld) elbListeners(ports ...int32) []ELBListener {
	var out []ELBListener
	for _, p := range ports {
		out = append(out, ELBListener{Protocol: "TCP", Port: p, InstanceProtocol: "TCP", InstancePort: 30000 + p})
	}
	return out
}

func (w quotaWorld) elb(name string, ports ...int32) error {
	_, err := w.c.CreateELB(ctxAs("service-controller"), CreateELBInput{Name: name, Subnets: []string{w.c.AWSNetworkInfo().Subnets[0].ID}, Listeners: w.elbListeners(ports...)})
	return err
}

func (w quotaWorld) nlb(name string) (string, error) {
	lb, err := w.c.CreateNLB(ctxAs("service-controller"), CreateNLBInput{Name: name, Subnets: []string{w.c.AWSNetworkInfo().Subnets[0].ID}})
	return lb.ARN, err
}

func (w quotaWorld) tg(name string) (string, error) {
	tg, err := w.c.CreateTargetGroup(ctxAs("service-controller"), TargetGroup{Name: name, Protocol: "TCP", Port: 30080})
	return tg.ARN, err
}

func (w quotaWorld) listener(lbARN, tgARN, proto string, port int32) (string, error) {
	l, err := w.c.CreateListener(ctxAs("service-controller"), NLBListener{LBARN: lbARN, TargetGroupARN: tgARN, Protocol: proto, Port: port})
	return l.ARN, err
}

func (w quotaWorld) instances(n int) []string {
	var ids []string
	for range n {
		ids = append(ids, mustRun(w.t, w.c, RunInstanceInput{}).ID)
	}
	return ids
}

// must fails the test on a setup step's error.
func (w quotaWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("setup: %v", err)
	}
}

func (w quotaWorld) arn(arn string, err error) string {
	w.t.Helper()
	w.must(err)
	return arn
}

// state is everything a refused call must leave as it was.
func (w quotaWorld) state() string {
	w.c.mu.RLock()
	aws := w.c.savedAWSLocked()
	w.c.mu.RUnlock()
	b, err := json.Marshal(struct {
		Lab State
		AWS *savedAWS
	}{w.c.Snapshot(), aws})
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func TestQuotaErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action string
		code   string
		want   []string // in the message
		// setup fills the quota and returns the call past it.
		setup func(w quotaWorld) func() error
	}{
		{"lab: load balancers", ActionCreateLoadBalancer, ErrTooManyLoadBalancers,
			[]string{"You've reached the limit on the number of load balancers", "this lab allows 2 load balancers", "2 exist"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80)))
				w.must(w.lb("b", w.ports("TCP", 80)))
				return func() error { return w.lb("c", w.ports("TCP", 80)) }
			}},
		{"lab: listeners of a new load balancer", ActionCreateLoadBalancer, ErrTooManyListeners,
			[]string{"number of listeners per load balancer", "this lab allows 3 listeners per load balancer", "asks for 4"},
			func(w quotaWorld) func() error {
				return func() error { return w.lb("a", w.ports("TCP", 80, 81, 82, 83)) }
			}},
		{"lab: listeners set on a load balancer", ActionModifyListeners, ErrTooManyListeners,
			[]string{"this lab allows 3 listeners per load balancer"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80)))
				return func() error {
					_, err := w.c.SetListeners(ctxAs("service-controller"), "a", w.ports("UDP", 80, 81, 82, 83))
					return err
				}
			}},
		{"lab: sockets of a new load balancer", ActionCreateLoadBalancer, ErrTooManyListeners,
			[]string{"may have 5 listeners in all", "real port", "4 are in use and this call would add 2"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80, 81)))
				w.must(w.elb("classic", 80, 81))
				return func() error { return w.lb("b", w.ports("TCP", 80, 81)) }
			}},
		{"lab: sockets set on a load balancer", ActionModifyListeners, ErrTooManyListeners,
			[]string{"may have 5 listeners in all", "5 are in use and this call would add 1"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80, 81, 82)))
				w.must(w.lb("b", append(w.ports("TCP", 80, 81), w.ports("UDP", 53)...)))
				return func() error {
					_, err := w.c.SetListeners(ctxAs("service-controller"), "b", w.ports("TCP", 80, 81, 82))
					return err
				}
			}},
		{"lab: targets", ActionRegisterTargets, ErrTooManyTargets,
			[]string{"You've reached the limit on the number of targets", "this lab allows 2 targets per load balancer", "'a' has 1 and this call would add 2"},
			func(w quotaWorld) func() error {
				ids := w.instances(3)
				w.must(w.lb("a", w.ports("TCP", 80)))
				w.must(w.c.RegisterTargets(ctxAs("service-controller"), "a", []Target{{ID: ids[0], Port: 30080}}))
				return func() error {
					return w.c.RegisterTargets(ctxAs("service-controller"), "a", []Target{{ID: ids[1], Port: 30080}, {ID: ids[2], Port: 30080}})
				}
			}},
		{"classic: load balancers", ActionCreateLoadBalancer, ErrTooManyLoadBalancers,
			[]string{"The quota for the number of load balancers has been reached", "this lab allows 2 Classic Load Balancers (AWS's default quota per Region)", "2 exist"},
			func(w quotaWorld) func() error {
				w.must(w.elb("a", 80))
				w.must(w.elb("b", 80))
				return func() error { return w.elb("c", 80) }
			}},
		{"classic: listeners of a new load balancer", ActionCreateLoadBalancer, ErrInvalidConfiguration,
			[]string{"The requested configuration change is not valid", "this lab allows 3 listeners per Classic Load Balancer", "'a' would have 4"},
			func(w quotaWorld) func() error { return func() error { return w.elb("a", 80, 81, 82, 83) } }},
		{"classic: listeners added", ActionCreateLoadBalancerListeners, ErrInvalidConfiguration,
			[]string{"this lab allows 3 listeners per Classic Load Balancer", "'a' would have 4"},
			func(w quotaWorld) func() error {
				w.must(w.elb("a", 80, 81))
				return func() error {
					// 81 is there already: only 82 and 83 are new.
					return w.c.ELBCreateListeners(ctxAs("service-controller"), "a", w.elbListeners(81, 82, 83))
				}
			}},
		{"classic: sockets of a new load balancer", ActionCreateLoadBalancer, ErrTooManyLoadBalancers,
			[]string{"The quota for the number of load balancers has been reached", "may have 5 listeners in all", "4 are in use and this call would add 2"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80, 81)))
				w.must(w.elb("classic", 80, 81))
				return func() error { return w.elb("another", 80, 81) }
			}},
		{"classic: sockets of listeners added", ActionCreateLoadBalancerListeners, ErrInvalidConfiguration,
			[]string{"may have 5 listeners in all", "4 are in use and this call would add 2"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80, 81, 82)))
				w.must(w.elb("classic", 80))
				return func() error {
					return w.c.ELBCreateListeners(ctxAs("service-controller"), "classic", w.elbListeners(81, 82))
				}
			}},
		{"network: load balancers", ActionCreateLoadBalancer, ErrTooManyLoadBalancers,
			[]string{"You've reached the limit on the number of load balancers for your AWS account", "this lab allows 2 Network Load Balancers", "2 exist"},
			func(w quotaWorld) func() error {
				w.arn(w.nlb("a"))
				w.arn(w.nlb("b"))
				return func() error { _, err := w.nlb("c"); return err }
			}},
		{"network: listeners of a load balancer", ActionCreateListener, ErrTooManyListeners,
			[]string{"You've reached the limit on the number of listeners per load balancer", "this lab allows 2 listeners per Network Load Balancer", "it has 2"},
			func(w quotaWorld) func() error {
				lb, tg := w.arn(w.nlb("a")), w.arn(w.tg("t"))
				w.arn(w.listener(lb, tg, "TCP", 80))
				w.arn(w.listener(lb, tg, "UDP", 53))
				return func() error { _, err := w.listener(lb, tg, "TCP", 81); return err }
			}},
		{"network: sockets of a listener", ActionCreateListener, ErrTooManyListeners,
			[]string{"may have 5 listeners in all", "5 are in use and this call would add 1"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80, 81, 82)))
				w.must(w.elb("classic", 80, 81))
				lb, tg := w.arn(w.nlb("n")), w.arn(w.tg("t"))
				return func() error { _, err := w.listener(lb, tg, "TLS", 443); return err }
			}},
		{"network: a UDP listener made TCP", ActionModifyListener, ErrTooManyListeners,
			[]string{"may have 5 listeners in all", "5 are in use and this call would add 1"},
			func(w quotaWorld) func() error {
				w.must(w.lb("a", w.ports("TCP", 80, 81, 82)))
				w.must(w.elb("classic", 80))
				lb, tg := w.arn(w.nlb("n")), w.arn(w.tg("t"))
				w.arn(w.listener(lb, tg, "TCP", 80))
				udp := w.arn(w.listener(lb, tg, "UDP", 53))
				return func() error {
					_, err := w.c.ModifyListener(ctxAs("service-controller"), udp, func(l *NLBListener) { l.Protocol = "TCP" })
					return err
				}
			}},
		{"network: target groups", ActionCreateTargetGroup, ErrTooManyTargetGroups,
			[]string{"You've reached the limit on the number of target groups for your AWS account", "this lab allows 2 target groups (AWS's default quota per Region is 3,000)", "2 exist"},
			func(w quotaWorld) func() error {
				w.arn(w.tg("a"))
				w.arn(w.tg("b"))
				return func() error { _, err := w.tg("c"); return err }
			}},
		{"network: targets of a target group", ActionRegisterTargets, ErrTooManyTargets,
			[]string{"You've reached the limit on the number of targets", "this lab allows 2 targets per target group (AWS's default quota)", "'t' has 2 and this call would add 1"},
			func(w quotaWorld) func() error {
				ids := w.instances(3)
				tg := w.arn(w.tg("t"))
				w.must(w.c.RegisterTGTargets(ctxAs("service-controller"), tg, []TGTarget{{ID: ids[0]}, {ID: ids[1]}}))
				return func() error {
					// ids[1] again is no new target; ids[2] is.
					return w.c.RegisterTGTargets(ctxAs("service-controller"), tg, []TGTarget{{ID: ids[1]}, {ID: ids[2]}})
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := quotaWorld{t: t, c: newTestCloud(t, func(cfg *Config) { cfg.Quotas = tinyQuotas })}
			call := tc.setup(w)
			before := w.state()
			err := call()
			wantCode(t, err, tc.code, tc.action)
			for _, s := range append(tc.want, "docs/aws.md") {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not say %q", err, s)
				}
			}
			if got := lastCall(t, w.c); got.ErrorCode != tc.code || got.Action != tc.action {
				t.Errorf("call log: %s %s, want %s %s", got.Action, got.ErrorCode, tc.action, tc.code)
			}
			if after := w.state(); after != before {
				t.Errorf("a refused call changed the cloud:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// Within the quotas everything works: UDP listeners take no socket,
// AWS's idempotent creates still answer at the quota, and a freed slot is
// usable again.
func TestQuotasLeaveRoom(t *testing.T) {
	w := quotaWorld{t: t, c: newTestCloud(t, func(cfg *Config) { cfg.Quotas = tinyQuotas })}
	ctx := ctxAs("service-controller")
	w.must(w.lb("a", w.ports("TCP", 80, 81, 82)))
	w.must(w.lb("b", append(w.ports("TCP", 80, 81), w.ports("UDP", 53)...))) // 5 sockets: the quota
	if err := w.elb("c", 80); !IsCode(err, ErrTooManyLoadBalancers) {
		t.Fatalf("a sixth socket: %v", err)
	}
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"UDP listeners take no socket", func() error {
			_, err := w.c.SetListeners(ctx, "b", append(w.ports("TCP", 80), w.ports("UDP", 53, 54)...))
			return err
		}},
		{"the same listeners again", func() error {
			_, err := w.c.SetListeners(ctx, "a", w.ports("TCP", 80, 81, 82))
			return err
		}},
		{"a freed socket is usable again", func() error {
			if err := w.c.DeleteLoadBalancer(ctx, "b"); err != nil {
				return err
			}
			return w.elb("c", 80, 81)
		}},
		{"a Classic ELB created again at the quota is the same one", func() error {
			if err := w.c.DeleteLoadBalancer(ctx, "a"); err != nil {
				return err
			}
			w.must(w.elb("d", 80)) // two Classic ELBs: the quota
			return w.elb("c", 80, 81)
		}},
		{"a Network Load Balancer created again at the quota is the same one", func() error {
			a, err := w.nlb("n1")
			if err != nil {
				return err
			}
			w.arn(w.nlb("n2"))
			again, err := w.nlb("n1")
			if err == nil && again != a {
				err = fmt.Errorf("ARN %s, want %s", again, a)
			}
			return err
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			if err := step.do(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestQuotasConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quotas Quotas
		errHas string
		check  func(t *testing.T, q Quotas)
	}{
		{"zero takes the defaults", Quotas{}, "", func(t *testing.T, q Quotas) {
			if q != DefaultQuotas() {
				t.Errorf("quotas %+v, want %+v", q, DefaultQuotas())
			}
		}},
		{"a field set keeps its value", Quotas{ClassicLoadBalancers: 5}, "", func(t *testing.T, q Quotas) {
			if q.ClassicLoadBalancers != 5 || q.NetworkLoadBalancers != DefaultQuotas().NetworkLoadBalancers {
				t.Errorf("quotas %+v", q)
			}
		}},
		{"negative", Quotas{ListenerSockets: -1}, "quota ListenerSockets -1: must be between 1 and 1000000", nil},
		{"too large", Quotas{TargetsPerTargetGroup: 2_000_000}, "quota TargetsPerTargetGroup 2000000", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Quotas: tc.quotas})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tc.check(t, c.Config().Quotas)
		})
	}
}

// The defaults are AWS's documented default quotas, but for the two the
// shared machine needs lower (docs/aws.md).
func TestDefaultQuotasAreAWSs(t *testing.T) {
	q := DefaultQuotas()
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"Classic Load Balancers per Region", q.ClassicLoadBalancers, 20},
		{"Listeners per Classic Load Balancer", q.ClassicListenersPerELB, 100},
		{"Network Load Balancers per Region", q.NetworkLoadBalancers, 50},
		{"Listeners per Network Load Balancer", q.NetworkListenersPerLB, 50},
		{"Targets per target group per Region", q.TargetsPerTargetGroup, 1000},
		{"Target groups per Region (AWS 3,000)", q.TargetGroups, 200},
		{"listener sockets (no AWS quota)", q.ListenerSockets, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%d, want %d", tc.got, tc.want)
			}
		})
	}
}
