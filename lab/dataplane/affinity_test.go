package dataplane

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestSessionAffinity(t *testing.T) {
	svc := func(affinity v1.ServiceAffinity, timeout *int32) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.ServiceSpec{SessionAffinity: affinity}}
		if timeout != nil {
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: timeout}}
		}
		return s
	}
	cands := []endpoint{{IP: "10.244.1.2", Port: 80}, {IP: "10.244.2.2", Port: 80}, {IP: "10.244.3.2", Port: 80}}
	sp := &v1.ServicePort{Name: "http", Port: 80}
	for _, tc := range []struct {
		name    string
		svc     *v1.Service
		advance time.Duration
		same    bool
	}{
		{"none round-robins", svc(v1.ServiceAffinityNone, nil), 0, false},
		{"ClientIP sticks", svc(v1.ServiceAffinityClientIP, nil), time.Hour, true},
		{"ClientIP expires after its timeout", svc(v1.ServiceAffinityClientIP, ptr.To[int32](10)), 11 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
			a := newAffinityTable(clk)
			next := 0
			pick := func() int { next++; return (next - 1) % len(cands) }
			first := a.choose(tc.svc, sp, "10.244.9.9", cands, pick)
			clk.SetTime(clk.Now().Add(tc.advance))
			second := a.choose(tc.svc, sp, "10.244.9.9", cands, pick)
			if (first == second) != tc.same {
				t.Errorf("first %d, second %d; want same=%v", first, second, tc.same)
			}
			if other := a.choose(tc.svc, sp, "10.244.8.8", cands, pick); tc.same && other == first && next < 2 {
				t.Errorf("another client reused the first client's affinity")
			}
		})
	}
	t.Run("the table is bounded", func(t *testing.T) {
		a := newAffinityTable(testclock.NewFakePassiveClock(time.Unix(0, 0)))
		s := svc(v1.ServiceAffinityClientIP, nil)
		for i := range maxAffinities + 50 {
			a.choose(s, sp, "10.1."+itoa(int32(i/250))+"."+itoa(int32(i%250)), cands, func() int { return 0 })
		}
		if n := len(a.entries); n > maxAffinities {
			t.Errorf("%d entries, want at most %d", n, maxAffinities)
		}
	})
}
